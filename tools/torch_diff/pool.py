"""The pooling families against PyTorch in float64: aclnnAvgPool2dBackward (every attribute form,
ceilMode, countIncludePad, divisorOverride, cubeMathType), aclnnMaxPool2dWithMask then
aclnnMaxPool2dWithMaskBackward (values, int32 argmax or bit mask, gradient; ties, NaN and
infinities; masks of the case's own), aclnnMaxPool2dWithIndices then its backward (INT32 indices;
indices of the case's own, -1 among them), aclnnMaxUnpool2dBackward (INT32 / INT64 indices, duplicates;
floating, integer and BOOL data, out cast to another dtype). Each product's rules (products.py).
Rank-3 (C, H, W) tensors too; one plane in seven with rows of 13 to 72 (the vector paths), one
window in four a network's (k3 s2 p1, k2 s2 p0, k3 s2 p0, k3 s1 p1). The forward companions
aclnnAvgPool2d and aclnnMaxUnpool2d on the same draws (avgpool_fwd, unpool_fwd)."""
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn.functional as F

from harness import RAW, TORCH, Case
from products import F32_F16, INTS, REJECTED, ROUNDING


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
def _avg_windows(h, w, ho, wo, k, s, pad, cip, div, rnd):
    """Each output's clipped window and its FLOAT 1/divisor rounded as the cube rounds it
    (cubeMathType: HF32 or FLOAT16), which PyTorch has no mode for."""
    for oh in range(ho):
        for ow in range(wo):
            h0, w0 = oh * s[0] - pad[0], ow * s[1] - pad[1]
            h1, w1 = min(h0 + k[0], h + pad[0]), min(w0 + k[1], w + pad[1])
            pool = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            if h1 <= h0 or w1 <= w0:
                continue
            d = div or (pool if cip else (h1 - h0) * (w1 - w0))
            yield oh, ow, (slice(h0, h1), slice(w0, w1)), float(rnd(torch.tensor(1.0, dtype=torch.float32) / d))


def _avg_rounded(go, h, w, k, s, pad, cip, div, rnd):
    """The backward on rounded gradOutput and scales (_avg_windows)."""
    n, ch, ho, wo = go.shape
    go = rnd(go)
    gi = torch.zeros(n, ch, h, w, dtype=torch.float64)
    for oh, ow, (rows, cols), scale in _avg_windows(h, w, ho, wo, k, s, pad, cip, div, rnd):
        gi[:, :, rows, cols] += go[:, :, oh, ow, None, None] * scale
    return gi


def _avg_rounded_fwd(x, ho, wo, k, s, pad, cip, div, rnd):
    """The forward on rounded input and scales (_avg_windows); a window wholly in padding gives 0."""
    n, ch, h, w = x.shape
    x = rnd(x)
    y = torch.zeros(n, ch, ho, wo, dtype=torch.float64)
    for oh, ow, (rows, cols), scale in _avg_windows(h, w, ho, wo, k, s, pad, cip, div, rnd):
        y[:, :, oh, ow] = x[:, :, rows, cols].sum(dim=(2, 3)) * scale
    return y


def _divisor(rng, limit):
    """divisorOverride: 0 (not set) mostly, else a value within `limit` (None: any)."""
    limit = limit or float("inf")
    values = [v for v in (1, 2, 3, 5, 7, 9, -1, -3, 17, 300, -1000) if abs(v) <= limit]
    return 0 if rng.random() < 0.6 else rng.choice(values)


def _a2_vector_route(ch, h, w, k, pad, div, ceil):
    """Whether CANN's A2/A3 AvgPool2d runs its 3-D vector kernel (aclnn_avgpool2d.cpp) rather than
    its cube kernel or the global mean."""
    (kh, kw), (ph, pw) = k, pad
    if (h, w) == (kh, kw) and (ph, pw) == (0, 0):
        return False
    small = kh * kw <= 255 or (kh <= 20 and kw <= 20)
    return w // h >= 2 or h // w >= 2 or not small or not -255 <= div <= 255 or ceil or ch >= 65536


