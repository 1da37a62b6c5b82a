// The manifest's generic rules, enforced for every operator before its plugin plans, in CANN's
// order: NULL pointers (161001), then support on the product, dtypes, formats, ranks, attributes,
// cubeMathType (161002). Each failure names the parameter, the expected and the given value.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aclnn_cpu/dtype.hpp"
#include "aclnn_cpu/plugin.hpp"
#include "aclnn_cpu/opapi_abi.h"
#include "executor.hpp"
#include "objects.hpp"

namespace aclcpu {
namespace {

template <class T, class Name>
std::string join(const std::vector<T> &v, Name name) {
    std::string s;
    for (const auto &x : v) s += (s.empty() ? "" : ", ") + std::string(name(x));
    return s;
}
std::string num(int64_t v) { return std::to_string(v); }
std::string real_str(double v) {  // shortest form that reads back: 5, 0.25, 1e+300, nan
    char buf[32];
    for (int precision = 1; precision <= 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*g", precision, v);
        if (std::strtod(buf, nullptr) == v) break;
    }
    return buf;
}
// "1 or 2", "0, 1 or 2": a list of allowed values in a sentence.
std::string alternatives(const std::vector<int64_t> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + num(v[i]);
    return s;
}

// A tensor's elements in bytes, or -1 beyond 2^62: a broadcast view (stride 0) may declare more
// elements than memory holds, and a plan sizing a dense copy of it, plus a few such buffers,
// must stay inside 64 bits.
int64_t element_bytes(const acp_tensor_desc &t) {
    for (uint32_t d = 0; d < t.rank; ++d)
        if (t.dims[d] == 0) return 0;
    int64_t n = static_cast<int64_t>(acp::dtype_size(t.dtype));
    for (uint32_t d = 0; d < t.rank; ++d)
        if (__builtin_mul_overflow(n, t.dims[d], &n) || n > (int64_t{1} << 62)) return -1;
    return n;
}

// Whether two elements of a view (strides >= 0) share an address. Sorted by stride, the view is
// apart when each dim's stride exceeds the reach of the smaller ones; when that fails the
// offsets are compared one by one (views up to 2^20 elements; a larger one is taken as
// overlapping - such interleaved views are rare, and a wrong "apart" would make results depend on
// scheduling).
bool overlaps_itself(const acp_tensor_desc &t) {
    std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of the dims of size > 1
    for (uint32_t d = 0; d < t.rank; ++d)
        if (t.dims[d] > 1) dims.emplace_back(t.strides[d], t.dims[d]);
    std::sort(dims.begin(), dims.end());
    __int128 reach = 0;  // the largest offset of the smaller dims
    bool apart = true;
    for (const auto &[stride, size] : dims) {
        if (stride <= reach) apart = false;
        reach += static_cast<__int128>(stride) * (size - 1);
    }
    if (apart) return false;
    if (reach > INT64_MAX) return true;  // (no memory holds such a view)
    int64_t n = 1;
    for (const auto &d : dims)
        if (__builtin_mul_overflow(n, d.second, &n) || n > (int64_t{1} << 20)) return true;
    std::vector<int64_t> offsets{0};
    for (const auto &[stride, size] : dims) {
        const size_t m = offsets.size();
        for (int64_t i = 1; i < size; ++i)
            for (size_t k = 0; k < m; ++k) offsets.push_back(offsets[k] + i * stride);
    }
    std::sort(offsets.begin(), offsets.end());
    return std::adjacent_find(offsets.begin(), offsets.end()) != offsets.end();
}

const acp_arg &arg_named(const OpManifest &op, const std::vector<acp_arg> &args, const std::string &name) {
    return args[static_cast<size_t>(op.index_of(name))];
}

std::string product_label(const RuntimeState &s) { return s.product.name; }

void check_attr(const std::string &name, const acp_arg &a, const AttrRule &r, const RuntimeState &s, bool per_product) {
    if (!a.present) return;
    const bool is_array = a.kind == ACP_ARG_INT_ARRAY || a.kind == ACP_ARG_BOOL_ARRAY || a.kind == ACP_ARG_FLOAT_ARRAY;
    if (is_array && !r.lengths.empty() &&
        std::find(r.lengths.begin(), r.lengths.end(), static_cast<int64_t>(a.count)) == r.lengths.end())
        fail(ACLNN_ERR_PARAM_INVALID, name + " must have " + alternatives(r.lengths) + " elements, got " + num(static_cast<int64_t>(a.count)));
    // Integer values compare exactly; floating ones (float, double, float_array, scalar) as doubles,
    // where NaN is in no range and equals no value. Messages are formatted only on failure.
    const bool real = a.kind == ACP_ARG_FLOAT_ARRAY || a.kind == ACP_ARG_FLOAT || a.kind == ACP_ARG_SCALAR;
    const bool array = a.kind == ACP_ARG_INT_ARRAY || a.kind == ACP_ARG_FLOAT_ARRAY;
    uint64_t n = 0;
    if (array) n = a.count;
    else if (real || a.kind == ACP_ARG_INT || a.kind == ACP_ARG_BOOL) n = 1;
    const auto int_at = [&](uint64_t k) { return a.kind == ACP_ARG_INT_ARRAY ? a.ints[k] : a.i; };
    const auto real_at = [&](uint64_t k) { return a.kind == ACP_ARG_FLOAT_ARRAY ? a.floats[k] : a.f; };
    for (uint64_t k = 0; k < n; ++k) {
        const double v = real ? real_at(k) : 0.0;
        const int64_t iv = real ? 0 : int_at(k);
        const auto described = [&](const std::string &rule) {
            const std::string what = array ? name + "[" + num(static_cast<int64_t>(k)) + "]" : name;
            const std::string on = per_product ? " on " + product_label(s) : "";
            return what + " must " + rule + on + ", got " + (real ? real_str(v) : num(iv));
        };
        const bool in_range = !r.range || (real ? v >= static_cast<double>(r.range->first) && v <= static_cast<double>(r.range->second)
                                                : iv >= r.range->first && iv <= r.range->second);
        if (!in_range)
            fail(ACLNN_ERR_PARAM_INVALID, described("be in [" + num(r.range->first) + ", " + num(r.range->second) + "]"));
        const bool listed = r.values.empty() || std::any_of(r.values.begin(), r.values.end(), [&](int64_t x) {
                                return real ? v == static_cast<double>(x) : iv == x;
                            });
        if (!listed) fail(ACLNN_ERR_PARAM_INVALID, described("be one of " + join(r.values, num)));
    }
}

const char *cube_mode_name(int64_t m) {
    switch (m) {
        case 0: return "KEEP_DTYPE";
        case 1: return "ALLOW_FP32_DOWN_PRECISION";
        case 2: return "USE_FP16";
        case 3: return "USE_HF32";
        default: return "unknown";
    }
}

// The dtype the cube computes in: the one of `cube_math.input`, or of several the promotion CANN's
// convolution applies (GetUpperFloatDataType): DOUBLE if one is, else FLOAT if one is, else their
// common dtype, else (FLOAT16 with BF16) FLOAT. None when no listed tensor is present.
std::optional<int32_t> cube_dtype(const OpManifest &op, const std::vector<acp_arg> &args) {
    std::optional<int32_t> dt;
    for (const auto &name : op.cube_math->inputs) {
        const acp_arg &a = arg_named(op, args, name);
        if (!a.present) continue;
        const int32_t t = a.tensor->dtype;
        if (!dt || *dt == t) dt = t;
        else if (*dt == ACL_DOUBLE || t == ACL_DOUBLE) dt = ACL_DOUBLE;
        else dt = ACL_FLOAT;
    }
    return dt;
}

}  // namespace

bool selected(const OpManifest &op, const Param &p, const aclnnCpuCallArg *args) {
    if (p.required_if_mask.empty()) return true;
    if (p.required_if_index < 0) return args[static_cast<size_t>(op.index_of(p.required_if_mask))].i != 0;  // a bool
    const auto *mask = static_cast<const aclBoolArray *>(args[static_cast<size_t>(op.index_of(p.required_if_mask))].ptr);
    return mask && p.required_if_index < static_cast<int64_t>(mask->values.size()) &&
           mask->values[static_cast<size_t>(p.required_if_index)];
}

bool is_noop_call(const OpManifest &op, const aclnnCpuCallArg *args) {
    const auto all_false = [&](const std::string &name) {
        const auto *a = static_cast<const aclBoolArray *>(args[static_cast<size_t>(op.index_of(name))].ptr);
        return a && std::none_of(a->values.begin(), a->values.end(), [](bool v) { return v; });
    };
    if (std::any_of(op.noop_if_null.begin(), op.noop_if_null.end(),
                    [&](const std::string &name) { return !args[static_cast<size_t>(op.index_of(name))].ptr; }) ||
        std::any_of(op.noop_if_all_false.begin(), op.noop_if_all_false.end(), all_false))
        return true;
    for (const auto &name : op.noop_if_empty) {
        const auto *t = static_cast<const aclTensor *>(args[static_cast<size_t>(op.index_of(name))].ptr);
        if (!t) return false;
        if (std::count(t->dims.begin(), t->dims.end(), 0)) return true;  // (not numel(): the dims are unchecked yet)
    }
    return false;
}

void check_call_kinds(const OpManifest &op, const aclnnCpuCallArg *args) {
    for (size_t i = 0; i < op.params.size(); ++i) {
        const Param &p = op.params[i];
        if (args[i].kind != param_arg_kind(p.type))
            fail(ACLNN_ERR_INNER, "the entry point passes argument " + num(static_cast<int64_t>(i)) + " (" + p.name +
                                      ") as kind " + num(args[i].kind) + " but the manifest declares " +
                                      param_type_name(p.type) + " (kind " + num(param_arg_kind(p.type)) +
                                      "): the header was generated from a different manifest");
    }
}

void check_nulls(const OpManifest &op, const aclnnCpuCallArg *args) {
    auto check = [&](size_t i) {
        const Param &p = op.params[i];
        if (p.is_pointer() && !p.optional && !args[i].ptr && selected(op, p, args))
            fail(ACLNN_ERR_PARAM_NULLPTR, p.name + " must not be NULL" +
                                              (p.required_if_mask.empty() ? std::string() : " when " + p.required_if() + " is true"));
    };
    for (const auto &name : op.null_order) check(static_cast<size_t>(op.index_of(name)));
    for (const auto &e : op.early_checks) {
        const auto i = static_cast<size_t>(op.index_of(e.param));
        if (!args[i].ptr) continue;
        uint64_t n = 0;
        switch (args[i].kind) {
            case ACP_ARG_INT_ARRAY: n = static_cast<const aclIntArray *>(args[i].ptr)->values.size(); break;
            case ACP_ARG_BOOL_ARRAY: n = static_cast<const aclBoolArray *>(args[i].ptr)->values.size(); break;
            case ACP_ARG_FLOAT_ARRAY: n = static_cast<const aclFloatArray *>(args[i].ptr)->values.size(); break;
            default: continue;
        }
        if (std::find(e.lengths.begin(), e.lengths.end(), static_cast<int64_t>(n)) == e.lengths.end())
            fail(e.code, e.param + " must have " + alternatives(e.lengths) + " elements, got " + num(static_cast<int64_t>(n)));
    }
    for (size_t i = 0; i < op.params.size(); ++i) check(i);
}

int32_t enforce_manifest(const OpManifest &op, const RuntimeState &s, const std::vector<acp_arg> &args) {
    if (!op_enabled(s, op.name))
        fail(ACLNN_ERR_PARAM_INVALID, "aclnn" + op.name + " is disabled on " + product_label(s) + " (" + s.product.id +
                                          ") by the product profile or the aclInit config");
    const auto rules = op.rules_for(s.product.id);
    if (!rules) {
        std::vector<std::string> ids;
        for (const auto &kv : op.products) ids.push_back(kv.first);
        fail(ACLNN_ERR_PARAM_INVALID, "aclnn" + op.name + " is not supported on " + product_label(s) + " (" + s.product.id +
                                          "); supported products: " + join(ids, [](const std::string &x) { return x; }));
    }
    auto dname = [](int32_t d) { return acp::dtype_name(d); };
    auto fname = [](int32_t f) { return acp::format_name(f); };
    // dtypes, per product
    for (size_t i = 0; i < op.params.size(); ++i) {
        const Param &p = op.params[i];
        const acp_arg &a = args[i];
        if (p.type != ParamType::Tensor || !a.present) continue;
        const auto it = rules->dtypes.find(p.name);
        if (it == rules->dtypes.end()) continue;
        if (std::find(it->second.begin(), it->second.end(), a.tensor->dtype) == it->second.end())
            fail(ACLNN_ERR_PARAM_INVALID, p.name + " dtype " + std::string(dname(a.tensor->dtype)) + " is not supported on " +
                                              product_label(s) + " (supported: " + join(it->second, dname) + ")");
    }
    // CANN checks castability with the dtype lists, before same-dtype groups.
    for (const auto &[from, to] : op.castable) {
        const acp_arg &f = arg_named(op, args, from), &t = arg_named(op, args, to);
        if (f.present && t.present && !acp::can_cast(f.tensor->dtype, t.tensor->dtype))
            fail(ACLNN_ERR_PARAM_INVALID, to + " dtype " + std::string(dname(t.tensor->dtype)) + " is not a dtype " + from +
                                              " dtype " + std::string(dname(f.tensor->dtype)) + " can be cast to");
    }
    for (const auto &group : op.same_dtype) {
        const acp_arg *first = nullptr;
        std::string first_name;
        for (const auto &name : group) {
            const acp_arg &a = arg_named(op, args, name);
            if (!a.present) continue;
            if (!first) {
                first = &a;
                first_name = name;
            } else if (a.tensor->dtype != first->tensor->dtype) {
                fail(ACLNN_ERR_PARAM_INVALID, name + " dtype " + std::string(dname(a.tensor->dtype)) + " must equal " + first_name +
                                                  " dtype " + std::string(dname(first->tensor->dtype)));
            }
        }
    }
    // Formats then ranks, each in signature order so the first offending parameter is named.
    for (size_t i = 0; i < op.params.size(); ++i) {
        const Param &p = op.params[i];
        const acp_arg &a = args[i];
        const auto it = rules->formats.find(p.name);
        if (!a.present || it == rules->formats.end()) continue;
        if (std::find(it->second.begin(), it->second.end(), a.tensor->format) == it->second.end())
            fail(ACLNN_ERR_PARAM_INVALID, p.name + " format " + std::string(fname(a.tensor->format)) +
                                              " is not supported (supported: " + join(it->second, fname) + ")");
        // A layout that names its dimensions fixes the rank (NCL is 3-D, NCHW 4-D, NCDHW 5-D),
        // unless the operator treats it as a tag (format_fixes_rank: false, or a list without it).
        const int inherent = op.format_fixes_rank_of(p.name) ? acp::format_rank(a.tensor->format) : 0;
        if (inherent > 0 && static_cast<uint32_t>(inherent) != a.tensor->rank)
            fail(ACLNN_ERR_PARAM_INVALID, p.name + " format " + std::string(fname(a.tensor->format)) + " is for rank-" +
                                              num(inherent) + " tensors, got rank " + num(a.tensor->rank));
    }
    for (size_t i = 0; i < op.params.size(); ++i) {
        const Param &p = op.params[i];
        const acp_arg &a = args[i];
        const auto it = rules->ranks.find(p.name);
        if (!a.present || it == rules->ranks.end()) continue;
        if (std::find(it->second.begin(), it->second.end(), static_cast<int64_t>(a.tensor->rank)) == it->second.end()) {
            // A product's own rank list (3-D convolution is A2/A3 only) says whose rule it is.
            const auto common = op.common.ranks.find(p.name);
            const bool products_rule = common == op.common.ranks.end() || common->second != it->second;
            fail(ACLNN_ERR_PARAM_INVALID, p.name + " must have rank " + join(it->second, num) +
                                              (products_rule ? " on " + product_label(s) : std::string()) + ", got rank " +
                                              num(a.tensor->rank) + " " + acp::shape_str(a.tensor->dims, a.tensor->rank).str());
        }
    }
    for (size_t i = 0; i < op.params.size(); ++i) {
        const Param &p = op.params[i];
        const acp_arg &a = args[i];
        if (a.present && a.kind == ACP_ARG_TENSOR && element_bytes(*a.tensor) < 0)
            fail(ACLNN_ERR_PARAM_INVALID, p.name + " shape " + acp::shape_str(a.tensor->dims, a.tensor->rank).str() +
                                              " has more elements than 2^62 bytes hold");
    }
    // An output that overlaps itself would make results depend on scheduling. (An empty one has no
    // elements to overlap: any strides, as PyTorch's overlap check has it.)
    for (size_t i = 0; i < op.params.size(); ++i) {
        const Param &p = op.params[i];
        const acp_arg &a = args[i];
        if (!p.output || !a.present || acp::numel(*a.tensor) == 0) continue;
        for (uint32_t d = 0; d < a.tensor->rank; ++d)
            if (a.tensor->strides[d] == 0 && a.tensor->dims[d] > 1)
                fail(ACLNN_ERR_PARAM_INVALID, p.name + " is an output and must not overlap itself, got stride 0 on dim " +
                                                  num(d) + " of size " + num(a.tensor->dims[d]));
        if (overlaps_itself(*a.tensor))
            fail(ACLNN_ERR_PARAM_INVALID, p.name + " is an output and must not overlap itself, got shape " +
                                              acp::shape_str(a.tensor->dims, a.tensor->rank).str() + " with strides " +
                                              acp::shape_str(a.tensor->strides, a.tensor->rank).str());
    }
    for (size_t i = 0; i < op.params.size(); ++i) {  // attributes in signature order
        const Param &p = op.params[i];
        const auto it = rules->attrs.find(p.name);
        if (it == rules->attrs.end()) continue;
        const bool per_product = op.products.at(s.product.id).attrs.count(p.name) != 0;
        check_attr(p.name, args[i], it->second, s, per_product);
    }
    if (!op.cube_math) return ACP_PREC_NATIVE;
    const acp_arg &mode = arg_named(op, args, op.cube_math->param);
    const auto row = s.product.cube_math.find(static_cast<int>(mode.i));
    if (row == s.product.cube_math.end()) {
        std::vector<int64_t> known;
        for (const auto &kv : s.product.cube_math) known.push_back(kv.first);
        fail(ACLNN_ERR_PARAM_INVALID, op.cube_math->param + " must be one of " + join(known, num) + ", got " + num(mode.i));
    }
    const auto cube_dt = cube_dtype(op, args);
    if (!cube_dt) return ACP_PREC_NATIVE;
    const auto action_of = [&](int64_t m, const std::map<int32_t, CubeAction> &actions) {
        return cube_action(actions, m, *cube_dt, rules->cube_rejects);
    };
    switch (action_of(row->first, row->second)) {
        case CubeAction::Reject: {
            std::vector<int64_t> taken;  // the modes this product takes for the dtype: the expected values
            for (const auto &[m, actions] : s.product.cube_math)
                if (action_of(m, actions) != CubeAction::Reject) taken.push_back(m);
            const std::string dtype(dname(*cube_dt));
            const auto &in = op.cube_math->inputs;
            std::string whose = in[0];
            for (size_t i = 1; i < in.size(); ++i) whose += (i + 1 == in.size() ? " and " : ", ") + in[i];
            if (in.size() > 1) whose += " (promoted)";
            fail(ACLNN_ERR_PARAM_INVALID, op.cube_math->param + " " + num(mode.i) + " (" + cube_mode_name(mode.i) + ") with " +
                                              whose + " dtype " + dtype + " is not supported on " + product_label(s) +
                                              " (supported with " + dtype + ": " +
                                              (taken.empty() ? std::string("none") : join(taken, num)) + ")");
        }
        case CubeAction::Fp16: return *cube_dt == ACL_FLOAT ? ACP_PREC_FP16 : ACP_PREC_NATIVE;
        case CubeAction::Hf32: return *cube_dt == ACL_FLOAT ? ACP_PREC_HF32 : ACP_PREC_NATIVE;
        default: return ACP_PREC_NATIVE;
    }
}

}  // namespace aclcpu
