// Phase-1 checks of ConvolutionBackward and Convolution. The core already enforced, in CANN's order:
// the NULL checks (outputMask's length with 161001 among them, an output only when its mask bit is
// set), dtypes per product and one dtype for all tensors, formats, ranks, the value ranges of
// stride / padding / dilation / groups, and cubeMathType. What follows is CANN's remaining order.
#include "conv_checks.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace conv {

namespace {

using acp::cat;
using acp::kInvalid;
using acp::require;
using acp::shape_str;
using I128 = __int128;

constexpr int32_t kFormatNd = 2;

// CANN accepts ND only as the 3-D (NCL) layout; NCL/NCHW/NCDHW already fix their rank (core).
void nd_is_ncl(const acp_tensor_desc *t, const char *name) {
    if (t && t->format == kFormatNd && t->rank != 3)
        acp::reject(kInvalid, cat(name, " format ND is accepted for rank-3 (NCL) tensors only, got rank ", t->rank,
                                  " ", shape_str(*t), "; use NCHW or NCDHW"));
}

// outputPadding: >= 0 when transposed, all 0 otherwise (CheckConvParams, after stride/padding/
// dilation, which the manifest's ranges checked).
void check_output_padding_values(const std::vector<int64_t> &op, bool transposed, const char *name) {
    for (size_t i = 0; i < op.size(); ++i) {
        if (transposed)
            require(op[i] >= 0, kInvalid, name, "[", i, "] must be >= 0 when transposed is true, got ", op[i]);
        else
            require(op[i] == 0, kInvalid, name, " must be all 0 when transposed is false, got ", shape_str(op));
    }
}

struct Attrs {
    std::array<int64_t, 3> stride{1, 1, 1}, dil{1, 1, 1}, pl{0, 0, 0}, pr{0, 0, 0}, op{0, 0, 0};
};

// Attribute lengths against the rank (CheckConvShape's order: stride, dilation, padding,
// outputPadding). 2-D padding may have 4 elements: [top, bottom, left, right]; the forward's
// non-transposed 1-D padding may have 2, [left, right] (`pad_pair_1d`).
Attrs parse_lengths(const std::vector<int64_t> &stride, const std::vector<int64_t> &padding,
                    const std::vector<int64_t> &dilation, const std::vector<int64_t> &op, uint32_t rank, bool transposed,
                    const char *input_name, bool pad_pair_1d = false) {
    const size_t sd = rank - 2;
    auto need = [&](const std::vector<int64_t> &v, const char *name, bool pairs_ok) {
        const size_t pairs = pairs_ok && (sd == 2 || (sd == 1 && pad_pair_1d)) ? 2 * sd : sd;
        if (v.size() != sd && v.size() != pairs)
            acp::reject(kInvalid, cat(name, " must have ", sd, pairs != sd ? cat(" or ", pairs) : std::string(), " elements (",
                                      input_name, " rank ", rank, " minus 2), got ", v.size(), " ", shape_str(v)));
    };
    need(stride, "stride", false);
    need(dilation, "dilation", false);
    need(padding, "padding", true);
    need(op, "outputPadding", !pad_pair_1d);
    require(!(transposed && op.size() == 4), kInvalid,
            "outputPadding of a transposed 2-D convolution must have 2 elements (one per spatial dim), got ",
            shape_str(op));
    Attrs a;
    for (size_t i = 0; i < sd; ++i) {
        a.stride[i] = stride[i];
        a.dil[i] = dilation[i];
        if (padding.size() == 2 * sd && sd > 0 && padding.size() != sd) {
            a.pl[i] = padding[2 * i];
            a.pr[i] = padding[2 * i + 1];
        } else {
            a.pl[i] = a.pr[i] = padding[i];
        }
        a.op[i] = op.size() == sd ? op[i] : 0;
    }
    if (transposed)
        for (size_t i = 0; i < sd; ++i)
            require(a.op[i] < a.stride[i] || a.op[i] < a.dil[i], kInvalid,
                    "outputPadding[", i, "] must be smaller than stride[", i, "] or dilation[", i, "] (",
                    a.stride[i], ", ", a.dil[i], "), got ", a.op[i]);
    return a;
}

I128 dilated(int64_t k, int64_t d) { return static_cast<I128>(d) * (k - 1) + 1; }

// A transposed convolution's output channels, weight dim 1 times groups (the dims are not bounded yet).
int64_t transposed_channels(const acp_tensor_desc &w, int64_t groups) {
    const I128 c = static_cast<I128>(w.dims[1]) * groups;
    require(c <= INT64_MAX, kInvalid, "weight dim 1 (", w.dims[1], ") times groups (", groups, ") must fit in int64");
    return static_cast<int64_t>(c);
}

// ConvolutionBackward's documented ranges for a non-transposed convolution (its operator page gives
// them for A2; they are the cube's, and are applied on every product): dilation and the kernel's H
// and W (L in 1-D) in [1, 255], padding in [0, 255] (3-D: but for depth), stride in [1, 2147483646]
// (3-D: H and W in [1, 63]). The dilation's range holds for transposed convolutions too.
void check_documented_ranges(const Attrs &a, const acp_tensor_desc &w, bool transposed) {
    const size_t sd = w.rank - 2;
    // (the name in three parts, e.g. "stride[", i, "]", put together only for a message)
    const auto range = [&](int64_t v, int64_t lo, int64_t hi, const char *name, size_t i, const char *name_end) {
        require(v >= lo && v <= hi, kInvalid,
                name, i, name_end, " must be in [", lo, ", ", hi, "] for a", transposed ? " transposed " : " non-transposed ", sd,
                "-D convolution (CANN's documented range), got ", v);
    };
    for (size_t i = 0; i < sd; ++i) range(a.dil[i], 1, 255, "dilation[", i, "]");
    if (transposed) return;
    for (size_t i = 0; i < sd; ++i) {
        const bool depth = sd == 3 && i == 0;
        const int64_t stride_max = sd == 3 && !depth ? 63 : 2147483646, pad_max = depth ? 2147483646 : 255;
        range(a.stride[i], 1, stride_max, "stride[", i, "]");
        range(a.pl[i], 0, pad_max, "padding before spatial dim ", i, "");
        range(a.pr[i], 0, pad_max, "padding after spatial dim ", i, "");
        if (!depth) range(w.dims[i + 2], 0, 255, "weight spatial dim ", i, "");
    }
}

// What oneDNN represents (measured, 2.7): per spatial dim the padded input and a stride plus either
// padding below 2^31; beyond, its primitives are not created. And a dilation of at most 10^6: the
// time to create its 1-D and 3-D primitives grows with it (12 s at 10^7).
void check_engine_limits(const acp_tensor_desc &x, const Attrs &a, bool transposed) {
    if (transposed) return;
    for (size_t i = 0; i + 2 < x.rank; ++i) {
        require(a.dil[i] <= 1000000, kInvalid, "dilation[", i, "] must be <= 1000000 for this CPU library's engine, got ", a.dil[i]);
        const I128 padded = static_cast<I128>(x.dims[i + 2]) + a.pl[i] + a.pr[i];
        const I128 reach = static_cast<I128>(a.stride[i]) + std::max(a.pl[i], a.pr[i]);
        require(padded <= INT32_MAX && reach <= INT32_MAX, kInvalid,
                "spatial dim ", i, ": input size plus padding (", static_cast<int64_t>(padded), ") and stride plus padding (",
                static_cast<int64_t>(reach), ") must stay below 2^31 for this CPU library's engine");
    }
}

void require_shape(const acp_tensor_desc *t, const char *name, const acp_tensor_desc &like, const char *like_name) {
    if (!t) return;
    require(acp::dims_of(*t) == acp::dims_of(like), kInvalid,
            name, " shape ", shape_str(*t), " must equal ", like_name, " shape ", shape_str(like));
}

// Channels and groups (CheckConvChannelAndGroup), in the roles of the plain convolution:
// x_name/x = the convolution's input side, y = its output side.
void check_channels(const acp_tensor_desc &x, const char *x_name, const acp_tensor_desc &y, const char *y_name,
                    const acp_tensor_desc &w, int64_t groups) {
    require(y.dims[1] == w.dims[0], kInvalid,
            y_name, " channels (dim 1) must equal weight dim 0: ", y.dims[1], " vs ", w.dims[0]);
    require(w.dims[1] != 0 && x.dims[1] % w.dims[1] == 0, kInvalid,
            x_name, " channels ", x.dims[1], " must be a multiple of weight dim 1 (", w.dims[1], ")");
    require(x.dims[1] / w.dims[1] == groups, kInvalid,
            x_name, " channels ", x.dims[1], " must equal weight dim 1 (", w.dims[1], ") times groups (", groups,
            ")");
    // CANN tests this for depthwise only; a partial group of output channels is never valid.
    require(y.dims[1] >= groups && y.dims[1] % groups == 0, kInvalid,
            y_name, " channels ", y.dims[1], " must be a multiple of groups (", groups, ")");
}

// The plain-convolution output size along one axis; -1 when the dilated kernel does not fit.
int64_t conv_out(int64_t in, const Attrs &a, const std::array<int64_t, 3> &k, size_t i) {
    const I128 avail = static_cast<I128>(in) + a.pl[i] + a.pr[i] - dilated(k[i], a.dil[i]);
    if (avail < 0) return -1;
    return static_cast<int64_t>(avail / a.stride[i] + 1);
}

bool unreachable(const Geometry &g) {
    for (int i = 0; i < g.sd; ++i)
        if (g.src_used[static_cast<size_t>(i)] == 0) return true;
    return false;
}

// Spatial sizes. Non-transposed: y = conv_out(x). Transposed: gradOutput (y) is the transposed
// output of input (x): y = (x-1)*stride - padL - padR + dilation*(k-1) + 1 + outputPadding, and with
// `slack` (the backward) up to stride - 1 more: CANN's backward checks y by the floor division of
// the convolution that maps it back onto x (convolution_backward_checker.cpp, GetExpectNum), and
// its kernels read all of y - the extra rows are an implicit outputPadding.
Geometry geometry(const acp_tensor_desc &x, const char *x_name, const acp_tensor_desc &y, const char *y_name,
                  const acp_tensor_desc &w, int64_t groups, const Attrs &a, bool transposed, bool slack) {
    const uint32_t r = x.rank;
    const size_t sd = r - 2;
    Geometry g;
    g.sd = static_cast<int>(sd);
    g.G = groups;
    for (size_t i = 0; i < sd; ++i) g.k[i] = w.dims[i + 2];
    // Both sides share the batch.
    require(x.dims[0] == y.dims[0], kInvalid,
            y_name, " batch (dim 0) must equal ", x_name, " batch: ", y.dims[0], " vs ", x.dims[0]);
    if (!transposed) {
        std::vector<int64_t> expect = acp::dims_of(y);
        for (size_t i = 0; i < sd; ++i) {
            const int64_t o = conv_out(x.dims[i + 2], a, g.k, i);
            require(o >= 1, kInvalid,
                    x_name, " spatial dim ", i, " (", x.dims[i + 2], ") plus padding (", a.pl[i], "+", a.pr[i],
                    ") must be >= the dilated kernel (dilation ", a.dil[i], " * (", g.k[i], " - 1) + 1)");
            expect[i + 2] = o;
        }
        require(acp::dims_of(y) == expect, kInvalid,
                y_name, " shape ", shape_str(y), " must be ", shape_str(expect), " (the convolution of ", x_name,
                " ", shape_str(x), ")");
        g.N = x.dims[0];
        g.IC = x.dims[1];
        g.OC = y.dims[1];
        for (size_t i = 0; i < sd; ++i) g.src[i] = g.src_used[i] = x.dims[i + 2], g.dst[i] = y.dims[i + 2];
    } else {
        // x = input (the transposed conv's input), y = gradOutput (its output)
        std::vector<int64_t> expect = acp::dims_of(y);
        for (size_t i = 0; i < sd; ++i) {
            const I128 o = static_cast<I128>(x.dims[i + 2] - 1) * a.stride[i] - a.pl[i] - a.pr[i] +
                           dilated(g.k[i], a.dil[i]) + a.op[i];
            require(o >= 1 && o <= INT64_MAX, kInvalid,
                    "the transposed output size along spatial dim ", i, " is ", static_cast<int64_t>(o),
                    " for ", x_name, " size ", x.dims[i + 2], ", stride ", a.stride[i], ", padding ", a.pl[i], "+",
                    a.pr[i], ", dilation ", a.dil[i], ", kernel ", g.k[i], ", outputPadding ", a.op[i],
                    "; it must be >= 1");
            expect[i + 2] = static_cast<int64_t>(o);
        }
        bool fits = true;
        for (size_t i = 0; i < sd; ++i) {
            const I128 lo = expect[i + 2], hi = lo + (slack ? a.stride[i] - 1 : 0), got = y.dims[i + 2];
            fits = fits && got >= lo && got <= hi;
        }
        require(fits, kInvalid,
                y_name, " shape ", shape_str(y), " must be ", shape_str(expect), " (the transposed convolution of ",
                x_name, " ", shape_str(x), ")", slack ? ", each spatial size up to stride - 1 larger" : "");
        // The plain convolution it mirrors: src = y (gradOutput), dst = x (input).
        g.N = x.dims[0];
        g.IC = y.dims[1];
        g.OC = x.dims[1];
        // The last window ends at (x-1)*stride - padL + dilated kernel: rows of y past it (outputPadding
        // beyond padR) receive nothing; the mirrored convolution reads y up to there, with the right
        // padding that makes its output size x exactly.
        for (size_t i = 0; i < sd; ++i) {
            g.src[i] = y.dims[i + 2];
            g.dst[i] = x.dims[i + 2];
            // Where the last window ends before y's first row (padding and outputPadding alone make y),
            // no row is used: Problem::unreachable, no pass runs.
            const I128 reach = static_cast<I128>(g.dst[i] - 1) * a.stride[i] - a.pl[i] + dilated(g.k[i], a.dil[i]);
            g.src_used[i] = reach < 1 ? 0 : std::min<int64_t>(g.src[i], static_cast<int64_t>(reach));
            g.stride[i] = a.stride[i];
            g.dil[i] = a.dil[i];
            g.pad_l[i] = a.pl[i];
            g.pad_r[i] = reach < 1 ? 0 : static_cast<int64_t>(reach) - g.src_used[i];
        }
        return g;
    }
    for (size_t i = 0; i < sd; ++i) {
        g.stride[i] = a.stride[i];
        g.dil[i] = a.dil[i];
        g.pad_l[i] = a.pl[i];
        g.pad_r[i] = a.pr[i];
    }
    return g;
}

// The empty path's gradOutput shape: the batch of input, the output channels of weight, and each
// spatial size the forward (or, transposed, the transposed) size formula gives where input and
// weight have that extent (a zero-sized kernel or transposed input dim leaves gradOutput's own).
void check_empty_shapes(const acp_tensor_desc &go, const acp_tensor_desc &in, const acp_tensor_desc &w, int64_t groups,
                        const Attrs &a, bool transposed) {
    std::vector<int64_t> expect = acp::dims_of(go);
    std::vector<int64_t> slack(go.rank, 0);  // transposed: up to stride - 1 more, as geometry()
    expect[0] = in.dims[0];
    expect[1] = transposed ? transposed_channels(w, groups) : w.dims[0];
    std::array<int64_t, 3> k{1, 1, 1};
    for (uint32_t i = 2; i < w.rank; ++i) k[i - 2] = w.dims[i];
    for (size_t i = 0; i + 2 < in.rank; ++i) {
        if (k[i] == 0) continue;
        if (!transposed) {
            const int64_t o = conv_out(in.dims[i + 2], a, k, i);
            if (o >= 1) expect[i + 2] = o;
        } else if (in.dims[i + 2] > 0) {
            const I128 o = static_cast<I128>(in.dims[i + 2] - 1) * a.stride[i] - a.pl[i] - a.pr[i] + dilated(k[i], a.dil[i]) + a.op[i];
            if (o >= 1 && o <= INT64_MAX) expect[i + 2] = static_cast<int64_t>(o), slack[i + 2] = a.stride[i] - 1;
        }
    }
    bool fits = true;
    for (uint32_t d = 0; d < go.rank; ++d)
        fits = fits && go.dims[d] >= expect[d] && static_cast<I128>(go.dims[d]) <= static_cast<I128>(expect[d]) + slack[d];
    require(fits, kInvalid,
            "gradOutput shape ", shape_str(go), " must be ", shape_str(expect), " (input ", shape_str(in), ", weight ",
            shape_str(w), transposed ? ", transposed: each spatial size up to stride - 1 larger)" : ")");
}

// ---- the forward companion (hicann/ops-nn aclnn_convolution.cpp, its operator page) ----


// Convolution's tensor arguments by index, for messages.
constexpr const char *kForwardNames[] = {"input", "weight", "bias", "", "", "", "", "", "", "output"};

bool product_is(const acp::Args &a, const char *id) {
    return a.ctx->product_id && std::string(a.ctx->product_id) == id;
}

// Channels and groups as CANN's forward checks them (CheckChannelAndGroups, CheckEmptyTensor).
void check_forward_channels(const acp_tensor_desc &in, const acp_tensor_desc &w, int64_t groups, bool transposed) {
    if (transposed)
        require(w.dims[0] == in.dims[1], kInvalid, "weight dim 0 (", w.dims[0], ") must equal input channels (", in.dims[1],
                ") when transposed is true");
    else
        require(static_cast<I128>(w.dims[1]) * groups == in.dims[1], kInvalid, "input channels (", in.dims[1],
                ") must equal weight dim 1 (", w.dims[1], ") times groups (", groups, ")");
    require(w.dims[0] % groups == 0, kInvalid, "weight dim 0 (", w.dims[0], ") must be a multiple of groups (", groups, ")");
    require(!transposed || in.dims[1] != 0, kInvalid, "input channels must be > 0 when transposed is true, got input ",
            shape_str(in));
}

// A transposed convolution runs as the data gradient of a plain one, padded by dilation * (k - 1) -
// padding; Ascend's binary takes at most 255 there, and for 3-D at least 0 (padBinaryValid). CANN
// reads the last two kernel dims against the attributes' elements as given: padding[1] of a 4-element
// 2-D padding is its bottom, not its left (a CANN quirk, kept).
void check_transposed_pad_reach(const acp_tensor_desc &w, const std::vector<int64_t> &padding,
                                const std::vector<int64_t> &dilation) {
    const uint32_t r = w.rank;
    const auto reach = [&](uint32_t kdim, size_t i, bool nonnegative) {
        const size_t di = dilation.size() == 1 ? 0 : i, pi = padding.size() == 1 ? 0 : i;
        const I128 v = static_cast<I128>(w.dims[kdim] - 1) * dilation[di] - padding[pi];
        require(v <= 255 && (!nonnegative || v >= 0), kInvalid, "(weight dim ", kdim, " - 1) * dilation[", di, "] - padding[", pi,
                "] must be ", nonnegative ? "in [0, 255]" : "<= 255", " for a transposed ", r - 2,
                "-D convolution (the padding of CANN's data-gradient binary), got ", static_cast<int64_t>(v));
    };
    if (r == 3) reach(2, 1, false);
    if (r == 4) reach(3, 1, false), reach(2, 0, false);
    if (r == 5) reach(4, 2, true), reach(3, 1, true);
}

// The output shape CANN infers (ConvEngine::InferShape: C++ integer division, so an empty input's
// spatial size may give 0).
void check_forward_output(const acp_tensor_desc &in, const acp_tensor_desc &w, const acp_tensor_desc &out, int64_t cout,
                          const Attrs &a, bool transposed) {
    std::vector<int64_t> expect{in.dims[0], cout};
    for (uint32_t d = 2; d < in.rank; ++d) {
        const size_t i = d - 2;
        const I128 o = transposed ? static_cast<I128>(in.dims[d] - 1) * a.stride[i] - a.pl[i] - a.pr[i] +
                                        (dilated(w.dims[d], a.dil[i]) - 1) + a.op[i] + 1
                                  : (static_cast<I128>(in.dims[d]) + a.pl[i] + a.pr[i] - dilated(w.dims[d], a.dil[i])) /
                                            a.stride[i] + 1;
        require(o >= 0 && o <= INT64_MAX, kInvalid, "the output size along spatial dim ", i, " is ",
                o < 0 ? std::to_string(static_cast<int64_t>(o)) : std::string("beyond 2^63"), " for input size ", in.dims[d],
                ", stride ", a.stride[i], ", padding ", a.pl[i], "+", a.pr[i], ", dilation ", a.dil[i], ", kernel ", w.dims[d],
                transposed ? cat(", outputPadding ", a.op[i]) : std::string(), "; it must be >= 0");
        expect.push_back(static_cast<int64_t>(o));
    }
    require(acp::dims_of(out) == expect, kInvalid, "output shape ", shape_str(out), " must be ", shape_str(expect), " (the ",
            transposed ? "transposed " : "", "convolution of input ", shape_str(in), " with weight ", shape_str(w), ")");
}

// What each product runs at all (TemporarySoftwareLimitChecker, the page's "other constraints"):
// 200I/500 A2 only the non-transposed 2-D convolution (its ranks: the manifest); Atlas inference
// products 3-D only non-transposed and in FLOAT16.
void check_forward_product(const acp::Args &a, const acp_tensor_desc &in, bool transposed) {
    if (product_is(a, "atlas-200i-500-a2"))
        require(!transposed, kInvalid,
                "transposed must be false on atlas-200i-500-a2 (aclnnConvolution runs only the non-transposed 2-D convolution there)");
    if (product_is(a, "atlas-inference") && in.rank == 5) {
        require(!transposed, kInvalid, "transposed must be false for a 3-D convolution on atlas-inference, got true");
        for (const uint32_t i : {0u, 1u, 2u, 9u})
            if (const acp_tensor_desc *t = a.tensor(i))
                require(t->dtype == acp::dt::kFloat16, kInvalid, kForwardNames[i], " dtype must be FLOAT16 for a 3-D convolution on atlas-inference, got ",
                        acp::dtype_name(t->dtype));
    }
}

// The forward's dtypes (CANN's GetConvolutionOpDtype; Problem::cube_dt). Promoted: FLOAT if input or
// weight is, else their common dtype, else (FLOAT16 with BF16) FLOAT. The cube computes FLOAT16 under
// USE_FP16 (2), and where it has no FP32 (A2, A3 and 200I/500 A2 have): FLOAT and BF16 then become FLOAT16. Its
// kernel writes that dtype; a transposed one FLOAT when the output is FLOAT, and FLOAT16 on the
// products without an FP32 cube and under USE_FP16.
void forward_dtypes(Problem &p, const acp::Args &a, const acp_tensor_desc &in, const acp_tensor_desc &w,
                    const acp_tensor_desc &out) {
    using namespace acp::dt;
    const int32_t upper = in.dtype == w.dtype ? in.dtype : kFloat;
    const bool use_fp16 = a.integer(10) == 2;
    const bool fp32_cube = !product_is(a, "atlas-training") && !product_is(a, "atlas-inference");
    p.cube_dt = use_fp16 || (upper != kFloat16 && !fp32_cube) ? kFloat16 : upper;
    p.kernel_out_dt = p.transposed && out.dtype == kFloat ? kFloat : p.cube_dt;
    if (p.transposed && (!fp32_cube || use_fp16)) p.kernel_out_dt = kFloat16;
    // The bias is cast to the cube's dtype (BF16: to FLOAT), but a transposed A2/A3 kernel takes it
    // in the promotion of its own dtype and the bias's: never rounded there.
    p.bias_fp16 = p.cube_dt == kFloat16 && !(p.transposed && fp32_cube);
}

// The operator page's limits (its constraints table; the same on A2/A3, 200I/500 A2 and the
// inference products unless said): every dim of input, weight and bias at most 1000000; transposed:
// dilation in [1, 255], the kernel's L (1-D) or H and W in [1, 255], 3-D stride H and W in [1, 63] and
// padding H and W in [0, 255]; non-transposed 1-D / 2-D: padding in [0, 255]; non-transposed 3-D:
// stride H and W in [1, 63], padding H and W in [0, 255], dilation H and W in [1, 255], kernel H and W
// in [1, 511]. Atlas inference products: input H and W (1-D: L) at most 4096, every kernel dim at
// most 255.
void check_forward_ranges(const Attrs &a, const acp_tensor_desc &in, const acp_tensor_desc &w, const acp_tensor_desc *bias,
                          bool transposed, bool inference) {
    for (const auto &[t, name] : {std::pair{&in, "input"}, std::pair{&w, "weight"}, std::pair{bias, "bias"}})
        if (t)
            for (uint32_t d = 0; d < t->rank; ++d)
                require(t->dims[d] <= 1000000, kInvalid, name, " dim ", d, " must be <= 1000000 (CANN's documented limit), got ",
                        shape_str(*t));
    const size_t sd = in.rank - 2;
    const char *kind = transposed ? " transposed " : " non-transposed ";
    const auto range = [&](int64_t v, int64_t lo, int64_t hi, const std::string &name) {
        require(v >= lo && v <= hi, kInvalid, name, " must be in [", lo, ", ", hi, "] for a", kind, sd,
                "-D convolution (CANN's documented range), got ", v);
    };
    for (size_t i = 0; i < sd; ++i) {
        const bool hw = sd < 3 || i > 0;  // the H and W dims (1-D: L); 3-D depth is free
        const std::string k = cat("weight spatial dim ", i), s = cat("stride[", i, "]"), d = cat("dilation[", i, "]");
        const std::string pl = cat("padding before spatial dim ", i), pr = cat("padding after spatial dim ", i);
        if (transposed) {
            range(a.dil[i], 1, 255, d);
            // The page says [1, 255]; CANN's code takes what its data-gradient tiling does (filter H / W
            // up to 511, the reach check above bounding (k - 1) * dilation - padding), and Huawei's
            // system tests run 511-wide transposed 3-D kernels on A2 (cann_st/convolution_atk.yaml).
            if (hw) range(w.dims[i + 2], 1, 511, k);
            if (sd == 3 && hw) range(a.stride[i], 1, 63, s), range(a.pl[i], 0, 255, pl), range(a.pr[i], 0, 255, pr);
        } else if (sd < 3) {
            range(a.pl[i], 0, 255, pl), range(a.pr[i], 0, 255, pr);
        } else if (hw) {
            range(a.stride[i], 1, 63, s), range(a.pl[i], 0, 255, pl), range(a.pr[i], 0, 255, pr);
            range(a.dil[i], 1, 255, d), range(w.dims[i + 2], 1, 511, k);
        }
        if (inference) {
            require(w.dims[i + 2] <= 255, kInvalid, k, " must be <= 255 on atlas-inference (CANN's documented limit), got ",
                    w.dims[i + 2]);
            if (hw)
                require(in.dims[i + 2] <= 4096, kInvalid, "input spatial dim ", i,
                        " must be <= 4096 on atlas-inference (CANN's documented limit), got ", in.dims[i + 2]);
        }
    }
}

// Attributes that cannot change the result, made the engine's easiest: a dilation along a 1-wide
// kernel, and a stride along an output of size 1 (any stride past the last window start).
void normalize_for_engine(Attrs &a, const acp_tensor_desc &in, const acp_tensor_desc &w, const acp_tensor_desc &out,
                          bool transposed) {
    for (uint32_t d = 2; d < in.rank; ++d) {
        const size_t i = d - 2;
        if (w.dims[d] == 1) a.dil[i] = 1;
        if (!transposed && out.dims[d] == 1) {
            const I128 avail = static_cast<I128>(in.dims[d]) + a.pl[i] + a.pr[i] - dilated(w.dims[d], a.dil[i]);
            a.stride[i] = static_cast<int64_t>(std::min<I128>(a.stride[i], avail + 1));
        }
    }
}

}  // namespace

