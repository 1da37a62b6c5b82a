#!/usr/bin/python3
"""Writes the PyTorch golden files of the max_pool2d_with_mask tests (run with Debian's python3-torch
1.13: /usr/bin/python3 gen_golden.py). Each case runs torch.ops.aten.max_pool2d_with_indices and
max_pool2d_with_indices_backward on CPU and records, one line each, as exact hex floats / integers:
  name, dtype, dims, kernel, stride, padding, ceil, self, out, indices, grad, grad_input
The tests compare our forward (out and the int32 argmax of atlas-a2) and our backward (with the mask
built from these indices) bit for bit."""
import os
import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def values(t):
    return " ".join(float(v).hex() for v in t.reshape(-1).to(torch.float64).tolist())


def case(name, dtype, x, kernel, stride, padding, ceil, grad_scale=None, seed=0):
    g = torch.Generator().manual_seed(seed + 1)
    x = x.to(dtype)
    out, idx = torch.ops.aten.max_pool2d_with_indices(x, kernel, stride, padding, [1, 1], ceil)
    if grad_scale is None:  # FLOAT: random normal gradients, PyTorch's order of summation is ours
        grad = torch.randn(out.shape, generator=g).to(dtype)
    else:  # BF16: small integers, so that every partial sum is exact whatever the order
        grad = (torch.randint(-16, 17, out.shape, generator=g).to(torch.float32) * grad_scale).to(dtype)
    gi = torch.ops.aten.max_pool2d_with_indices_backward(grad, x, kernel, stride, padding, [1, 1], ceil, idx)
    lines = [
        "name " + name,
        "dtype " + str(dtype).replace("torch.", ""),
        "dims " + " ".join(str(d) for d in x.shape),
        "kernel " + " ".join(map(str, kernel)),
        "stride " + " ".join(map(str, stride)),
        "padding " + " ".join(map(str, padding)),
        "ceil " + ("1" if ceil else "0"),
        "self " + values(x),
        "out " + values(out),
        "indices " + " ".join(str(v) for v in idx.reshape(-1).tolist()),
        "grad " + values(grad),
        "grad_input " + values(gi),
    ]
    with open(os.path.join(HERE, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    gen = torch.Generator().manual_seed(1234)
    rn = lambda *s: torch.randn(*s, generator=gen)
    # overlapping windows (k3 s2 p1), the ResNet stem geometry in small
    case("k3s2p1_f32", torch.float32, rn(2, 3, 9, 9), [3, 3], [2, 2], [1, 1], False, seed=1)
    # ceil mode with a partial last window, rectangular kernel / stride / padding
    case("k3x2s2x1p1x0_ceil_f32", torch.float32, rn(1, 2, 10, 7), [3, 2], [2, 1], [1, 0], True, seed=2)
    # rank 3 (C, H, W), ceil mode
    case("rank3_k2s2_ceil_f32", torch.float32, rn(3, 8, 11), [2, 2], [2, 2], [0, 0], True, seed=3)
    # ties (first wins), NaN (the last NaN wins), -inf windows, -0.0 vs +0.0
    x = torch.tensor([[0.0, -0.0, 2.0, 2.0, 1.0, 1.0],
                      [2.0, 2.0, float("nan"), 0.5, float("-inf"), float("-inf")],
                      [1.0, float("nan"), 3.0, 3.0, float("-inf"), float("-inf")],
                      [-0.0, 0.0, 3.0, 1.0, 1.0, 1.0],
                      [5.0, 5.0, 5.0, 5.0, float("nan"), 7.0],
                      [5.0, 5.0, 5.0, 5.0, 7.0, float("nan")]]).reshape(1, 1, 6, 6)
    case("ties_nan_f32", torch.float32, x, [3, 3], [2, 2], [1, 1], False, seed=4)
    case("ties_k2s2_f32", torch.float32, x, [2, 2], [2, 2], [0, 0], False, seed=5)
    # deep kernel (kH > 16: the scalar decode of the int32 mask) with stride and padding on W
    case("k17x3s1x2p0x1_f32", torch.float32, rn(1, 2, 20, 9), [17, 3], [1, 2], [0, 1], False, seed=6)
    # BF16: values exact in bf16, integer gradients (PyTorch 1.13 sums bf16 in bf16)
    xb = (torch.randint(-64, 65, (2, 2, 8, 8), generator=gen).to(torch.float32) / 8)
    case("k3s2p1_bf16", torch.bfloat16, xb, [3, 3], [2, 2], [1, 1], False, grad_scale=0.25, seed=7)


if __name__ == "__main__":
    main()
