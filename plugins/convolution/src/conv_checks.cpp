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

// CANN's documented ranges for a non-transposed convolution (the operator page gives them for A2;
// they are the cube's, and are applied on every product): dilation and the kernel's H and W (L in
// 1-D) in [1, 255], padding in [0, 255] (3-D: but for depth), stride in [1, 2147483646] (3-D: H and
// W in [1, 63]). The dilation's range holds for transposed convolutions too: oneDNN's 1-D and 3-D
// primitives take time linear in the dilation to create (12 s at 1e7).
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
// padding below 2^31; beyond, its primitives are not created (3-D depth only, after the ranges above).
void check_engine_limits(const acp_tensor_desc &x, const Attrs &a, bool transposed) {
    if (transposed) return;
    for (size_t i = 0; i + 2 < x.rank; ++i) {
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
// output of input (x): y = (x-1)*stride - padL - padR + dilation*(k-1) + 1 + outputPadding.
Geometry geometry(const acp_tensor_desc &x, const char *x_name, const acp_tensor_desc &y, const char *y_name,
                  const acp_tensor_desc &w, int64_t groups, const Attrs &a, bool transposed) {
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
        require(acp::dims_of(y) == expect, kInvalid,
                y_name, " shape ", shape_str(y), " must be ", shape_str(expect), " (the transposed convolution of ",
                x_name, " ", shape_str(x), ")");
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
    expect[0] = in.dims[0];
    expect[1] = transposed ? w.dims[1] * groups : w.dims[0];
    std::array<int64_t, 3> k{1, 1, 1};
    for (uint32_t i = 2; i < w.rank; ++i) k[i - 2] = w.dims[i];
    for (size_t i = 0; i + 2 < in.rank; ++i) {
        if (k[i] == 0) continue;
        if (!transposed) {
            const int64_t o = conv_out(in.dims[i + 2], a, k, i);
            if (o >= 1) expect[i + 2] = o;
        } else if (in.dims[i + 2] > 0) {
            const I128 o = static_cast<I128>(in.dims[i + 2] - 1) * a.stride[i] - a.pl[i] - a.pr[i] + dilated(k[i], a.dil[i]) + a.op[i];
            if (o >= 1 && o <= INT64_MAX) expect[i + 2] = static_cast<int64_t>(o);
        }
    }
    require(acp::dims_of(go) == expect, kInvalid,
            "gradOutput shape ", shape_str(go), " must be ", shape_str(expect), " (input ", shape_str(in), ", weight ",
            shape_str(w), transposed ? ", transposed)" : ")");
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
            const int64_t expect = p.transposed ? w.dims[1] * groups : go.dims[1];
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
        check_empty_shapes(go, in, w, groups, at, p.transposed);
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
        p.g = geometry(in, "input", go, "gradOutput", w, groups, at, false);
    } else {
        check_channels(go, "gradOutput", in, "input", w, groups);
        p.g = geometry(in, "input", go, "gradOutput", w, groups, at, true);
        p.unreachable = unreachable(p.g);
    }
    return p;
}

Problem check_forward(const acp::Args &a) {
    Problem p;
    const acp_tensor_desc &in = *a.tensor(0), &w = *a.tensor(1), &out = *a.tensor(9);
    const acp_tensor_desc *bias = a.tensor(2);
    p.transposed = a.boolean(6);
    const int64_t groups = a.integer(8);
    nd_is_ncl(&in, "input");
    nd_is_ncl(&w, "weight");
    nd_is_ncl(&out, "output");
    // CANN's forward reads outputPadding only when transposed: then it is required; otherwise it may
    // be NULL and any value is ignored.
    if (p.transposed) require(a.present(7), acp::kNullptr, "outputPadding must not be NULL when transposed is true");
    const std::vector<int64_t> op = p.transposed ? a.ints(7) : std::vector<int64_t>(in.rank - 2, 0);  // (ranks 3-5: manifest)
    check_output_padding_values(op, p.transposed, "outputPadding");
    require(in.rank == w.rank, kInvalid, "weight rank ", w.rank, " must equal input rank ", in.rank);
    require(out.rank == in.rank, kInvalid, "output rank ", out.rank, " must equal input rank ", in.rank);
    const Attrs at = parse_lengths(a.ints(3), a.ints(4), a.ints(5), op, in.rank, p.transposed, "input", !p.transposed);
    check_documented_ranges(at, w, p.transposed);
    check_engine_limits(in, at, p.transposed);
    require(acp::numel(w) != 0, kInvalid, "weight must not be empty, got ", shape_str(w));
    for (uint32_t d = 1; d < in.rank; ++d)
        require(in.dims[d] != 0, kInvalid, "input may be empty only in N, got ", shape_str(in));
    const int64_t cout = p.transposed ? w.dims[1] * groups : w.dims[0];
    if (bias)
        require(bias->rank == 1 && bias->dims[0] == cout, kInvalid,
                "bias shape ", shape_str(*bias), " must be [", cout, "] (the output channels)");
    if (!p.transposed) {
        check_channels(in, "input", out, "output", w, groups);
        p.g = geometry(in, "input", out, "output", w, groups, at, false);
    } else {
        check_channels(out, "output", in, "input", w, groups);
        p.g = geometry(in, "input", out, "output", w, groups, at, true);
        p.unreachable = unreachable(p.g);
    }
    p.empty = in.dims[0] == 0;
    return p;
}

}  // namespace conv
