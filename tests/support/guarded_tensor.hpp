// Tensors over guarded storage for the plugins' conformance tests: a view of any layout (permuted
// dims, padded rows, an offset, broadcast dims) in a buffer with canary bytes around and between
// its elements, so a test can tell that an operator wrote its output view and nothing else - or,
// with Layout::placement, flush against an inaccessible page, so that any access outside crashes.
// Element values are the plugin's business (its Tensor derives from this and encodes its dtypes);
// here are the layout, the raw element bytes and the canary check. Also the int arrays and the
// workspace the two-phase calls need.
#ifndef ACLNN_CPU_TESTS_SUPPORT_GUARDED_TENSOR_HPP_
#define ACLNN_CPU_TESTS_SUPPORT_GUARDED_TENSOR_HPP_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "acltest.hpp"
#include "guarded_pages.hpp"

namespace acltest {

inline size_t elemSize(aclDataType dt) {
    switch (dt) {
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
        case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
        case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: case ACL_COMPLEX32: return 4;
        case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
        case ACL_COMPLEX128: return 16;
        default: return 1;
    }
}

// Where a tensor's storage lives: in an ordinary buffer between canary bytes, or flush against an
// inaccessible page before it (PageStart) or after it (PageEnd), so that a read or write one byte
// outside the storage crashes the test (guarded_pages.hpp).
enum class Placement { Canaries, PageStart, PageEnd };

// How a view lies in its storage: order lists the dims from the outermost to the innermost in
// memory (empty = row-major); extra adds unused elements per dim (padded rows); offset is the view
// offset in elements; zeroStrideDims get stride 0 (broadcast, inputs only); placement: see above.
struct Layout {
    std::vector<int> order;
    std::vector<int64_t> extra;
    int64_t offset = 0;
    std::vector<int> zeroStrideDims = {};
    Placement placement = Placement::Canaries;
    bool contiguous() const { return order.empty() && extra.empty() && offset == 0 && zeroStrideDims.empty(); }
};

// The same layout with its storage placed as p.
inline Layout placed(Layout l, Placement p) {
    l.placement = p;
    return l;
}
// " at the start" / " at the end" (page placements, for test traces); "" for canaries.
inline const char *placementName(Placement p) {
    return p == Placement::PageStart ? " at the start" : p == Placement::PageEnd ? " at the end" : "";
}

class GuardedTensor {
public:
    static constexpr size_t kGuardBytes = 256;
    static constexpr unsigned char kCanary = 0xA5;

    GuardedTensor(aclDataType dt, std::vector<int64_t> dims, aclFormat fmt, const Layout &layout = {})
        : dt_(dt), dims_(std::move(dims)), esize_(elemSize(dt)) {
        const size_t r = dims_.size();
        strides_.assign(r, 0);
        std::vector<int> order = layout.order;
        if (order.empty()) {
            order.resize(r);
            std::iota(order.begin(), order.end(), 0);
        }
        int64_t step = 1;
        for (size_t k = r; k-- > 0;) {
            const int d = order[k];
            strides_[d] = step;
            step *= std::max<int64_t>(dims_[d] + (layout.extra.empty() ? 0 : layout.extra[d]), 1);
        }
        for (int d : layout.zeroStrideDims) strides_[d] = 0;
        offset_ = layout.offset;
        bool empty = false;
        int64_t maxIdx = offset_;
        for (size_t d = 0; d < r; ++d) {
            if (dims_[d] == 0) empty = true;
            else maxIdx += (dims_[d] - 1) * strides_[d];
        }
        storageElems_ = empty ? 0 : maxIdx + 1;
        const std::vector<int64_t> storageDims = layout.contiguous() ? dims_ : std::vector<int64_t>{storageElems_};
        const size_t storageBytes = static_cast<size_t>(storageElems_) * esize_;
        if (layout.placement == Placement::Canaries) {
            raw_.assign(2 * kGuardBytes + storageBytes + 64, kCanary);
            // The data pointer is 64-byte aligned (raw_ is never resized afterwards).
            const auto base = reinterpret_cast<uintptr_t>(raw_.data()) + kGuardBytes;
            data_ = raw_.data() + kGuardBytes + (64 - base % 64) % 64;
            region_ = raw_.data(), regionBytes_ = raw_.size();
        } else {  // the pages' other bytes are canaries; PageEnd's data may be unaligned
            pages_ = std::make_unique<GuardedPages>(std::max<size_t>(storageBytes, 1));
            region_ = static_cast<unsigned char *>(pages_->data()), regionBytes_ = pages_->bytes();
            if (region_) std::memset(region_, kCanary, regionBytes_);
            void *at = layout.placement == Placement::PageStart ? pages_->data() : pages_->end_flush(storageBytes);
            data_ = static_cast<unsigned char *>(at);
        }
        t_ = aclCreateTensor(dims_.data(), dims_.size(), dt_, strides_.data(), offset_, fmt, storageDims.data(),
                             storageDims.size(), data_);
    }
    ~GuardedTensor() {
        if (t_) aclDestroyTensor(t_);
    }
    GuardedTensor(const GuardedTensor &) = delete;
    GuardedTensor &operator=(const GuardedTensor &) = delete;

