// The storage a test tensor's data pointer points into: for a phase 1 alone a reservation no page of
// which is readable (a phase 1 that read data would crash; calls of any size cost no memory), for a
// phase 2 zeroed heap memory of exactly the storage's size (so the sanitizers see any access past it).
#ifndef ACLNN_CPU_TESTS_SUPPORT_RESERVED_STORAGE_HPP_
#define ACLNN_CPU_TESTS_SUPPORT_RESERVED_STORAGE_HPP_

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace acltest {

class Storage {
public:
    Storage(size_t bytes, bool real) : real_(real) {
        if (real) {
            heap_.assign(std::max<size_t>(bytes, 1), 0);
            ptr_ = heap_.data();
            return;
        }
        len_ = std::max<size_t>(bytes, 4096);
        ptr_ = ::mmap(nullptr, len_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (ptr_ == MAP_FAILED) ptr_ = nullptr, len_ = 0;
    }
    ~Storage() {
        if (!real_ && ptr_) ::munmap(ptr_, len_);
    }
    Storage(const Storage &) = delete;
    Storage &operator=(const Storage &) = delete;
    void *get() const { return ptr_; }

private:
    bool real_;
    std::vector<unsigned char> heap_;
    void *ptr_ = nullptr;
    size_t len_ = 0;
};

}  // namespace acltest

#endif  // ACLNN_CPU_TESTS_SUPPORT_RESERVED_STORAGE_HPP_
