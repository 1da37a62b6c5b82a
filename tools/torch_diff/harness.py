"""What every family shares: random layouts, the case directory (case.txt and the tensors' bytes,
the driver's format in driver/case.hpp), running the driver, and comparing its outputs with the
references the family computed."""
import json
import os
import random
import subprocess

import numpy as np
import torch

# Our dtype names (torch's) -> the driver's names, torch dtypes, and the raw element type on disk.
ACL = {"float32": "FLOAT", "float16": "FLOAT16", "bfloat16": "BF16", "float64": "DOUBLE", "int8": "INT8",
       "uint8": "UINT8", "int16": "INT16", "int32": "INT32", "int64": "INT64", "bool": "BOOL"}
TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
         "int8": torch.int8, "uint8": torch.uint8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
         "bool": torch.bool}
RAW = {"float32": np.float32, "float16": np.int16, "bfloat16": np.int16, "float64": np.float64, "int8": np.int8,
       "uint8": np.uint8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "bool": np.bool_}
# Mantissa bits and the exponent of the smallest subnormal, for one unit in the last place.
MANTISSA = {"float32": (23, -149), "float16": (10, -24), "bfloat16": (7, -133), "float64": (52, -1074)}
# Relative to the magnitude bound (the operation on |inputs|): FLOAT accumulation over a few
# thousand terms reorders to ~2e-7 of it (measured worst 0.012 of this); FLOAT16 / BF16 results are
# accumulated in FLOAT and rounded once, which the one-ulp term of compare() covers.
RTOL = 2e-5