def _avg_case(op, rand, dtype, product):
    """The case AvgPool2d and AvgPool2dBackward share: shape, attributes, ceilMode, countIncludePad,
    divisorOverride and cubeMathType drawn and passed (a mode the product refuses rejects the case).
    Also returns the draws and the rounding of the cube's operands."""
    rng = rand.rng
    (n, ch, h, w), lead = _shape(rng, 0.15)
    arrays, k, s, pad = _attrs(rng, h, w)
    if op == "avgpool_fwd":  # CANN's forward takes no NULL stride (aclnn_avgpool2d.cpp; 161001): the empty form
        arrays = (arrays[0], [] if arrays[1] is None else arrays[1], arrays[2])
    ceil, cip = rng.random() < 0.5, rng.random() < 0.5
    forward = op == "avgpool_fwd"  # CANN's forward: no divisorOverride range, its own cubeMathType rules
    limit = None if forward else product.divisor_limit
    beyond = limit is not None and rng.random() < 0.1  # refused, but after the empty return (CANN's graph building)
    div = rng.choice([limit + 1, -limit - 1, 1000]) if beyond else _divisor(rng, limit)
    cube, rounding, status = product.draw_cube(rng, dtype, 0.3)
    if forward and product.id in ("atlas-a2", "atlas-a3") and dtype == "float32" and not status:
        # CANN's A2/A3 forward: its vector kernel computes FLOAT in FLOAT whatever the mode; its cube
        # kernel refuses 1 and 3, after the empty return (only the batch may be empty there)
        if _a2_vector_route(ch, h, w, k, pad, div, ceil):
            rounding = None
        elif cube in (1, 3) and n:
            status, rounding = REJECTED, None
    c = Case(op, dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], kernel=arrays[0], stride=arrays[1], padding=arrays[2], ceil=ceil,
                  count_include_pad=cip, divisor=div, cube=cube)
    if beyond and n * ch * h * w:
        c.reject(REJECTED, "divisorOverride")
    if status:
        c.reject(status, "cubeMathType")
    for name, values in zip(("kernel", "stride", "padding"), arrays):
        c.ints(name, values)
    c.num("ceil", ceil)
    c.num("count_include_pad", cip)
    c.num("divisor", div)
    c.num("cube", cube)
    d = SimpleNamespace(n=n, ch=ch, h=h, w=w, lead=lead, fmt="NCHW" if lead else "NCL", k=k, s=s, pad=pad,
                        ceil=ceil, cip=cip, div=div, rnd=ROUNDING[rounding] if rounding else None)
    d.pool = lambda x: F.avg_pool2d(x, k, s, pad, ceil, cip, div or None)
    return c, d


def avgpool(rand, dtype, product):
    c, d = _avg_case("avgpool", rand, dtype, product)
    n, ch, h, w, lead = d.n, d.ch, d.h, d.w, d.lead
    try:
        ho, wo = d.pool(torch.zeros(n, ch, h, w, dtype=torch.float64)).shape[2:]
    except RuntimeError:
        return None
    go = c.input("go", rand.randn(lead + [ch, ho, wo]), d.fmt).reshape(n, ch, ho, wo)
    c.input("self", rand.randn(lead + [ch, h, w]), d.fmt)
    c.output("gi", lead + [ch, h, w], d.fmt)

    def backward(g):
        if d.rnd:
            return _avg_rounded(g, h, w, d.k, d.s, d.pad, d.cip, d.div, d.rnd)
        x = torch.zeros(n, ch, h, w, dtype=torch.float64, requires_grad=True)
        d.pool(x).backward(g)
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


def _bits(m, planes, kk, count):
    """A bit mask's bits (ops.md: per plane and kernel position a row of bytes, bit j of output j at
    byte j / 8, least significant first), as (planes, kernel positions, outputs) booleans."""
    rows = m.numpy().view(np.uint8).reshape(planes, kk, -1)
    return torch.from_numpy(np.unpackbits(rows, axis=-1, bitorder="little")[..., :count].astype(bool))


def _bit_routes(bits, g, shape, k, s, pad):
    """The backward of a bit mask: every set bit routes its output's gradient to its kernel
    position's input, positions in the padding skipped."""
    n, ch, h, w = shape
    ho, wo = g.shape[2:]
    gi = torch.zeros(n * ch, h * w, dtype=torch.float64)
    g = g.reshape(n * ch, ho * wo)
    oh, ow = torch.arange(ho).repeat_interleave(wo), torch.arange(wo).repeat(ho)
    for kh in range(k[0]):
        for kw in range(k[1]):
            ih, iw = oh * s[0] - pad[0] + kh, ow * s[1] - pad[1] + kw
            inside = (ih >= 0) & (ih < h) & (iw >= 0) & (iw < w)
            on = bits[:, kh * k[1] + kw, :] & inside
            gi.scatter_add_(1, torch.where(inside, ih * w + iw, 0).expand(n * ch, -1), torch.where(on, g, 0.0))
    return gi


