#!/usr/bin/python3
"""Differential test of aclnn-cpu against PyTorch (README.md): random cases of one operator family
through build/stage/bin/aclnn-cpu-torch-diff, each output compared with PyTorch's in float64.
Exit status: 0 no findings, 1 findings, 2 usage or setup error."""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time

try:
    import torch
except ImportError:
    sys.exit("torch_diff: needs PyTorch: Debian's python3-torch (bash tools/install_deps.sh --bench), "
             "with the python3 it installs into (/usr/bin/python3)")

import conv
import grid
import harness
import pool

HERE = os.path.dirname(os.path.abspath(__file__))
FLOATS = ("float32", "float16", "bfloat16")
# family -> (case generator, dtypes the operator takes on atlas-a2)
FAMILIES = {
    "conv": (conv.generate, FLOATS),
    "avgpool": (pool.avgpool, FLOATS),
    "maxpool": (pool.maxpool, FLOATS),
    "unpool": (pool.unpool, ("float32", "float16")),
    "grid": (grid.generate, FLOATS),
    # the forward companions
    "conv_fwd": (conv.forward, FLOATS),
    "avgpool_fwd": (pool.avgpool_fwd, FLOATS),
    "unpool_fwd": (pool.unpool_fwd, ("float32", "float16")),
    "grid_fwd": (grid.forward, ("float32", "float16")),  # no BF16 in CANN's forward on atlas-a2
}
BATCH = 50  # cases per driver process


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=FAMILIES)
    ap.add_argument("--cases", type=int, default=300, help="cases to run (default 300)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtype", choices=FLOATS, default="float32")
    ap.add_argument("--driver", default=os.path.join(HERE, "..", "..", "build", "stage", "bin", "aclnn-cpu-torch-diff"))
    ap.add_argument("--out", help="where failing cases are kept (default: a new directory under /tmp)")
    args = ap.parse_args()
    generate, dtypes = FAMILIES[args.family]
    if args.dtype not in dtypes:
        ap.error(f"{args.family} does not take {args.dtype} ({', '.join(dtypes)})")
    if not os.access(args.driver, os.X_OK):
        ap.error(f"no driver at {args.driver}: build the tree (cmake --build build) or pass --driver")
    if os.environ.get("ACLNN_CPU_PRODUCT"):
        print("torch_diff: the references assume atlas-a2 (the default product); ACLNN_CPU_PRODUCT="
              f"{os.environ['ACLNN_CPU_PRODUCT']} may change what is accepted and the mask layout", file=sys.stderr)
    out = args.out or tempfile.mkdtemp(prefix=f"torch_diff_{args.family}_{args.dtype}_")
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)  # small problems: threads cost more than they give

    rand = harness.Rand(args.seed)
    findings, worst, skipped, done = [], {}, 0, 0
    t0 = time.time()
    while done < args.cases:
        batch = []
        while len(batch) < min(BATCH, args.cases - done):
            case = generate(rand, args.dtype)
            if case is None:  # PyTorch rejects the problem: nothing to compare
                skipped += 1
                continue
            d = os.path.join(out, f"c{done + len(batch):05d}")
            shutil.rmtree(d, ignore_errors=True)
            case.write(d)
            batch.append((d, case))
        crashed = harness.run_driver(args.driver, [d for d, _ in batch])
        for d, case in batch:
            if d in crashed:
                problems, ratios = [f"crash: {crashed[d]}"], {}
            else:
                problems, ratios = harness.check(case, d, harness.read_result(d))
            for name, r in ratios.items():
                worst[name] = max(worst.get(name, 0.0), r)
            if problems:
                findings.append(d)
                with open(os.path.join(d, "finding.txt"), "w") as f:
                    f.write("\n".join(problems) + "\n")
                print(f"FINDING {d}: {json.dumps(case.desc, default=str)}\n  " + "\n  ".join(problems), flush=True)
            else:
                shutil.rmtree(d)
        done += len(batch)
    if not findings and not args.out:
        shutil.rmtree(out)
    ratios = " ".join(f"{k} {v:.3g}" for k, v in sorted(worst.items()))
    print(f"torch_diff {args.family} {args.dtype} seed {args.seed}: {done} cases, {len(findings)} findings"
          f" ({skipped} draws PyTorch rejects skipped); worst error/tolerance: {ratios or '-'}; "
          f"{time.time() - t0:.1f} s" + (f"; failing cases in {out}" if findings else ""))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