class Rand:
    """The case's structure from `rng` (random.Random), tensor data from `np` (numpy Generator)."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.np = np.random.default_rng(seed)

    def uniform(self, shape, lo=-1.0, hi=1.0):
        return torch.from_numpy(self.np.uniform(lo, hi, size=tuple(shape)))

    def randn(self, shape):
        return torch.from_numpy(self.np.standard_normal(size=tuple(shape)))


def layout(rng, shape, output, contiguous=False):
    """Row-major most of the time; else dims permuted in memory, gaps between rows, an offset, spare
    storage at the end, and for inputs sometimes a broadcast (stride-0) dim."""
    r = len(shape)
    strides, offset = [0] * r, 0
    if contiguous or rng.random() < 0.65:
        step = 1
        for i in reversed(range(r)):
            strides[i] = step
            step *= max(shape[i], 1)
    else:
        perm = list(range(r))
        rng.shuffle(perm)
        step = rng.choice([1, 1, 2])
        for dim in reversed(perm):
            strides[dim] = step
            step = step * max(shape[dim], 1) + (rng.randint(0, 2) if rng.random() < 0.3 else 0)
        offset = rng.randint(0, 5)
        wide = [i for i in range(r) if shape[i] > 1]
        if not output and wide and rng.random() < 0.15:
            strides[rng.choice(wide)] = 0
    reach = 0 if 0 in shape else sum((n - 1) * s for n, s in zip(shape, strides))
    storage = offset + reach + 1 + (0 if contiguous else rng.randint(0, 3))
    return strides, offset, storage


class Case:
    """One call (or the calls of one family) with its arguments and the expected outputs."""

    def __init__(self, op, dtype, rand):
        self.op, self.dtype, self.rand = op, dtype, rand
        self.placement = rand.rng.choices([0, 1, 2], [0.6, 0.2, 0.2])[0]
        # Two cases in five run each executor twice (driver/case.hpp): on decoy copies of the
        # tensors, then re-pointed at the tensors by aclSetRawTensorAddr (1) or by index (2).
        self.repeat = rand.rng.choices([0, 1, 2], [0.6, 0.2, 0.2])[0]
        self.lines, self.inputs, self.outputs, self.expects = [], {}, {}, []
        self.desc = {}  # the parameters, for the finding report (case.json)
        self.status, self.names = 0, None  # see reject()

    def reject(self, status, names):
        """The call must fail with `status` and a message naming `names`, writing nothing: every
        output, declared before or after, is idle, and nothing is compared."""
        self.status, self.names = status, names
        for i, line in enumerate(self.lines):
            f = line.split(" ")
            if f[0] == "tensor" and f[2] == "out":
                self.lines[i] = " ".join(f[:2] + ["idle"] + f[3:])
        self.outputs.clear()
        self.expects.clear()

    def _tensor(self, name, role, dtype, fmt, shape, contiguous):
        strides, offset, storage = layout(self.rand.rng, shape, role != "in", contiguous)
        dims = [len(shape)] + list(shape) + strides + [offset, storage]
        self.lines.append(f"tensor {name} {role} {ACL[dtype]} {fmt} " + " ".join(map(str, dims)))
        return strides

    def input(self, name, data, fmt, dtype=None, contiguous=False):
        """Passes `data` as an input in `dtype` (default: the case's); returns what the call sees, in
        float64 for floating dtypes: the reference must be computed from that."""
        dtype = dtype or self.dtype
        strides = self._tensor(name, "in", dtype, fmt, list(data.shape), contiguous)
        t = data.to(TORCH[dtype])
        for i, s in enumerate(strides):  # a stride-0 dim repeats one slice
            if s == 0:
                t = t.narrow(i, 0, 1).expand(*t.shape).contiguous()
        self.inputs[name] = t
        return t.double() if t.is_floating_point() else t

    def output(self, name, shape, fmt, dtype=None, idle=False):
        """An output; an idle one (masked off) must come back untouched."""
        dtype = dtype or self.dtype
        idle = idle or self.status != 0
        self._tensor(name, "idle" if idle else "out", dtype, fmt, list(shape), False)
        if not idle:
            self.outputs[name] = (dtype, list(shape))

    def ints(self, name, values):
        self.lines.append(f"ints {name} -1" if values is None else f"ints {name} {len(values)} " +
                          " ".join(str(int(v)) for v in values))

    def bools(self, name, values):
        self.lines.append(f"bools {name} {len(values)} " + " ".join(str(int(bool(v))) for v in values))

    def num(self, name, value):
        self.lines.append(f"int {name} {int(value)}")

    def expect(self, name, refs, mag=None, rtol=RTOL, exact=False, extract=None, ulp_dtype=None):
        """Output `name` (after `extract`, if given) must equal one of `refs` (float64, or the output's
        own dtype when it is not floating): exactly, or within rtol * mag + one ulp of `ulp_dtype`
        (default: the output's), elementwise. Nothing for a call that must fail."""
        if self.status:
            return
        self.expects.append(dict(name=name, refs=refs if isinstance(refs, (list, tuple)) else [refs], mag=mag,
                                 rtol=rtol, exact=exact, extract=extract, ulp_dtype=ulp_dtype))

    def write(self, d):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "case.txt"), "w") as f:
            f.write(f"op {self.op}\nplacement {self.placement}\nrepeat {self.repeat}\n" + "\n".join(self.lines) + "\n")
        for name, t in self.inputs.items():
            raw = t.view(torch.int16) if t.dtype in (torch.float16, torch.bfloat16) else t
            raw.numpy().tofile(os.path.join(d, name + ".bin"))
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump(dict(self.desc, family=self.op, dtype=self.dtype, placement=self.placement,
                           repeat=self.repeat), f)

    def read_output(self, d, name):
        dtype, shape = self.outputs[name]
        raw = torch.from_numpy(np.fromfile(os.path.join(d, name + ".out"), dtype=RAW[dtype]))
        return raw.view(TORCH[dtype]).reshape(shape)


def run_driver(driver, dirs, product):
    """Runs the case directories as `product`; returns {dir: crash report} for those without a
    result. After a crash the first case without result.txt is the culprit and the rest run again."""
    crashed, pending = {}, list(dirs)
    env = dict(os.environ, ACLNN_CPU_PRODUCT=product)
    while pending:
        p = subprocess.run([driver] + pending, capture_output=True, text=True, timeout=1800, env=env)
        rest = [d for d in pending if not os.path.exists(os.path.join(d, "result.txt"))]
        if rest:
            crashed[rest[0]] = f"driver exit {p.returncode}: {p.stderr[-1500:].strip()}"
            rest = rest[1:]
        pending = rest
    return crashed