    aclTensor *get() const { return t_; }
    void *data() const { return data_; }
    const std::vector<int64_t> &dims() const { return dims_; }
    aclDataType dtype() const { return dt_; }
    size_t elementBytes() const { return esize_; }
    int64_t count() const { return numel(dims_); }
    int64_t storageElems() const { return storageElems_; }

    // Storage element index of the linear-th view element (row-major logical order).
    int64_t storageIndex(int64_t linear) const {
        int64_t idx = offset_;
        for (size_t d = dims_.size(); d-- > 0;) {
            idx += (linear % dims_[d]) * strides_[d];
            linear /= dims_[d];
        }
        return idx;
    }
    // Address of the linear-th view element.
    unsigned char *element(int64_t linear) const { return data_ + storageIndex(linear) * static_cast<int64_t>(esize_); }

    // Fill the view elements with a byte pattern (e.g. to detect "no write").
    void fillViewBytes(unsigned char byte) {
        for (int64_t i = 0; i < count(); ++i) std::memset(element(i), byte, esize_);
    }
    // Every byte outside the view (guards, gaps, padded rows) still holds the canary.
    bool canaryIntact(std::string *where = nullptr) const {
        std::vector<char> inView(regionBytes_, 0);
        const int64_t base = data_ - region_;
        for (int64_t i = 0; i < count(); ++i)
            for (size_t k = 0; k < esize_; ++k)
                inView[static_cast<size_t>(base + storageIndex(i) * static_cast<int64_t>(esize_)) + k] = 1;
        for (size_t k = 0; k < regionBytes_; ++k)
            if (!inView[k] && region_[k] != kCanary) {
                if (where) *where = "byte " + std::to_string(static_cast<int64_t>(k) - base) + " relative to data";
                return false;
            }
        return true;
    }
    std::vector<unsigned char> snapshot() const { return std::vector<unsigned char>(region_, region_ + regionBytes_); }
    bool sameBytes(const std::vector<unsigned char> &snap) const { return snap == snapshot(); }

private:
    aclDataType dt_;
    std::vector<int64_t> dims_;
    size_t esize_;
    std::vector<int64_t> strides_;
    int64_t offset_ = 0;
    int64_t storageElems_ = 0;
    std::vector<unsigned char> raw_;           // Placement::Canaries
    std::unique_ptr<GuardedPages> pages_;     // the page placements
    unsigned char *region_ = nullptr;         // the bytes canaryIntact() and snapshot() look at
    size_t regionBytes_ = 0;
    unsigned char *data_ = nullptr;
    aclTensor *t_ = nullptr;
};

// An aclIntArray for the call; nullopt passes NULL, an empty vector an empty array.
struct IntArray {
    aclIntArray *a = nullptr;
    IntArray() = default;
    explicit IntArray(const std::optional<std::vector<int64_t>> &v) {
        static const int64_t dummy = 0;
        if (v) a = aclCreateIntArray(v->empty() ? &dummy : v->data(), v->size());
    }
    ~IntArray() {
        if (a) aclDestroyIntArray(a);
    }
    IntArray(const IntArray &) = delete;
    IntArray &operator=(const IntArray &) = delete;
};

// A 64-byte aligned workspace of the size phase 1 asked for (NULL for 0). It starts as all-ones
// bytes, a NaN in every floating dtype, as a device's uncleared memory might: a kernel that reads
// scratch it did not write spreads them into its results, which every test then sees.
struct Workspace {
    std::vector<uint8_t> buf;
    void *ptr(uint64_t n) {
        if (n == 0) return nullptr;
        buf.assign(static_cast<size_t>(n) + 64, 0xff);
        const auto p = reinterpret_cast<uintptr_t>(buf.data());
        return buf.data() + (64 - p % 64) % 64;
    }
};

}  // namespace acltest

#endif  // ACLNN_CPU_TESTS_SUPPORT_GUARDED_TENSOR_HPP_
