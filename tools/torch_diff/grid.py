"""aclnnGridSampler2DBackward against PyTorch's grid_sample backward: bilinear, nearest, bicubic;
zeros, border, reflection padding; alignCorners; each outputMask; grids inside, around and far
outside [-1, 1], whole images beside the plane, and on exact pixel centres and edges; one case in
ten large (up to 40 channels, 90x90 output pixels: several bands of the one-task-per-image path)."""
import torch
import torch.nn.functional as F

from harness import Case
from products import REJECTED

# gridGrad is a difference of neighbouring samples, scaled by the plane size: its rounding error
# follows the tensor's scale, not the element's (hence the 0.1 * max term), and a coordinate on an
# integer may floor either way between FLOAT and float64 (hence both references). Where the float64
# sum cancels to about 0, a FLOAT sum keeps the rounding of its terms: twice PyTorch's own FLOAT
# error there is allowed too (a bicubic gridGrad of 1.2e-5 against 0 and PyTorch's FLOAT 2.6e-5).
GRID_RTOL = 1e-4


def _magnitude(ref, ref32=None):
    """The tolerance's magnitude (times the rtol): the element's, a tenth of the tensor's, and twice
    what PyTorch's FLOAT result is off by (none for DOUBLE)."""
    scale = max(1.0, float(ref.abs().max())) if ref.numel() else 1.0
    mag = ref.abs() + 0.1 * scale
    return mag if ref32 is None else mag + 2 * (ref - ref32).nan_to_num(0.0).abs() / GRID_RTOL


def _rtol(dtype):
    """GRID_RTOL for FLOAT and the 16-bit dtypes (whose one ulp dominates); DOUBLE's own scale."""
    return 1e-12 if dtype == "float64" else GRID_RTOL


def _nudged(grid):
    """The grid a little up and a little down: DOUBLE's other answers where a coordinate lands on a
    pixel boundary, which two exact formulas may floor either way. 2^-48 of the grid's scale moves
    the pixel coordinate (at most 64 pixels here) by several of its ulps, and no result by more than
    ~1e-13 of the tolerance's magnitude where it is continuous."""
    d = 2.0 ** -48 * grid.abs().clamp(min=1.0)
    return [grid + d, grid - d]


def _grid(rand, n, ho, wo, w):
    rng = rand.rng
    r = rng.random()
    if r < 0.5:
        return rand.uniform([n, ho, wo, 2], -1.3, 1.3)
    if r < 0.6:  # each image wholly above or below the plane (or left or right of it): border padding clips
        g = rand.uniform([n, ho, wo, 2], -1.3, 1.3)
        for i in range(n):
            axis, side = rng.randint(0, 1), rng.choice([-1.0, 1.0])
            g[i, :, :, axis] = side * rand.uniform([ho, wo], 1.0001, 3.0)
        return g
    if r < 0.8:
        return rand.uniform([n, ho, wo, 2], -4, 4)
    special = [-1.0, 1.0, 0.0, -0.5, 0.5, 1.0001, -1.0001, 2.0, -3.0, 3.5]
    special += [(2 * i + 1) / w - 1 for i in range(w)] + [2 * i / max(w - 1, 1) - 1 for i in range(w)]
    g = rand.np.choice(special, size=(n, ho, wo, 2))
    some = rand.np.random(g.shape) < 0.4
    g[some] = rand.np.uniform(-1.2, 1.2, size=int(some.sum()))
    return torch.from_numpy(g)


def _backward(go, inp, grid, interp, pad, align, dtype):
    i = inp.to(dtype, copy=True).requires_grad_(True)
    g = grid.to(dtype, copy=True).requires_grad_(True)
    y = F.grid_sample(i, g, mode=["bilinear", "nearest", "bicubic"][interp],
                      padding_mode=["zeros", "border", "reflection"][pad], align_corners=align)
    y.backward(go.to(dtype))
    return i.grad.double(), g.grad.double()