Problem check_backward(const acp::Args &a) {
    Problem p;
    const acp_tensor_desc &go = *a.tensor(0), &in = *a.tensor(1), &w = *a.tensor(2);
    const acp_tensor_desc *gi = a.tensor(12), *gw = a.tensor(13), *gb = a.tensor(14);
    const std::vector<bool> mask = a.bools(10);
    for (int i = 0; i < 3; ++i) p.mask[i] = mask[static_cast<size_t>(i)];
    p.transposed = a.boolean(7);
    const int64_t groups = a.integer(9);
    // formats (CheckFormatValid): ND only as NCL
    nd_is_ncl(&go, "gradOutput");
    nd_is_ncl(&in, "input");
    nd_is_ncl(&w, "weight");
    nd_is_ncl(gi, "gradInput");
    nd_is_ncl(gw, "gradWeight");
    // attribute values (CheckConvParams): stride, padding, dilation, groups ranges are the manifest's
    check_output_padding_values(a.ints(8), p.transposed, "outputPadding");

    // Ranks first: the empty path below reads weight's dims by input's rank.
    require(go.rank == in.rank, kInvalid, "gradOutput rank ", go.rank, " must equal input rank ", in.rank);
    require(in.rank == w.rank, kInvalid, "weight rank ", w.rank, " must equal input rank ", in.rank);

    // Huawei's empty-tensor path (CheckEmptyTensor, CheckShapeEmpty): input or weight empty. Huawei
    // returns before the shape checks; the shapes that stay defined at size 0 are checked here too
    // (check_empty_shapes), so that no inconsistent call succeeds.
    if (acp::numel(in) == 0 || acp::numel(w) == 0) {
        p.empty = true;
        if (p.mask[2]) {
            require(a.present(3), kInvalid, "biasSizes must not be NULL on the empty-tensor path when outputMask[2] is true");
            const std::vector<int64_t> bs = a.ints(3);
            require(bs.size() == 1, kInvalid, "biasSizes must have 1 element, got ", bs.size(), " ", shape_str(bs));
            const int64_t expect = p.transposed ? transposed_channels(w, groups) : go.dims[1];
            require(bs[0] == expect, kInvalid,
                    "biasSizes[0] must be ", expect,
                    p.transposed ? " (weight dim 1 times groups)" : " (gradOutput channels)", ", got ", bs[0]);
            p.bias_size = bs[0];
        }
        if (p.mask[0] && acp::numel(in) != 0)  // (the empty path does not write gradInput)
            acp::reject(kInvalid, cat("outputMask[0] must be false when weight is empty and input is not: weight ",
                                      shape_str(w), ", input ", shape_str(in)));
        if (p.mask[0])
            require(in.dims[0] == 0 || in.dims[1] == 0, kInvalid,
                    "input may be empty only in N or C when outputMask[0] is true, got ", shape_str(in));
        const Attrs at = parse_lengths(a.ints(4), a.ints(5), a.ints(6), a.ints(8), in.rank, p.transposed, "input");
        check_documented_ranges(at, w, p.transposed);
        require(w.dims[0] % groups == 0, kInvalid,
                "weight dim 0 (", w.dims[0], ") must be a multiple of groups (", groups, ")");
        const acp_tensor_desc &x = p.transposed ? go : in;
        const bool batchless = p.transposed && in.dims[0] == 0;
        if (!batchless && (x.dims[1] != 0 || w.dims[1] != 0))
            require(w.dims[1] != 0 && x.dims[1] % w.dims[1] == 0 && x.dims[1] / w.dims[1] == groups, kInvalid,
                    p.transposed ? "gradOutput" : "input", " channels ", x.dims[1], " must equal weight dim 1 (",
                    w.dims[1], ") times groups (", groups, ")");
        if (p.transposed) {
            require(w.dims[0] > 0 && w.dims[0] == in.dims[1], kInvalid,
                    "weight dim 0 (", w.dims[0], ") must equal input channels (", in.dims[1], ") and be > 0");
        } else {
            for (uint32_t i = 2; i < in.rank; ++i)
                require(static_cast<I128>(in.dims[i]) + at.pl[i - 2] + at.pr[i - 2] >= dilated(w.dims[i], at.dil[i - 2]),
                        kInvalid,
                        "input spatial dim ", i - 2, " (", in.dims[i], ") plus padding must be >= the dilated kernel (",
                        static_cast<int64_t>(dilated(w.dims[i], at.dil[i - 2])), ")");
        }
        // A transposed call with an empty batch returns before CANN's shape checks (CheckParamsGroup):
        // gradOutput's shape is neither checked nor read.
        if (!batchless) check_empty_shapes(go, in, w, groups, at, p.transposed);
        if (p.mask[0]) require_shape(gi, "gradInput", in, "input");
        if (p.mask[1]) require_shape(gw, "gradWeight", w, "weight");
        if (p.mask[2])
            require(gb->rank == 1 && gb->dims[0] == p.bias_size, kInvalid,
                    "gradBias shape ", shape_str(*gb), " must be [", p.bias_size, "] (biasSizes)");
        return p;
    }

    // shapes (CheckConvShape)
    require(acp::numel(go) != 0, kInvalid, "gradOutput must not be empty, got ", shape_str(go));
    require_shape(gi, "gradInput", in, "input");
    require_shape(gw, "gradWeight", w, "weight");
    if (gb) {
        require(gb->rank == 1, kInvalid, "gradBias must have rank 1, got rank ", gb->rank, " ", shape_str(*gb));
        require(gb->dims[0] == go.dims[1], kInvalid,
                "gradBias shape ", shape_str(*gb), " must be [", go.dims[1], "] (gradOutput channels)");
    }
    const Attrs at = parse_lengths(a.ints(4), a.ints(5), a.ints(6), a.ints(8), in.rank, p.transposed, "input");
    check_documented_ranges(at, w, p.transposed);
    check_engine_limits(in, at, p.transposed);
    // channels and groups (CheckConvChannelAndGroup), then spatial sizes (CheckConvShapePlus)
    if (!p.transposed) {
        check_channels(in, "input", go, "gradOutput", w, groups);
        p.g = geometry(in, "input", go, "gradOutput", w, groups, at, false, false);
    } else {
        check_channels(go, "gradOutput", in, "input", w, groups);
        p.g = geometry(in, "input", go, "gradOutput", w, groups, at, true, true);
        p.unreachable = unreachable(p.g);
    }
    // CANN's 3-D weight gradient (CheckSupportedForConv3dBackpropFilter, its last check): a grouped
    // FLOAT gradWeight cannot take USE_FP16.
    require(!(in.rank == 5 && p.mask[1] && groups > 1 && gw && gw->dtype == acp::dt::kFloat && a.integer(11) == 2), kInvalid,
            "cubeMathType 2 (USE_FP16) is not supported for the FLOAT gradWeight of a grouped 3-D convolution (groups ",
            groups, "); use 0, 1 or 3");
    return p;
}

