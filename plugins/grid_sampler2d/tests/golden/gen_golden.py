#!/usr/bin/python3
"""Writes the PyTorch golden file of the grid_sampler2d tests (run with Debian's python3-torch 1.13:
/usr/bin/python3 gen_golden.py). Each case runs torch.ops.aten.grid_sampler_2d_backward on the CPU
in float64 (and a few in float32) and records one block of lines, values as shortest round-trip decimals:
  case NAME DTYPE N C H W Ho Wo interp padding align
  input ... / grid ... / grad ... / grad_input ... / grad_grid ... / end
The 18 combinations of PyTorch's own sweep (5x5 input, N1 C2 to stay small), grids partly outside [-1, 1], and grids
exactly on the border pixels and reflection folds (R4). No NaN grids: PyTorch 1.13 crashes on
them with border padding."""
import os
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def values(t):
    return " ".join(repr(float(v)) for v in t.reshape(-1).to(torch.float64).tolist())


def case(out, name, dtype, n, c, h, w, ho, wo, interp, padding, align, grid=None, seed=0):
    g = torch.Generator().manual_seed(seed)
    # dyadic values: exact in float32, so float32 cases differ from float64 only by rounding
    x = (torch.randint(-256, 257, (n, c, h, w), generator=g).to(torch.float64) / 64).to(dtype)
    go = (torch.randint(-256, 257, (n, c, ho, wo), generator=g).to(torch.float64) / 64).to(dtype)
    if grid is None:
        grid = torch.randint(-358, 359, (n, ho, wo, 2), generator=g).to(torch.float64) / 256
    grid = grid.to(dtype)
    gi, gg = torch.ops.aten.grid_sampler_2d_backward(go, x, grid, interp, padding, align, [True, True])
    out.append("case %s %s %d %d %d %d %d %d %d %d %d" % (name, str(dtype).replace("torch.", ""), n, c, h, w, ho, wo,
                                                         interp, padding, int(align)))
    for key, t in (("input", x), ("grid", grid), ("grad", go), ("grad_input", gi), ("grad_grid", gg)):
        out.append(key + " " + values(t))
    out.append("end")


def main():
    out = []
    seed = 1
    for interp in range(3):
        for padding in range(3):
            for align in (False, True):
                name = "%s_%s_%s" % (("bilinear", "nearest", "bicubic")[interp], ("zeros", "border", "reflection")[padding],
                                     "align" if align else "noalign")
                case(out, name, torch.float64, 1, 2, 5, 5, 4, 5, interp, padding, align, seed=seed)
                seed += 1
    # R4: x and y exactly at -1 and 1, at the border pixel centres and on the reflection folds
    pts = [-1.0, 1.0, -0.8, 0.8, -1.25, 3.0]
    grid = torch.tensor([[[[x, y] for x in pts] for y in pts]], dtype=torch.float64)
    for interp in (0, 2):
        for padding in (1, 2):
            for align in (False, True):
                name = "border_%s_%s_%s" % (("bilinear", "", "bicubic")[interp], ("", "border", "reflection")[padding],
                                            "align" if align else "noalign")
                case(out, name, torch.float64, 1, 1, 5, 5, len(pts), len(pts), interp, padding, align, grid=grid, seed=seed)
                seed += 1
    # float32: the image-warp style sample, every mode
    for interp in range(3):
        case(out, "f32_%d" % interp, torch.float32, 1, 2, 9, 11, 6, 7, interp, interp % 3, interp == 1, seed=seed)
        seed += 1
    with open(os.path.join(HERE, "grid_sampler2d_backward.txt"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
