"""The pooling families against PyTorch in float64: aclnnAvgPool2dBackward (every attribute form,
ceilMode, countIncludePad, divisorOverride, cubeMathType), aclnnMaxPool2dWithMask then
aclnnMaxPool2dWithMaskBackward (values, int32 argmax mask, gradient; ties, NaN and infinities),
aclnnMaxUnpool2dBackward (INT32 / INT64 indices, duplicates). Rank-3 (C, H, W) tensors too; one
plane in seven with rows of 13 to 72 (the vector paths), one window in four a network's (k3 s2 p1,
k2 s2 p0, k3 s2 p0, k3 s1 p1). The forward companions aclnnAvgPool2d and aclnnMaxUnpool2d on the
same draws (avgpool_fwd, unpool_fwd)."""
import numpy as np
import torch
import torch.nn.functional as F

from harness import Case


def _attrs(rng, h, w):
    """Kernel, stride and padding in each form CANN takes (one value for both dims; an empty or NULL
    stride meaning the kernel), as arrays, and as the (h, w) pairs PyTorch takes."""
    kh, kw = rng.randint(1, min(h + 2, 9)), rng.randint(1, min(w + 2, 9))
    if rng.random() < 0.3:
        kw = kh
    sh, sw = rng.randint(1, 4), rng.randint(1, 4)
    ph, pw = rng.randint(0, kh // 2), rng.randint(0, kw // 2)
    if rng.random() < 0.25:  # the networks' windows, which the kernels have fast paths for
        kh, sh, ph = rng.choice([(3, 2, 1), (2, 2, 0), (3, 2, 0), (3, 1, 1)])
        kw, sw, pw = kh, sh, ph
    kernel = [kh] if kh == kw and rng.random() < 0.5 else [kh, kw]
    r = rng.random()
    if r < 0.25:
        stride, sh, sw = (None if r < 0.15 else []), kh, kw
    elif r < 0.45:
        stride, sw = [sh], sh
    else:
        stride = [sh, sw]
    padding = [ph] if ph == pw and rng.random() < 0.5 else [ph, pw]
    return (kernel, stride, padding), (kh, kw), (sh, sw), (ph, pw)


def _shape(rng, rank3_share):
    """(N, C, H, W) and the leading dims the tensors carry: none for a rank-3 case (N = 1)."""
    rank3 = rng.random() < rank3_share
    n = 1 if rank3 else rng.randint(1, 3)
    if rng.random() < 0.15:  # planes with rows of more than 16: the vector paths, and their tails
        return (n, rng.randint(1, 20), rng.randint(13, 72), rng.randint(13, 72)), ([] if rank3 else [n])
    return (n, rng.randint(1, 5), rng.randint(1, 12), rng.randint(1, 12)), ([] if rank3 else [n])


# ---------------------------------------------------------------------------------------- AvgPool2d
def _hf32(t):
    """FLOAT rounded to HF32 (10 mantissa bits, to nearest even), the infinities and NaN kept."""
    a = t.to(torch.float32).numpy()
    u = a.view(np.uint32).astype(np.uint64)
    r = ((u + np.uint64(0x7FF) + ((u >> np.uint64(12)) & np.uint64(1))) & np.uint64(0xFFFFF000))
    r = r.astype(np.uint32).view(np.float32)
    return torch.from_numpy(np.where(np.isfinite(a), r, a)).double()


def _fp16(t):
    return t.to(torch.float32).to(torch.float16).double()


def _avg_rounded(go, h, w, k, s, pad, cip, div, rnd):
    """The backward with gradOutput and each window's FLOAT 1/divisor rounded as cubeMathType
    rounds them on atlas-a2 (1, 3: HF32; 2: FLOAT16), which PyTorch has no mode for."""
    n, ch, ho, wo = go.shape
    go = rnd(go)
    gi = torch.zeros(n, ch, h, w, dtype=torch.float64)
    for oh in range(ho):
        for ow in range(wo):
            h0, w0 = oh * s[0] - pad[0], ow * s[1] - pad[1]
            h1, w1 = min(h0 + k[0], h + pad[0]), min(w0 + k[1], w + pad[1])
            pool = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            if h1 <= h0 or w1 <= w0:
                continue
            d = div or (pool if cip else (h1 - h0) * (w1 - w0))
            scale = float(rnd(torch.tensor(1.0, dtype=torch.float32) / d))
            gi[:, :, h0:h1, w0:w1] += go[:, :, oh, ow, None, None] * scale
    return gi


def _avg_attributes(c, arrays, ceil, cip, div, cube):
    """The attribute arguments AvgPool2d and AvgPool2dBackward share."""
    for name, values in zip(("kernel", "stride", "padding"), arrays):
        c.ints(name, values)
    c.num("ceil", ceil)
    c.num("count_include_pad", cip)
    c.num("divisor", div)
    c.num("cube", cube)


def avgpool(rand, dtype):
    rng = rand.rng
    (n, ch, h, w), lead = _shape(rng, 0.15)
    arrays, k, s, pad = _attrs(rng, h, w)
    ceil, cip = rng.random() < 0.5, rng.random() < 0.5
    div = 0 if rng.random() < 0.6 else rng.choice([1, 2, 3, 5, 7, 9, -1, -3, 17, 300, -1000])
    cube = rng.choice([1, 2, 3]) if dtype == "float32" and rng.random() < 0.3 else 0  # rounds FLOAT only

    def pool(x):
        return F.avg_pool2d(x, k, s, pad, ceil, cip, div or None)

    try:
        ho, wo = pool(torch.zeros(n, ch, h, w, dtype=torch.float64)).shape[2:]
    except RuntimeError:
        return None
    fmt = "NCHW" if lead else "NCL"
    c = Case("avgpool", dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], kernel=arrays[0], stride=arrays[1], padding=arrays[2], ceil=ceil,
                  count_include_pad=cip, divisor=div, cube=cube)
    go = c.input("go", rand.randn(lead + [ch, ho, wo]), fmt).reshape(n, ch, ho, wo)
    c.input("self", rand.randn(lead + [ch, h, w]), fmt)
    c.output("gi", lead + [ch, h, w], fmt)
    _avg_attributes(c, arrays, ceil, cip, div, cube)

    def backward(g):
        if cube:
            return _avg_rounded(g, h, w, k, s, pad, cip, div, _fp16 if cube == 2 else _hf32)
        x = torch.zeros(n, ch, h, w, dtype=torch.float64, requires_grad=True)
        pool(x).backward(g)
        return x.grad

    c.expect("gi", backward(go).reshape(lead + [ch, h, w]), backward(go.abs()).reshape(lead + [ch, h, w]))
    return c


