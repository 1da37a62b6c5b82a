"""What each product accepts and how it rounds, as the generators need it: products.md's tables,
written out here rather than read from configs/products/, so that a run checks the profiles and the
manifests too. A family's dtypes are the ones torch_diff draws (DOUBLE in MaxUnpool2d and the grid
sampler, the integers in MaxUnpool2d(Backward))."""
import numpy as np
import torch

from harness import ACL

F32_F16 = ("float32", "float16")
FLOATS = F32_F16 + ("bfloat16",)
INTS = ("int8", "uint8", "int16", "int32", "int64")
ALL = FLOATS + ("float64",) + INTS + ("bool",)
IDS = ("atlas-a2", "atlas-a3", "atlas-training", "atlas-inference", "atlas-200i-500-a2")
REJECTED = 161002  # ACLNN_ERR_PARAM_INVALID: what a product refuses (an operator, dtype, rank, mode)

# family -> product -> the dtypes its operators take there (products.md; the forwards' manifests)
_A2 = {"atlas-a2": FLOATS, "atlas-a3": FLOATS}
_A2_TRAINING_INFERENCE = dict(_A2, **{"atlas-training": F32_F16, "atlas-inference": F32_F16})
DTYPES = {
    "conv": _A2_TRAINING_INFERENCE,
    "conv_fwd": dict(_A2_TRAINING_INFERENCE, **{"atlas-200i-500-a2": FLOATS}),
    "avgpool": _A2_TRAINING_INFERENCE,
    "avgpool_fwd": _A2_TRAINING_INFERENCE,
    # atlas-inference has the forward alone, FLOAT only: the family runs no backward there
    "maxpool": dict(_A2, **{"atlas-training": F32_F16, "atlas-inference": ("float32",)}),
    "maxpool_idx": _A2,  # MaxPool2dWithIndices(Backward): CANN's A2 / A3 only; the backward in FLOAT alone
    "unpool": {p: F32_F16 + INTS + ("bool",) for p in ("atlas-a2", "atlas-a3", "atlas-training")},
    "unpool_fwd": {p: F32_F16 + ("float64",) + INTS for p in ("atlas-a2", "atlas-a3")},
    "grid": {"atlas-a2": FLOATS + ("float64",), "atlas-a3": FLOATS + ("float64",),
             "atlas-training": F32_F16 + ("float64",)},
    "grid_fwd": {p: F32_F16 + ("float64",) for p in IDS},  # no BF16 in CANN's forward
}

# cubeMathType -> dtype -> what the cube unit does with it: None keeps the dtype, "hf32" / "fp16"
# round FLOAT inputs before the math, "reject" is 161002. Any other mode is 161002 everywhere.
_CUBE_A2 = {
    0: {"float32": None, "float16": None, "bfloat16": None},
    1: {"float32": "hf32", "float16": None, "bfloat16": None},
    2: {"float32": "fp16", "float16": None, "bfloat16": "reject"},
    3: {"float32": "hf32", "float16": None, "bfloat16": None},
}
_CUBE_NO_FP32 = {  # atlas-training / atlas-inference: no FP32 and no HF32 in the cube unit
    0: {"float32": "reject", "float16": None, "bfloat16": "reject"},
    1: {"float32": "fp16", "float16": None, "bfloat16": "reject"},
    2: {"float32": "fp16", "float16": None, "bfloat16": "reject"},
    3: {"float32": "reject", "float16": "reject", "bfloat16": "reject"},
}


def hf32(t):
    """FLOAT rounded to HF32: the top 11 of FLOAT's 23 mantissa bits kept, to nearest, ties to even
    (products.md); the infinities and NaN kept. Back in float64."""
    a = t.to(torch.float32).numpy()
    u = a.view(np.uint32).astype(np.uint64)
    r = (u + np.uint64(0x7FF) + ((u >> np.uint64(12)) & np.uint64(1))) & np.uint64(0xFFFFF000)
    r = r.astype(np.uint32).view(np.float32)
    return torch.from_numpy(np.where(np.isfinite(a), r, a)).double()


def fp16(t):
    """FLOAT rounded to FLOAT16 (IEEE: overflow to infinity, subnormals kept), back in float64."""
    return t.to(torch.float32).to(torch.float16).double()


ROUNDING = {None: lambda t: t, "hf32": hf32, "fp16": fp16}


class Product:
    def __init__(self, pid):
        self.id = pid
        a2 = pid in ("atlas-a2", "atlas-a3", "atlas-200i-500-a2")  # the cube units with FP32 (CANN's IsCubeSupportFp32)
        self.cube = _CUBE_A2 if a2 else _CUBE_NO_FP32
        self.conv_ranks = 3 if a2 else 2  # ConvolutionBackward's 3-D: 161002 on training / inference
        # aclnnConvolution's spatial ranks: inference adds 3-D (FLOAT16, non-transposed: conv.py),
        # 200I/500 A2 runs the non-transposed 2-D convolution only
        self.conv_fwd_sds = {"atlas-training": (1, 2), "atlas-200i-500-a2": (2,)}.get(pid, (1, 2, 3))
        self.divisor_limit = None if a2 else 255  # AvgPool2dBackward's divisorOverride in [-255, 255] there
        self.int32_mask = pid in ("atlas-a2", "atlas-a3")  # else the bit mask (ops.md)
        self.maxpool_backward = pid != "atlas-inference"

    def dtypes(self, family):
        return DTYPES[family].get(self.id, ())

    def bicubic_forward(self, dtype):
        """GridSampler2D's bicubic runs on the A2 / A3 AI Core only, in FLOAT or FLOAT16 (the plugin's
        manifest): else 161002."""
        return self.id in ("atlas-a2", "atlas-a3") and dtype != "float64"

    def fp16_maxpool(self, dtype):
        """MaxPool2dWithMask(Backward) on atlas-training computes FLOAT as FLOAT16 (products.md)."""
        return self.id == "atlas-training" and dtype == "float32"

    def draw_cube(self, rng, dtype, nonzero_share, table=None):
        """(cubeMathType, the rounding of FLOAT cube operands, the status the call must give). One
        draw in ten is a mode the product rejects for this dtype (-1 and 4 everywhere); of the
        others, `nonzero_share` are a mode other than 0 where 0 is accepted. `table`: an operator's
        own rules instead of the product's (AvgPool2d)."""
        cube = table or self.cube
        ok = [m for m in sorted(cube) if cube[m][dtype] != "reject"]
        bad = [m for m in sorted(cube) if cube[m][dtype] == "reject"] + [-1, 4]
        if not ok or rng.random() < 0.1:  # (no mode at all: a dtype the product does not take)
            return rng.choice(bad), None, REJECTED
        mode = rng.choice([m for m in ok if m] or ok) if 0 not in ok or rng.random() < nonzero_share else 0
        return mode, cube[mode][dtype], 0


def rejection(family, dtype, product):
    """(status, what the message must name) of a family's call in a dtype the product does not take:
    the dtype as CANN's messages spell it (BF16 as BFLOAT16), or, where the product lacks the
    operator, the product."""
    if product.dtypes(family):
        return REJECTED, "BFLOAT16" if dtype == "bfloat16" else ACL[dtype]
    return REJECTED, product.id