def maxpool(rand, dtype, product):
    """The forward, then the backward on its mask or on one of our own (products without the
    backward: the forward alone)."""
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
    fp16 = product.fp16_maxpool(dtype)  # atlas-training: FLOAT computed as FLOAT16
    try:
        y, ind = F.max_pool2d(ROUNDING["fp16" if fp16 else None](x), k, s, pad, 1, ceil, return_indices=True)
    except RuntimeError:
        return None
    ho, wo = y.shape[2:]
    # The mask: (kh * kw) rows of ((Ho * Wo + 15) / 16 + 1) * 32 bytes per plane; on atlas-a2 / a3
    # it starts with the int32 argmax of every output, planes in order, unless a 1x1 kernel's argmax
    # would not fit (Ho * Wo > 24); elsewhere it is the bit mask.
    kk, planes, count = k[0] * k[1], n * ch, ho * wo
    mask_shape = lead + [ch, kk, ((count + 15) // 16 + 1) * 32]
    bits = not product.int32_mask or (kk == 1 and count > 24)
    backward = product.maxpool_backward
    own_mask = backward and rng.random() < 0.5
    c.desc = dict(shape=[n, ch, h, w], kernel=arrays[0], stride=arrays[1], padding=arrays[2], dilation=dilation,
                  ceil=ceil, values=kind, own_mask=own_mask, bits=bits, fmt=fmt)
    out_shape = lead + [ch, ho, wo]
    c.output("out", out_shape, fmt)
    c.output("mask", mask_shape, fmt, dtype="int8")
    if backward:
        go = c.input("go", rand.randn(out_shape), fmt).reshape(n, ch, ho, wo)
        c.output("gi", lead + [ch, h, w], fmt)
    own = None
    if own_mask:  # the backward alone, on a mask of ours, with bytes it must not read (raw: no view)
        m = rand.np.integers(-128, 128, size=int(np.prod(mask_shape)), dtype=np.int8)
        if not bits:  # torch's indices, then garbage
            argmax = ind.numpy().astype(np.int32).reshape(-1).view(np.int8)
            m[:argmax.size] = argmax
        else:  # any number of bits per output, some into the padding; bits past Ho * Wo are no outputs
            density = rng.choice([0.02, 0.1, 0.5])
            m = np.packbits(rand.np.random(m.size * 8) < density, bitorder="little").view(np.int8)
            own = _bits(torch.from_numpy(m), planes, kk, count)
        c.input("bmask", torch.from_numpy(m).reshape(mask_shape), fmt, dtype="int8", contiguous=True)
    for name, v in zip(("kernel", "stride", "padding"), arrays):
        c.ints(name, v)
    c.ints("dilation", dilation)
    c.num("ceil", ceil)

    c.expect("out", y.reshape(out_shape), exact=True)
    if not bits:
        c.expect("mask", ind.reshape(-1).double(), exact=True,
                 extract=lambda m: torch.from_numpy(m.numpy().reshape(-1)[:4 * ind.numel()].view(np.int32).copy()))
    else:  # per output the kernel position of its one bit (-1: none, -2: several)
        oh, ow = torch.arange(ho).reshape(-1, 1), torch.arange(wo).reshape(1, -1)
        at = (ind // w - (oh * s[0] - pad[0])) * k[1] + (ind % w - (ow * s[1] - pad[1]))

        def position(m):
            b = _bits(m, planes, kk, count)
            one = torch.where(b.sum(1) == 1, b.int().argmax(1), torch.where(b.any(1), -2, -1))
            return one.reshape(-1).double()

        c.expect("mask", at.reshape(-1).double(), exact=True, extract=position)
    if backward:
        def gradient(g):
            g = ROUNDING["fp16" if fp16 else None](g)
            if own is not None:
                return _bit_routes(own, g, (n, ch, h, w), k, s, pad).reshape(lead + [ch, h, w])
            gi = torch.zeros(n, ch, h * w, dtype=torch.float64)
            return gi.scatter_add_(2, ind.reshape(n, ch, -1), g.reshape(n, ch, -1)).reshape(lead + [ch, h, w])

        c.expect("gi", gradient(go), gradient(go.abs()), ulp_dtype="float16" if fp16 else None)
    return c


def maxpool_idx(rand, dtype, product):
    """MaxPool2dWithIndices (CANN's INT32 or INT64 indices of the pooled shape, PyTorch's argmax),
    then, in FLOAT (CANN's A2/A3 backward takes FLOAT alone), its backward on those indices or on
    INT32 indices of the case's own: a random element of each output's window, -1 ("no maximum")
    one time in eight. FLOAT16 / BFLOAT16: the forward alone."""
    rng = rand.rng
    (n, ch, h, w), lead = _shape(rng, 0.15)
    arrays, k, s, pad = _attrs(rng, h, w)
    arrays = (arrays[0], [] if arrays[1] is None else arrays[1], arrays[2])  # (as maxpool: no NULL stride)
    dilation = rng.choice([[1], [1, 1]])
    ceil = rng.random() < 0.5
    fmt = rng.choice(["NCHW", "ND"] + ([] if lead else ["NCL"]))
    values, kind = _maxpool_values(rand, lead + [ch, h, w])
    c = Case("maxpool_idx", dtype, rand)
    x = c.input("self", values, fmt).reshape(n, ch, h, w)
    try:
        y, ind = F.max_pool2d(x, k, s, pad, 1, ceil, return_indices=True)
    except RuntimeError:
        return None
    ho, wo = y.shape[2:]
    out_shape = lead + [ch, ho, wo]
    backward = dtype == "float32"
    own = backward and rng.random() < 0.5
    # INT64 indices where no backward reads them (it takes INT32 only)
    index_dtype = "int64" if (not backward or own) and rng.random() < 0.5 else "int32"
    c.desc = dict(shape=[n, ch, h, w], kernel=arrays[0], stride=arrays[1], padding=arrays[2], dilation=dilation,
                  ceil=ceil, values=kind, own_indices=own, index_dtype=index_dtype, fmt=fmt)
    c.output("out", out_shape, fmt)
    c.output("ind", out_shape, fmt, dtype=index_dtype)
    if backward:
        go = c.input("go", rand.randn(out_shape), fmt).reshape(n, ch, ho, wo)
        c.output("gi", lead + [ch, h, w], fmt)
    routes = ind
    if own:
        oh, ow = torch.arange(ho).reshape(-1, 1), torch.arange(wo).reshape(1, -1)
        h0, w0 = (oh * s[0] - pad[0]).clamp(min=0), (ow * s[1] - pad[1]).clamp(min=0)
        h1, w1 = (oh * s[0] - pad[0] + k[0]).clamp(max=h), (ow * s[1] - pad[1] + k[1]).clamp(max=w)
        u = torch.from_numpy(rand.np.random((n, ch, ho, wo, 2)))
        ih = h0 + (u[..., 0] * (h1 - h0)).long().clamp(max=(h1 - h0 - 1).clamp(min=0))
        iw = w0 + (u[..., 1] * (w1 - w0)).long().clamp(max=(w1 - w0 - 1).clamp(min=0))
        routes = torch.where(torch.from_numpy(rand.np.random((n, ch, ho, wo)) < 0.125), -1, ih * w + iw)
        # contiguous: a broadcast (stride-0) draw would repeat one row's indices into other windows;
        # strided indices come with the forward's output
        c.input("bind", routes.reshape(out_shape), fmt, dtype="int32", contiguous=True)
    for name, v in zip(("kernel", "stride", "padding"), arrays):
        c.ints(name, v)
    c.ints("dilation", dilation)
    c.num("ceil", ceil)

    c.expect("out", y.reshape(out_shape), exact=True)
    c.expect("ind", ind.reshape(out_shape).to(getattr(torch, index_dtype)), exact=True)
    if not backward:
        return c

    def gradient(g):
        r = routes.reshape(n, ch, -1)
        keep = r >= 0
        gi = torch.zeros(n, ch, h * w, dtype=torch.float64)
        gi.scatter_add_(2, torch.where(keep, r, 0), torch.where(keep, g.reshape(n, ch, -1), 0.0))
        return gi.reshape(lead + [ch, h, w])

    c.expect("gi", gradient(go), gradient(go.abs()))
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


def _unpool_values(rand, shape, dtype):
    """Normal floats; integers over the dtype's whole range or near 0 (half the cases each); BOOL."""
    if dtype == "bool":
        return torch.from_numpy(rand.np.random(size=shape) < 0.5)
    if dtype not in INTS:
        return rand.randn(shape)
    info = np.iinfo(dtype)
    lo, hi = (int(info.min), int(info.max)) if rand.rng.random() < 0.5 else (max(int(info.min), -100), 100)
    return torch.from_numpy(rand.np.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64))


def _out_dtype(rng, dtype):
    """MaxUnpool2dBackward's out: gradOutput's dtype mostly, else one it casts to (no floating to an
    integer, nothing but BOOL to BOOL)."""
    if rng.random() < 0.6:
        return dtype
    floating = dtype not in INTS + ("bool",)
    return rng.choice([d for d in F32_F16 + INTS + ("bool",)
                       if (not floating or d in F32_F16) and (d != "bool" or dtype == "bool")])


def unpool(rand, dtype, product):
    """The gradient, a gather; out cast to the dtype the case draws (as torch's .to() casts)."""
    (n, ch, h, w), lead, (oh, ow), fmt, itype, top = _unpool_problem(rand.rng, False)
    out_dtype = _out_dtype(rand.rng, dtype)
    c = Case("unpool", dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], output_size=[oh, ow], indices=itype, out=out_dtype, fmt=fmt)
    go = c.input("go", _unpool_values(rand, lead + [ch, oh, ow], dtype), fmt)
    c.input("self", _unpool_values(rand, lead + [ch, h, w], dtype), fmt)
    ind = c.input("indices", torch.from_numpy(rand.np.integers(0, top, size=lead + [ch, h, w])), fmt, dtype=itype)
    c.output("gi", lead + [ch, h, w], fmt, dtype=out_dtype)
    c.ints("output_size", [oh, ow])
    gathered = go.reshape(n, ch, oh * ow).gather(2, ind.reshape(n, ch, h * w).long())
    ref = gathered.to(TORCH[dtype]).to(TORCH[out_dtype])  # the cast from gradOutput's own dtype
    c.expect("gi", ref.double() if ref.is_floating_point() else ref, exact=True,
             extract=lambda t: t.reshape(n, ch, h * w))
    return c


# ------------------------------------------------------------------------------ forward companions
def avgpool_fwd(rand, dtype, product):
    """aclnnAvgPool2d on the backward's draws."""
    c, d = _avg_case("avgpool_fwd", rand, dtype, product)
    n, ch, h, w, lead = d.n, d.ch, d.h, d.w, d.lead
    x = c.input("self", rand.randn(lead + [ch, h, w]), d.fmt).reshape(n, ch, h, w)
    try:
        y = d.pool(x)
    except RuntimeError:
        return None
    ho, wo = y.shape[2:]
    if d.rnd:
        y = _avg_rounded_fwd(x, ho, wo, d.k, d.s, d.pad, d.cip, d.div, d.rnd)
        mag = _avg_rounded_fwd(x.abs(), ho, wo, d.k, d.s, d.pad, d.cip, d.div, d.rnd)
    else:
        mag = d.pool(x.abs())
    c.output("out", lead + [ch, ho, wo], d.fmt)
    c.expect("out", y.reshape(lead + [ch, ho, wo]), mag.abs().reshape(lead + [ch, ho, wo]))
    return c


def unpool_fwd(rand, dtype, product):
    """aclnnMaxUnpool2d: a scatter, exact; duplicate indices (the last in row-major order wins, as in
    PyTorch's CPU kernel, which has no integer dtypes: numpy's assignment, whose last value wins too)."""
    (n, ch, h, w), lead, (oh, ow), fmt, itype, top = _unpool_problem(rand.rng, True)
    c = Case("unpool_fwd", dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], output_size=[oh, ow], indices=itype, fmt=fmt)
    x = c.input("self", _unpool_values(rand, lead + [ch, h, w], dtype), fmt).reshape(n, ch, h, w)
    ind = c.input("indices", torch.from_numpy(rand.np.integers(0, top, size=lead + [ch, h, w])), fmt, dtype=itype)
    c.output("out", lead + [ch, oh, ow], fmt)
    c.ints("output_size", [oh, ow])
    ind = ind.reshape(n, ch, h, w).long()
    if x.is_floating_point():
        y = torch._C._nn.max_unpool2d(x, ind, (oh, ow))
    else:
        y = np.zeros((n * ch, oh * ow), dtype=RAW[dtype])
        planes = np.arange(n * ch).reshape(-1, 1)
        y[planes, ind.reshape(n * ch, -1).numpy()] = x.reshape(n * ch, -1).numpy()
        y = torch.from_numpy(y)
    c.expect("out", y.reshape(lead + [ch, oh, ow]), exact=True)
    return c