def generate(rand, dtype, product):
    rng = rand.rng
    n, ch, h, w = rng.randint(1, 3), rng.randint(1, 5), rng.randint(1, 12), rng.randint(1, 12)
    ho, wo = rng.randint(1, 8), rng.randint(1, 8)
    if rng.random() < 0.1:  # wide channel blocks, and images of more than one band (4096 output pixels)
        ch, h, w = rng.randint(1, 40), rng.randint(13, 64), rng.randint(13, 64)
        ho, wo = rng.randint(40, 90), rng.randint(40, 90)
    interp, pad, align = rng.randint(0, 2), rng.randint(0, 2), rng.random() < 0.5
    mask = (True, True) if rng.random() < 0.8 else rng.choice([(True, False), (False, True)])
    fmt = rng.choice(["ND", "NCHW"])
    c = Case("grid", dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], out=[ho, wo], interpolation=interp, padding=pad, align_corners=align,
                  mask=mask, fmt=fmt)
    go = c.input("go", rand.randn([n, ch, ho, wo]), fmt)
    inp = c.input("input", rand.randn([n, ch, h, w]), fmt)
    grid = c.input("grid", _grid(rand, n, ho, wo, w), fmt)
    c.output("input_grad", [n, ch, h, w], fmt, idle=not mask[0])
    c.output("grid_grad", [n, ho, wo, 2], fmt, idle=not mask[1])
    c.num("interpolation", interp)
    c.num("padding", pad)
    c.num("align_corners", align)
    c.bools("mask", mask)
    r64 = _backward(go, inp, grid, interp, pad, align, torch.float64)
    if dtype != "float64":  # (reference, FLOAT's answer)
        others = [(r,) for r in _backward(go, inp, grid, interp, pad, align, torch.float32)]
        mags = [_magnitude(ref, r32) for ref, (r32,) in zip(r64, others)]
    else:  # (grid one ulp up, one ulp down)
        others = list(zip(*[_backward(go, inp, g, interp, pad, align, torch.float64) for g in _nudged(grid)]))
        mags = [_magnitude(ref) for ref in r64]
    for on, name, ref, alt, mag in zip(mask, ("input_grad", "grid_grad"), r64, others, mags):
        if on:
            c.expect(name, [ref, *alt], mag, rtol=_rtol(dtype))
    return c


def forward(rand, dtype, product):
    """aclnnGridSampler2D, the forward companion, on the same draws, against PyTorch's float64 and
    FLOAT results (a coordinate on an integer may floor either way between them)."""
    rng = rand.rng
    n, ch, h, w = rng.randint(1, 3), rng.randint(1, 5), rng.randint(1, 12), rng.randint(1, 12)
    ho, wo = rng.randint(1, 8), rng.randint(1, 8)
    if rng.random() < 0.1:
        ch, h, w = rng.randint(1, 40), rng.randint(13, 64), rng.randint(13, 64)
        ho, wo = rng.randint(40, 90), rng.randint(40, 90)
    interp, pad, align = rng.randint(0, 2), rng.randint(0, 2), rng.random() < 0.5
    # One draw in twenty empties a dimension: CANN checks the call as any other (an empty input plane
    # is 161002), then computes nothing.
    empty = rng.choice(["n", "ch", "h", "w", "ho", "wo"]) if rng.random() < 0.05 else None
    shape = dict(n=n, ch=ch, h=h, w=w, ho=ho, wo=wo)
    if empty:
        shape[empty] = 0
    fmt = rng.choice(["ND", "NCHW", "NHWC", "NCL"])  # CANN reads every layout tag as N, C, H, W
    c = Case("grid_fwd", dtype, rand)
    c.desc = dict(shape=[n, ch, h, w], out=[ho, wo], interpolation=interp, padding=pad, align_corners=align, fmt=fmt,
                  empty=empty)
    if empty in ("h", "w"):
        c.reject(REJECTED, "H and W must not be 0")
    elif interp == 2 and not product.bicubic_forward(dtype) and not empty:
        c.reject(REJECTED, "interpolationMode")
    inp = c.input("input", rand.randn([shape["n"], shape["ch"], shape["h"], shape["w"]]), fmt)
    grid = c.input("grid", _grid(rand, shape["n"], shape["ho"], shape["wo"], max(shape["w"], 1)), fmt)
    c.output("out", [shape["n"], shape["ch"], shape["ho"], shape["wo"]], fmt, idle=bool(empty))
    c.num("interpolation", interp)
    c.num("padding", pad)
    c.num("align_corners", align)
    if empty:
        return c
    def sample(g, t):
        return F.grid_sample(inp.to(t), g.to(t), mode=["bilinear", "nearest", "bicubic"][interp],
                             padding_mode=["zeros", "border", "reflection"][pad], align_corners=align).double()

    if dtype != "float64":
        refs = [sample(grid, torch.float64), sample(grid, torch.float32)]
        c.expect("out", refs, _magnitude(*refs), rtol=GRID_RTOL)
    else:
        ref = sample(grid, torch.float64)
        c.expect("out", [ref] + [sample(g, torch.float64) for g in _nudged(grid)], _magnitude(ref), rtol=_rtol(dtype))
    return c