Problem check_forward(const acp::Args &a) {
    Problem p;
    const acp_tensor_desc &in = *a.tensor(0), &w = *a.tensor(1), &out = *a.tensor(9);
    const acp_tensor_desc *bias = a.tensor(2);
    p.transposed = a.boolean(6);
    const int64_t groups = a.integer(8);
    // (CANN's forward reads outputPadding only when transposed: the manifest requires it then, with
    // the NULL checks; otherwise it is absent here, whatever was passed.)
    // DimChecker: ranks, the bias, attribute lengths
    require(w.rank == in.rank, kInvalid, "weight rank ", w.rank, " must equal input rank ", in.rank);
    require(out.rank == in.rank, kInvalid, "output rank ", out.rank, " must equal input rank ", in.rank);
    const int64_t cout = p.transposed ? transposed_channels(w, groups) : w.dims[0];
    if (bias)
        require(bias->rank == 1 && bias->dims[0] == cout, kInvalid, "bias shape ", shape_str(*bias), " must be [", cout,
                p.transposed ? "] (weight dim 1 times groups)" : "] (weight dim 0)");
    const std::vector<int64_t> op = p.transposed ? a.ints(7) : std::vector<int64_t>(in.rank - 2, 0);  // (ranks 3-5: manifest)
    Attrs at = parse_lengths(a.ints(3), a.ints(4), a.ints(5), op, in.rank, p.transposed, "input", !p.transposed);
    check_output_padding_values(op, p.transposed, "outputPadding");
    // ValueChecker: shapes, the padded input, channels and groups, the transposed limits
    for (uint32_t d = 2; d < w.rank; ++d)
        require(w.dims[d] > 0, kInvalid, "weight spatial dim ", d - 2, " must be > 0, got ", shape_str(w));
    if (!p.transposed && acp::numel(in) != 0)
        for (uint32_t d = 2; d < in.rank; ++d)
            require(static_cast<I128>(in.dims[d]) + at.pl[d - 2] + at.pr[d - 2] >= dilated(w.dims[d], at.dil[d - 2]), kInvalid,
                    "input spatial dim ", d - 2, " (", in.dims[d], ") plus padding (", at.pl[d - 2], "+", at.pr[d - 2],
                    ") must be >= the dilated kernel (dilation ", at.dil[d - 2], " * (", w.dims[d], " - 1) + 1)");
    check_forward_channels(in, w, groups, p.transposed);
    const bool any_empty = acp::numel(in) == 0 || acp::numel(w) == 0;
    if (p.transposed && !any_empty && acp::numel(out) != 0) check_transposed_pad_reach(w, a.ints(4), a.ints(5));
    // ConvXdChecker: the output shape; an empty input or weight only with an empty output
    check_forward_output(in, w, out, cout, at, p.transposed);
    require(!any_empty || acp::numel(out) == 0, kInvalid, "output shape ", shape_str(out),
            " must be empty when input ", shape_str(in), " or weight ", shape_str(w), " is (CANN computes nothing then)");
    // TemporarySoftwareLimitChecker: what the product runs at all
    check_forward_product(a, in, p.transposed);
    forward_dtypes(p, a, in, w, out);
    check_forward_ranges(at, in, w, bias, p.transposed, product_is(a, "atlas-inference"));
    p.empty = acp::numel(out) == 0;
    if (p.empty) return p;
    // A transposed kernel reads and writes one dtype: CANN has none from FLOAT16 or BF16 to FLOAT, and
    // fails when it looks for one (phase 1, 361001).
    if (p.transposed && p.kernel_out_dt != p.cube_dt)
        acp::reject(acp::kRuntime, cat("output dtype FLOAT is not supported for a transposed convolution computed in ",
                                       acp::dtype_name(p.cube_dt), " (input ", acp::dtype_name(in.dtype), ", weight ",
                                       acp::dtype_name(w.dtype), "): CANN has no transposed kernel from ",
                                       acp::dtype_name(p.cube_dt), " to FLOAT"));
    normalize_for_engine(at, in, w, out, p.transposed);
    check_engine_limits(in, at, p.transposed);
    p.g = geometry(in, "input", out, "output", w, groups, at, p.transposed, false);  // the forward's output is exact
    if (p.transposed) p.unreachable = unreachable(p.g);
    return p;
}

}  // namespace conv
