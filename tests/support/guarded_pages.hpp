// Memory between two inaccessible pages, for tests that an operator or kernel reads and writes
// nothing outside its tensors: a buffer placed flush against either guard page makes an access
// one byte outside it crash the test in every build (masked vector loads included, which the
// sanitizers do not see).
#ifndef ACLNN_CPU_TESTS_SUPPORT_GUARDED_PAGES_HPP_
#define ACLNN_CPU_TESTS_SUPPORT_GUARDED_PAGES_HPP_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>

namespace acltest {

class GuardedPages {
public:
    // At least `bytes` of read-write memory (whole pages) with a PROT_NONE page either side.
    explicit GuardedPages(size_t bytes) : page_(static_cast<size_t>(::sysconf(_SC_PAGESIZE))) {
        bytes_ = (bytes + page_ - 1) / page_ * page_;
        void *m = ::mmap(nullptr, bytes_ + 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        base_ = m == MAP_FAILED ? nullptr : static_cast<unsigned char *>(m);
        if (base_ && (::mprotect(base_, page_, PROT_NONE) != 0 || ::mprotect(base_ + page_ + bytes_, page_, PROT_NONE) != 0)) {
            ::munmap(base_, bytes_ + 2 * page_);
            base_ = nullptr;
        }
    }
    ~GuardedPages() {
        if (base_) ::munmap(base_, bytes_ + 2 * page_);
    }
    GuardedPages(const GuardedPages &) = delete;
    GuardedPages &operator=(const GuardedPages &) = delete;

    // The first byte after the leading guard page (nullptr when the mapping failed).
    void *data() const { return base_ ? base_ + page_ : nullptr; }
    // Where n bytes end at the trailing guard page.
    void *end_flush(size_t n) const { return base_ && n <= bytes_ ? base_ + page_ + bytes_ - n : nullptr; }
    // n bytes of src copied flush against the leading (at_end false) or trailing guard; their address.
    void *place(const void *src, size_t n, bool at_end) const {
        void *p = at_end ? end_flush(n) : data();
        if (p && n) std::memcpy(p, src, n);
        return p;
    }
    size_t page() const { return page_; }
    size_t bytes() const { return base_ ? bytes_ : 0; }  // between the guards

private:
    size_t page_, bytes_ = 0;
    unsigned char *base_ = nullptr;
};

}  // namespace acltest

#endif  // ACLNN_CPU_TESTS_SUPPORT_GUARDED_PAGES_HPP_