def read_result(d):
    res = dict(status=None, dirty={}, differs={})
    with open(os.path.join(d, "result.txt")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(" ")
            if key in ("dirty", "differs"):
                name, count = value.split()
                res[key][name] = int(count)
            else:
                res[key] = int(value) if key == "status" else value
    return res


def ulp(x, dtype):
    mant, tiny = MANTISSA[dtype]
    e = torch.floor(torch.log2(x.abs().clamp(min=2.0 ** (tiny + mant))))  # subnormals: the fixed spacing
    return torch.pow(2.0, e - mant)


def compare(ours, e, dtype):
    """(worst error / tolerance, problem or None) of one output against its expectation."""
    if ours.is_floating_point():
        ours = ours.double()
    best = torch.full(ours.shape, float("inf"), dtype=torch.float64)  # per element, the closest reference
    for ref in e["refs"]:
        if list(ref.shape) != list(ours.shape):
            return float("inf"), f"shape {list(ours.shape)}, expected {list(ref.shape)}"
        if not ours.is_floating_point():  # integers and BOOL in their own dtype: INT64 does not fit a double
            same = ours == ref.to(ours.dtype)
        else:
            same = (ours == ref) | (torch.isnan(ours) & torch.isnan(ref))  # also the infinities
        if e["exact"]:
            r = torch.where(same, 0.0, float("inf"))
        else:
            tol = e["rtol"] * e["mag"].abs() + ulp(ref, e["ulp_dtype"] or dtype)
            r = torch.where(same, 0.0, torch.nan_to_num((ours - ref).abs() / tol, nan=float("inf")))
        best = torch.minimum(best, r)
    ok = best <= 1
    ratio = float(best.max()) if best.numel() else 0.0
    if ok.all():
        return ratio, None
    bad = (~ok).flatten().nonzero()[0].item()
    index = [int(v) for v in np.unravel_index(bad, tuple(ours.shape))]
    expected = " or ".join(repr(r.flatten()[bad].item()) for r in e["refs"])
    return ratio, (f"{int((~ok).sum())} of {ours.numel()} elements differ; first at {index}: "
                             f"{ours.flatten()[bad].item()!r}, expected {expected}")


def check(case, d, res):
    """The problems of one run case: a rejection, writes where none may happen, wrong outputs.
    Also returns each output's worst error / tolerance."""
    problems, ratios = [], {}
    if case.status and res["status"] != case.status:
        problems.append(f"{res.get('call') or 'every call'} returned {res['status']}, expected {case.status}")
    elif case.status and case.names not in res.get("msg", ""):
        problems.append(f"{res.get('call')} returned {res['status']} without naming {case.names}: {res.get('msg', '')}")
    elif res["status"] != case.status:
        problems.append(f"{res.get('call')} returned {res['status']} (PyTorch accepts the case): {res.get('msg', '')}")
    for name, count in res["dirty"].items():
        output = name.split("@")[0] in case.outputs  # NAME@decoy: the tensor's decoy copy
        where = "outside its view" if output else "although it is an input or a masked-off output"
        problems.append(f"{name}: {count} elements written {where}")
    for name, count in res["differs"].items():
        problems.append(f"{name}: {count} elements differ between the executor's two runs "
                        "(decoy copies, then the tensors)")
    if res["status"] != 0:
        return problems, ratios
    for e in case.expects:
        ours = case.read_output(d, e["name"])
        if e["extract"]:
            ours = e["extract"](ours)
        ratios[e["name"]], problem = compare(ours, e, case.dtype)
        if problem:
            problems.append(f"{e['name']}: {problem}")
    return problems, ratios