# ------------------------------------------------------------------------------ MaxPool2dWithMask
def _maxpool_values(rand, shape):
    """Distinct values mostly (no ties in FLOAT), else few values (ties: the first index wins),
    NaN (the last NaN of a window wins) or infinities."""
    kind = rand.rng.choices(["distinct", "ties", "nan", "inf"], [0.8, 0.07, 0.07, 0.06])[0]
    count = int(np.prod(shape))
    if kind == "distinct":
        v = (rand.np.permutation(count) - count / 2) * 0.37
    elif kind == "ties":
        v = rand.np.integers(0, 3, size=count).astype(np.float64)
    elif kind == "nan":
        v = rand.np.integers(0, 4, size=count).astype(np.float64)
        v[rand.np.random(count) < 0.25] = np.nan
    else:
        v = rand.np.choice([-np.inf, -np.inf, 1.0, np.inf, -2.0], size=count)
    return torch.from_numpy(v).reshape(shape), kind


def maxpool(rand, dtype):
    rng = rand.rng
    (n, ch, h, w), lead = _shape(rng, 0.15)
    arrays, k, s, pad = _attrs(rng, h, w)
    # A NULL stride is 161001 in CANN's MaxPool (PyTorch reads it as the kernel): pass the empty form.
    arrays = (arrays[0], [] if arrays[1] is None else arrays[1], arrays[2])
    dilation = rng.choice([[1], [1, 1]])
    ceil = rng.random() < 0.5
    fmt = rng.choice(["NCHW", "ND"] + ([] if lead else ["NCL"]))
    values, kind = _maxpool_values(rand, lead + [ch, h, w])
    c = Case("maxpool", dtype, rand)
    x = c.input("self", values, fmt).reshape(n, ch, h, w)
    try:
        y, ind = F.max_pool2d(x, k, s, pad, 1, ceil, return_indices=True)
    except RuntimeError:
        return None
    ho, wo = y.shape[2:]
    # The mask: (kh * kw) rows of ((Ho * Wo + 15) / 16 + 1) * 32 bytes per plane; on atlas-a2 it
    # starts with the int32 argmax of every output, planes in order. A 1x1 kernel whose argmax would
    # not fit (Ho * Wo > 24) gets the bit mask instead, which we only hand to the backward.
    mask_shape = lead + [ch, k[0] * k[1], ((ho * wo + 15) // 16 + 1) * 32]
    bits = k[0] * k[1] == 1 and ho * wo > 24
    own_mask = not bits and rng.random() < 0.5
    c.desc = dict(shape=[n, ch, h, w], kernel=arrays[0], stride=arrays[1], padding=arrays[2], dilation=dilation,
                  ceil=ceil, values=kind, own_mask=own_mask, fmt=fmt)
    out_shape = lead + [ch, ho, wo]
    c.output("out", out_shape, fmt)
    c.output("mask", mask_shape, fmt, dtype="int8")
    go = c.input("go", rand.randn(out_shape), fmt).reshape(n, ch, ho, wo)
    c.output("gi", lead + [ch, h, w], fmt)
    if own_mask:  # the backward alone: torch's indices, then garbage it must not read (raw bytes: no view)
        m = rand.np.integers(-128, 128, size=int(np.prod(mask_shape)), dtype=np.int8)
        argmax = ind.numpy().astype(np.int32).reshape(-1).view(np.int8)
        m[:argmax.size] = argmax
        c.input("bmask", torch.from_numpy(m).reshape(mask_shape), fmt, dtype="int8", contiguous=True)
    for name, v in zip(("kernel", "stride", "padding"), arrays):
        c.ints(name, v)
    c.ints("dilation", dilation)
    c.num("ceil", ceil)

    def backward(g):
        gi = torch.zeros(n, ch, h * w, dtype=torch.float64)
        return gi.scatter_add_(2, ind.reshape(n, ch, -1), g.reshape(n, ch, -1)).reshape(lead + [ch, h, w])

    c.expect("out", y.reshape(out_shape), exact=True)
    if not bits:
        count = ind.numel()
        c.expect("mask", ind.reshape(-1).double(), exact=True,
                 extract=lambda m: torch.from_numpy(m.numpy().reshape(-1)[:4 * count].view(np.int32).copy()))
    c.expect("gi", backward(go), backward(go.abs()))
    return c


# --------------------------------------------------------------------------------- MaxUnpool2d
def _unpool_problem(rng, hold_self):
    """((N, C, H, W), leading dims, the output plane, format, index dtype, the indices' bound). With
    hold_self the output plane holds at least self's elements, as CANN's forward wants (161002)."""
    (n, ch, h, w), lead = _shape(rng, 0.2)
    oh, ow = (rng.randint(1, 12), rng.randint(1, 12)) if h <= 12 else (rng.randint(h, 2 * h), rng.randint(w, 2 * w))
    if hold_self and oh * ow < h * w:
        oh, ow = h, w + rng.randint(0, 3)
    fmt = "ND" if rng.random() < 0.8 else "NCHW" if lead else "NCL"
    itype = rng.choice(["int32", "int64"])
    top = min(oh * ow, 3) if rng.random() < 0.3 else oh * ow  # few distinct indices: duplicates
    return (n, ch, h, w), lead, (oh, ow), fmt, itype, top


def unpool(rand, dtype):
    (n, ch, h, w), lead, (oh, ow), fmt, itype, top = _unpool_problem(rand.rng, False)
    c = Case("unpool", dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], output_size=[oh, ow], indices=itype, fmt=fmt)
    go = c.input("go", rand.randn(lead + [ch, oh, ow]), fmt).reshape(n, ch, oh, ow)
    c.input("self", rand.randn(lead + [ch, h, w]), fmt)
    ind = c.input("indices", torch.from_numpy(rand.np.integers(0, top, size=lead + [ch, h, w])), fmt, dtype=itype)
    c.output("gi", lead + [ch, h, w], fmt)
    c.ints("output_size", [oh, ow])
    x = torch.zeros(n, ch, h, w, dtype=torch.float64, requires_grad=True)
    torch._C._nn.max_unpool2d(x, ind.reshape(n, ch, h, w).long(), (oh, ow)).backward(go)
    c.expect("gi", x.grad.reshape(lead + [ch, h, w]), exact=True)  # a gather: no rounding
    return c


# ------------------------------------------------------------------------------ forward companions
def avgpool_fwd(rand, dtype):
    """aclnnAvgPool2d on the backward's attribute draws (cubeMathType 0)."""
    rng = rand.rng
    (n, ch, h, w), lead = _shape(rng, 0.15)
    arrays, k, s, pad = _attrs(rng, h, w)
    # CANN's forward takes no NULL strides (aclnn_avgpool2d.cpp; 161001): the empty form instead.
    arrays = (arrays[0], [] if arrays[1] is None else arrays[1], arrays[2])
    ceil, cip = rng.random() < 0.5, rng.random() < 0.5
    div = 0 if rng.random() < 0.6 else rng.choice([1, 2, 3, 5, 7, 9, -1, -3, 17, 300, -1000])
    fmt = "NCHW" if lead else "NCL"
    c = Case("avgpool_fwd", dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], kernel=arrays[0], stride=arrays[1], padding=arrays[2], ceil=ceil,
                  count_include_pad=cip, divisor=div)
    x = c.input("self", rand.randn(lead + [ch, h, w]), fmt).reshape(n, ch, h, w)
    try:
        y = F.avg_pool2d(x, k, s, pad, ceil, cip, div or None)
    except RuntimeError:
        return None
    mag = F.avg_pool2d(x.abs(), k, s, pad, ceil, cip, div or None)
    ho, wo = y.shape[2:]
    c.output("out", lead + [ch, ho, wo], fmt)
    _avg_attributes(c, arrays, ceil, cip, div, 0)
    c.expect("out", y.reshape(lead + [ch, ho, wo]), mag.abs().reshape(lead + [ch, ho, wo]))
    return c


def unpool_fwd(rand, dtype):
    """aclnnMaxUnpool2d: a scatter, exact; duplicate indices (the last in row-major order wins, as in
    PyTorch's CPU kernel)."""
    (n, ch, h, w), lead, (oh, ow), fmt, itype, top = _unpool_problem(rand.rng, True)
    c = Case("unpool_fwd", dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], output_size=[oh, ow], indices=itype, fmt=fmt)
    x = c.input("self", rand.randn(lead + [ch, h, w]), fmt).reshape(n, ch, h, w)
    ind = c.input("indices", torch.from_numpy(rand.np.integers(0, top, size=lead + [ch, h, w])), fmt, dtype=itype)
    c.output("out", lead + [ch, oh, ow], fmt)
    c.ints("output_size", [oh, ow])
    y = torch._C._nn.max_unpool2d(x, ind.reshape(n, ch, h, w).long(), (oh, ow))
    c.expect("out", y.reshape(lead + [ch, oh, ow]), exact=True)
    return c
