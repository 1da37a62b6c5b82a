// aclnn-cpu: C++ conveniences for plugin authors, compiled into the plugin (header-only).
// Exceptions stay inside the plugin: guard() turns them into a status and a message for the core.
#ifndef ACLNN_CPU_PLUGIN_HPP_
#define ACLNN_CPU_PLUGIN_HPP_

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/plugin_abi.h"

namespace acp {

inline constexpr acp_status kNullptr = 161001;
inline constexpr acp_status kInvalid = 161002;
inline constexpr acp_status kRuntime = 361001;
inline constexpr acp_status kInner = 561000;

// Thrown by plan code to reject a call; guard() reports it through the host.
struct Rejection {
    acp_status code;
    std::string message;
};

template <class... Parts>
std::string cat(Parts &&...parts) {
    std::ostringstream os;
    (os << ... << std::forward<Parts>(parts));
    return os.str();
}

[[noreturn]] inline void reject(acp_status code, std::string message) { throw Rejection{code, std::move(message)}; }
// require(ok, code, "x must be ", n, ", got ", shape_str(t)): the parts are streamed into the message
// only when the check fails, so a passing check costs no formatting (phase 1 runs on every call).
template <class... Parts>
inline void require(bool ok, acp_status code, const Parts &...parts) {
    if (!ok) [[unlikely]]
        reject(code, cat(parts...));
}

// Runs plan code; a Rejection or any exception becomes host->reject(). Never throws.
template <class F>
acp_status guard(const acp_plan_ctx *ctx, F &&body) noexcept {
    try {
        return body();
    } catch (const Rejection &r) {
        return ctx->host->reject(ctx->plan, r.code, r.message.c_str());
    } catch (const std::bad_alloc &) {
        return ctx->host->reject(ctx->plan, kInner, "out of host memory while planning");
    } catch (const std::exception &e) {
        return ctx->host->reject(ctx->plan, kInner, e.what());
    } catch (...) {
        return ctx->host->reject(ctx->plan, kInner, "unknown exception while planning");
    }
}

// Runs node code; exceptions become host->fail(). Never throws.
template <class F>
acp_status guard_run(const acp_run_ctx *run, const acp_host_api *host, F &&body) noexcept {
    try {
        return body();
    } catch (const Rejection &r) {
        return host->fail(run, r.code, r.message.c_str());
    } catch (const std::exception &e) {
        return host->fail(run, kInner, e.what());
    } catch (...) {
        return host->fail(run, kInner, "unknown exception while running");
    }
}

// Whether the product is Atlas A2 or A3 (CANN's DAV_2201 architecture), where several operators'
// CANN code takes another route than on the other products.
inline bool is_a2_or_a3(const acp_plan_ctx *ctx) {
    const std::string_view p = ctx->product_id ? ctx->product_id : "";
    return p == "atlas-a2" || p == "atlas-a3";
}

// The scheduling hint of plugin_abi.h (ABI 1.1): when several nodes are ready, higher priorities
// start first. On a core older than 1.1 (a host API without the entry) it does nothing.
inline void set_node_priority(const acp_plan_ctx *ctx, int32_t node, uint32_t priority) {
    const acp_host_api *h = ctx->host;
    if (h->struct_size >= offsetof(acp_host_api, set_node_priority) + sizeof h->set_node_priority && h->set_node_priority)
        h->set_node_priority(ctx->plan, node, priority);
}

// Whether host->log() at `level` would write (ABI 1.2). On an older core, which cannot say, true:
// the message is formatted and the core decides, as before.
inline bool log_enabled(const acp_plan_ctx *ctx, acp_log_level level) {
    const acp_host_api *h = ctx->host;
    if (h->struct_size >= offsetof(acp_host_api, log_enabled) + sizeof h->log_enabled && h->log_enabled)
        return h->log_enabled(ctx->plan, level) != 0;
    return true;
}
// log(ctx, ACP_LOG_DEBUG, "node ", id, " after ", deps): the parts are streamed into the message
// only when the core would write it.
template <class... Parts>
inline void log(const acp_plan_ctx *ctx, acp_log_level level, const Parts &...parts) {
    if (log_enabled(ctx, level)) ctx->host->log(ctx->plan, level, cat(parts...).c_str());
}

// Typed access to plan arguments by signature index.
struct Args {
    const acp_plan_ctx *ctx;
    const acp_arg &at(uint32_t i) const {
        if (i >= ctx->n_args) reject(kInner, cat("argument index ", i, " out of range"));
        return ctx->args[i];
    }
    const acp_tensor_desc *tensor(uint32_t i) const { return at(i).present ? at(i).tensor : nullptr; }
    std::vector<int64_t> ints(uint32_t i) const {
        const acp_arg &a = at(i);
        return a.present ? std::vector<int64_t>(a.ints, a.ints + a.count) : std::vector<int64_t>{};
    }
    std::vector<bool> bools(uint32_t i) const {
        const acp_arg &a = at(i);
        std::vector<bool> v;
        if (a.present)
            for (uint64_t k = 0; k < a.count; ++k) v.push_back(a.bools[k] != 0);
        return v;
    }
    bool present(uint32_t i) const { return at(i).present != 0; }
    int64_t integer(uint32_t i) const { return at(i).i; }
    bool boolean(uint32_t i) const { return at(i).i != 0; }
    double real(uint32_t i) const { return at(i).f; }
};

inline std::vector<int64_t> dims_of(const acp_tensor_desc &t) { return {t.dims, t.dims + t.rank}; }
inline std::vector<int64_t> strides_of(const acp_tensor_desc &t) { return {t.strides, t.strides + t.rank}; }
inline int64_t numel(const acp_tensor_desc &t) {
    int64_t n = 1;
    for (uint32_t d = 0; d < t.rank; ++d) n *= t.dims[d];
    return n;
}
// A shape or int list as "[2,3,4]", formatted only when streamed or converted to a string. It holds
// its own copy of the values (inline up to kInline, so passing checks do not allocate), so it never
// refers to a temporary it was made from.
class ShapeText {
public:
    ShapeText(const int64_t *d, uint64_t n) : n_(n) {
        if (n <= kInline) {
            for (uint64_t i = 0; i < n; ++i) inline_[i] = d[i];
        } else {
            heap_.assign(d, d + n);
        }
    }
    const int64_t *data() const { return n_ <= kInline ? inline_ : heap_.data(); }
    uint64_t size() const { return n_; }
    std::string str() const {
        std::string s = "[";
        for (uint64_t i = 0; i < n_; ++i) s += (i ? "," : "") + std::to_string(data()[i]);
        return s + "]";
    }
    operator std::string() const { return str(); }  // NOLINT: a drop-in for the string it once was
    friend std::ostream &operator<<(std::ostream &os, const ShapeText &t) { return os << t.str(); }

private:
    static constexpr uint64_t kInline = 8;  // aclnn tensors have at most 8 dims
    uint64_t n_;
    int64_t inline_[kInline] = {};
    std::vector<int64_t> heap_;
};
inline ShapeText shape_str(const int64_t *d, uint64_t n) { return {d, n}; }
inline ShapeText shape_str(const std::vector<int64_t> &v) { return {v.data(), v.size()}; }
inline ShapeText shape_str(const acp_tensor_desc &t) { return {t.dims, t.rank}; }

// True when the view is dense row-major (strides of size-1 dims ignored).
inline bool is_contiguous(const acp_tensor_desc &t) {
    int64_t expect = 1;
    for (int d = static_cast<int>(t.rank) - 1; d >= 0; --d) {
        if (t.dims[d] != 1 && t.strides[d] != expect) return false;
        expect *= t.dims[d];
    }
    return true;
}

}  // namespace acp

#endif  // ACLNN_CPU_PLUGIN_HPP_
