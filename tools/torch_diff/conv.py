"""aclnnConvolutionBackward against PyTorch's convolution_backward in float64: 1-D/2-D/3-D, groups
and depthwise, stride, dilation, symmetric and [top, bottom, left, right] padding, transposed with
outputPadding, every outputMask, NULL biasSizes, empty batches. Two cases in five aim at the
plugin's own kernels (README of plugins/convolution): MobileNet-like depthwise (direct kernels),
other depthwise (blocked kernels), small Cin, strided pointwise, wide planes. forward(): the
forward companion aclnnConvolution on the same geometries, with or without bias."""
import math

import torch
import torch.nn.functional as F

from harness import Case
from products import REJECTED, ROUNDING, fp16

KINDS = ["std", "dw_direct", "dw_general", "small_cin", "pointwise", "wide"]
KIND_WEIGHTS = [0.6, 0.08, 0.08, 0.08, 0.08, 0.08]


def _geometry(rng):
    """A random problem, or None when the draw is inconsistent (the caller draws again)."""
    kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
    sd = rng.choices([1, 2, 3], [0.33, 0.42, 0.25])[0]
    transposed = rng.random() < 0.5
    n = 0 if rng.random() < 0.02 else rng.randint(1, 3)
    maxc = 8 if kind in ("std", "pointwise") else 24
    g = rng.choices(range(1, 9), [0.45, 0.15, 0.08, 0.1, 0.03, 0.04, 0.03, 0.12])[0]
    depthwise = rng.random() < 0.3
    if kind in ("dw_direct", "dw_general"):
        transposed, depthwise = False, True
        sd = 2 if kind == "dw_direct" else rng.choice([1, 2])
        g = rng.randint(2, maxc)
    elif kind == "small_cin":
        transposed, sd, g, depthwise = False, 2, 1, False
    elif kind == "pointwise":
        transposed = False
    cin_g = rng.randint(1, 5) if kind == "small_cin" else 1 if depthwise else rng.randint(1, max(1, maxc // g))
    cout_g = rng.randint(1, max(1, maxc // g))
    if depthwise and (kind in ("dw_direct", "dw_general") or rng.random() < 0.6):
        cout_g = 1
    if g * max(cin_g, cout_g) > maxc:
        return None
    maxsp = {"wide": 24 if sd < 3 else 8, "std": 9 if sd < 3 else 6, "pointwise": 9 if sd < 3 else 6}.get(
        kind, 40 if sd == 2 else 64)
    asym = sd == 2 and rng.random() < 0.25
    dw_stride = rng.choice([1, 2])
    p = dict(kind=kind, sd=sd, transposed=transposed, N=n, groups=g, Cin=g * cin_g, Cout=g * cout_g, asym=asym,
             k=[], s=[], d=[], pl=[], pr=[], opad=[], x=[], y=[])
    for _ in range(sd):
        k, s = rng.randint(1, 4 if sd < 3 else 3), rng.choices([1, 2, 3], [0.5, 0.3, 0.2])[0]
        d = rng.choices([1, 2, 3], [0.6, 0.25, 0.15])[0]
        pl = rng.randint(0, 3)
        pr = rng.randint(0, 3) if asym else pl
        x = rng.randint(1, maxsp if not transposed else min(maxsp, 7))
        if kind == "dw_direct":
            k, s, d, pl, pr = 3, dw_stride, 1, 1, 1
        elif kind == "small_cin":
            k, s, d, pl, pr = 3, 1, 1, 1, 1
        elif kind == "pointwise":
            k, s, pl, pr = 1, rng.randint(1, 3), 0, 0
        elif kind == "dw_general":
            k = rng.randint(1, 8 if sd == 2 else 64)
        op = 0
        if not transposed:
            reach = x + pl + pr - (d * (k - 1) + 1)
            if reach < 0:
                return None
            y = reach // s + 1
        else:
            op = rng.randint(0, max(s, d) - 1) if rng.random() < 0.5 else 0
            y = (x - 1) * s - pl - pr + d * (k - 1) + 1 + op
            if not 1 <= y <= 30:
                return None
        for key, v in zip(("k", "s", "d", "pl", "pr", "opad", "x", "y"), (k, s, d, pl, pr, op, x, y)):
            p[key].append(v)
    if kind == "dw_general" and math.prod(p["k"]) > 64:
        return None
    if sd == 3 and n * p["Cin"] * math.prod(p["x"]) * p["Cout"] * math.prod(p["k"]) > 400000:
        return None
    return p


def _convolve(p, x, w, b):
    """The forward in float64, differentiable. Asymmetric padding, which aten's op has no form for,
    pads the input explicitly / crops a full transposed output."""
    if p["pl"] == p["pr"] and not p.get("slack"):
        return torch.ops.aten.convolution(x, w, b, p["s"], p["pl"], p["d"], p["transposed"], p["opad"], p["groups"])
    sd = p["sd"]
    if not p["transposed"]:
        pads = [v for i in reversed(range(sd)) for v in (p["pl"][i], p["pr"][i])]
        return [F.conv1d, F.conv2d, F.conv3d][sd - 1](F.pad(x, pads), w, b, p["s"], 0, p["d"], p["groups"])
    full = [F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d][sd - 1](
        x, w, None, p["s"], 0, 0, p["groups"], p["d"])
    y = F.pad(full, [v for i in reversed(range(sd)) for v in (0, max(0, p["opad"][i] - p["pr"][i]))])
    for i in range(sd):
        y = y.narrow(2 + i, p["pl"][i], p["y"][i])
    return y if b is None else y + b.reshape([1, -1] + [1] * sd)  # the bias on every output, the padded margin too


def _reference(p, go, x, w):
    """(gradInput, gradWeight, gradBias) in float64."""
    if p["pl"] == p["pr"] and not p.get("slack"):
        return torch.ops.aten.convolution_backward(go, x, w, [p["Cout"]], p["s"], p["pl"], p["d"], p["transposed"],
                                                   p["opad"], p["groups"], [True, True, True])
    x, w = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    _convolve(p, x, w, None).backward(go)
    return x.grad, w.grad, go.sum(dim=[0] + list(range(2, 2 + p["sd"])))


def _draw(rng):
    """A problem: its geometry, the input, output and weight shapes, and the activations' format."""
    p = None
    while p is None:
        p = _geometry(rng)
    n, cin, cout = p["N"], p["Cin"], p["Cout"]
    w_shape = ([cin, cout // p["groups"]] if p["transposed"] else [cout, cin // p["groups"]]) + p["k"]
    fmt = ["ND" if rng.random() < 0.3 else "NCL", "NCHW", "NCDHW"][p["sd"] - 1]
    return p, [n, cin] + p["x"], [n, cout] + p["y"], w_shape, fmt


def _attributes(c, p, cube):
    """The geometry's arguments, in both operators' forms (4-element padding when asymmetric)."""
    c.ints("stride", p["s"])
    c.ints("padding", [v for pair in zip(p["pl"], p["pr"]) for v in pair] if p["asym"] else p["pl"])
    c.ints("dilation", p["d"])
    c.num("transposed", p["transposed"])
    c.ints("output_padding", p["opad"])
    c.num("groups", p["groups"])
    c.num("cube", cube)


def _product_rules(c, rng, dtype, product):
    """The cubeMathType (1 to 3 in a third of the draws where 0 is taken) and the rounding of the
    cube operands (gradOutput, input, weight; never the bias or gradBias, vector-unit sums); the
    calls the product rejects."""
    cube, rounding, status = product.draw_cube(rng, dtype, 0.35)
    c.desc["cube"] = cube
    if status:
        c.reject(status, "cubeMathType")
    if c.desc["sd"] > product.conv_ranks:  # 3-D on atlas-training / inference, checked first
        c.reject(REJECTED, "rank")
    return cube, ROUNDING[rounding]


def _forward_plan_rules(c, p, dts, product):
    """What aclnnConvolution's own checks (after the core's, so called before _product_rules: the
    last reject() is the one the call meets) refuse: a transposed convolution whose data-gradient
    padding (k - 1) * dilation - padding passes 255 (3-D: or is negative; CANN reads the padding
    array as given, element 1 of a 4-element one being its bottom), then what the product runs.
    `dts`: the dtypes of input, weight, output and (if any) bias."""
    sd = p["sd"]
    if product.id == "atlas-200i-500-a2" and p["transposed"]:
        c.reject(REJECTED, "transposed must be false")
    if product.id == "atlas-inference" and sd == 3:
        if p["transposed"]:
            c.reject(REJECTED, "transposed must be false")
        elif any(d != "float16" for d in dts):
            c.reject(REJECTED, "FLOAT16")
    if not p["transposed"] or p["N"] == 0:  # (an empty tensor skips the padding check)
        return
    pad = [v for pair in zip(p["pl"], p["pr"]) for v in pair] if p["asym"] else p["pl"]

    def beyond(k, i, nonnegative):
        v = (p["k"][k] - 1) * p["d"][0 if sd == 1 else i] - pad[0 if len(pad) == 1 else i]
        return v > 255 or (nonnegative and v < 0)
    if beyond(*{1: (0, 1, False), 2: (1, 1, False), 3: (2, 2, True)}[sd]) or (sd > 1 and beyond(sd - 2, sd - 2, sd == 3)):
        c.reject(REJECTED, "padding")


_ROUND = {"float16": fp16, "bfloat16": lambda t: t.to(torch.float32).to(torch.bfloat16).double(), "float32": lambda t: t}
_COARSE = ["float32", "float16", "bfloat16"]  # by ulp


def _forward_dtypes(p, dtype, wdt, odt, cube, product):
    """CANN's GetConvolutionOpDtype: (the cube's dtype, its kernel's output dtype, whether the bias is
    cast to FLOAT16). Input and weight promoted (FLOAT if either is; FLOAT16 with BF16: FLOAT); FLOAT16
    under USE_FP16 and, for FLOAT or BF16, where the cube has no FP32; a transposed kernel writes FLOAT
    for a FLOAT output, FLOAT16 without an FP32 cube or under USE_FP16."""
    fp32 = product.id not in ("atlas-training", "atlas-inference")
    upper = dtype if dtype == wdt else "float32"
    cdt = "float16" if cube == 2 or (upper != "float16" and not fp32) else upper
    kdt = "float32" if p["transposed"] and odt == "float32" else cdt
    if p["transposed"] and (not fp32 or cube == 2):
        kdt = "float16"
    return cdt, kdt, cdt == "float16" and not (p["transposed"] and fp32)


def generate(rand, dtype, product):
    rng = rand.rng
    p, x_shape, go_shape, w_shape, fmt = _draw(rng)
    n, cout = p["N"], p["Cout"]
    # A transposed gradOutput up to stride - 1 larger than outputPadding makes it: CANN's implicit
    # outputPadding (the gradients of the transposed convolution with the larger one).
    ref_p = p
    if p["transposed"] and rng.random() < 0.3 and max(p["s"]) > 1:
        extra = [rng.randint(0, s - 1) for s in p["s"]]
        ref_p = dict(p, slack=extra, y=[y + e for y, e in zip(p["y"], extra)],
                     opad=[o + e for o, e in zip(p["opad"], extra)])
        go_shape = [n, cout] + ref_p["y"]
    mask = [rng.random() < 0.7 for _ in range(3)] if rng.random() < 0.6 else [True] * 3
    # CANN wants biasSizes on the empty-tensor path when gradBias is asked for; PyTorch does not.
    bias_sizes = None if rng.random() < 0.15 and not (n == 0 and mask[2]) else [cout]
    c = Case("conv", dtype, rand)
    c.desc = dict(p, mask=mask, bias_sizes=bias_sizes, fmt=fmt, slack=ref_p.get("slack"))
    cube, rnd = _product_rules(c, rng, dtype, product)
    # CANN's 3-D weight gradient: a grouped FLOAT gradWeight refuses USE_FP16 (its last check)
    if not c.status and p["sd"] == 3 and p["groups"] > 1 and mask[1] and dtype == "float32" and cube == 2:
        c.reject(REJECTED, "cubeMathType 2 (USE_FP16)")
    go = c.input("go", rand.uniform(go_shape), fmt)
    x = c.input("in", rand.uniform(x_shape), fmt)
    w = c.input("w", rand.uniform(w_shape), fmt)
    for on, name, shape, f in zip(mask, ("gi", "gw", "gb"), (x_shape, w_shape, [cout]), (fmt, fmt, "ND")):
        if on or rng.random() < 0.7:  # a masked-off output is NULL or must stay untouched
            c.output(name, shape, f, idle=not on)
    c.ints("bias_sizes", bias_sizes)
    _attributes(c, p, cube)
    c.bools("mask", mask)
    try:
        refs = _reference(ref_p, rnd(go), rnd(x), rnd(w))
        mags = _reference(ref_p, rnd(go).abs(), rnd(x).abs(), rnd(w).abs())
    except RuntimeError:
        return None  # PyTorch rejects the problem too
    spatial = [0] + list(range(2, 2 + p["sd"]))
    refs, mags = refs[:2] + (go.sum(dim=spatial),), mags[:2] + (go.abs().sum(dim=spatial),)
    for on, name, ref, mag in zip(mask, ("gi", "gw", "gb"), refs, mags):
        if on:
            c.expect(name, ref, mag)
    return c


def forward(rand, dtype, product):
    """aclnnConvolution, the forward companion, on the same geometries: with and without bias; one
    draw in four with the weight, bias and output in any dtype the product takes (CANN promotes)."""
    rng = rand.rng
    p, x_shape, y_shape, w_shape, fmt = _draw(rng)
    fmt = "NCL" if p["sd"] == 1 else fmt  # CANN's forward takes no ND activations
    with_bias = rng.random() < 0.7
    dts = product.dtypes("conv_fwd")
    wdt, bdt, odt = (rng.choice(dts) for _ in range(3)) if rng.random() < 0.25 else (dtype,) * 3
    c = Case("conv_fwd", dtype, rand)
    c.desc = dict(p, bias=with_bias, fmt=fmt, weight_dtype=wdt, bias_dtype=bdt, out_dtype=odt)
    x = c.input("in", rand.uniform(x_shape), fmt)
    w = c.input("w", rand.uniform(w_shape), fmt, dtype=wdt)
    b = c.input("bias", rand.uniform([p["Cout"]]), "ND", dtype=bdt) if with_bias else None
    c.output("out", y_shape, fmt, dtype=odt)
    cube, rnd = _forward_cube(c, rng, p, dtype, wdt, odt, with_bias and bdt, product)
    cdt, kdt, bias16 = _forward_dtypes(p, dtype, wdt, odt, cube, product)
    _attributes(c, p, cube)

    def operand(t, tdt):  # the operand as the cube takes it
        return rnd(t) if tdt == "float32" else fp16(t) if tdt == "bfloat16" and cdt == "float16" else t
    bias_in = fp16(b) if bias16 and b is not None else b
    try:
        ref = _convolve(p, operand(x, dtype), operand(w, wdt), bias_in)
        mag = _convolve(p, operand(x, dtype).abs(), operand(w, wdt).abs(), None if b is None else b.abs())
    except RuntimeError:
        return None  # PyTorch rejects the problem too
    # the kernel's dtype, then the output's: within an ulp of the coarser
    c.expect("out", _ROUND[kdt](ref), mag, ulp_dtype=max(kdt, odt, key=_COARSE.index))
    return c


def _forward_cube(c, rng, p, dtype, wdt, odt, bdt, product):
    """The cubeMathType (its rules on the promoted dtype) and the rounding of FLOAT operands; every
    refusal, latest check first: the transposed kernel (361001), the plugin's checks, the cube, the rank."""
    upper = dtype if dtype == wdt else "float32"
    cube, rounding, status = product.draw_cube(rng, upper, 0.35)
    c.desc["cube"] = cube
    if not status and p["N"] > 0:
        cdt, kdt, _ = _forward_dtypes(p, dtype, wdt, odt, cube, product)
        if p["transposed"] and kdt != cdt:
            c.reject(361001, "no transposed kernel")
    _forward_plan_rules(c, p, [dtype, wdt, odt] + ([bdt] if bdt else []), product)
    if status:
        c.reject(status, "cubeMathType")
    if p["sd"] not in product.conv_fwd_sds:  # the core's rank check, first
        c.reject(REJECTED, "rank")
    return cube, ROUNDING[rounding]
