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
import products

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = {  # family -> case generator; the dtypes each product takes are in products.DTYPES
    "conv": conv.generate,
    "avgpool": pool.avgpool,
    "maxpool": pool.maxpool,
    "maxpool_idx": pool.maxpool_idx,
    "unpool": pool.unpool,
    "grid": grid.generate,
    # the forward companions
    "conv_fwd": conv.forward,
    "avgpool_fwd": pool.avgpool_fwd,
    "unpool_fwd": pool.unpool_fwd,
    "grid_fwd": grid.forward,
}
BATCH = 50  # cases per driver process


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family", choices=FAMILIES)
    ap.add_argument("--cases", type=int, default=300, help="cases to run (default 300)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dtype", choices=products.ALL, default="float32")
    ap.add_argument("--product", choices=products.IDS, default=os.environ.get("ACLNN_CPU_PRODUCT") or "atlas-a2",
                    help="the product the library runs as and the references model (default: "
                         "$ACLNN_CPU_PRODUCT, else atlas-a2)")
    ap.add_argument("--driver", default=os.path.join(HERE, "..", "..", "build", "stage", "bin", "aclnn-cpu-torch-diff"))
    ap.add_argument("--out", help="where failing cases are kept (default: a new directory under /tmp)")
    args = ap.parse_args()
    generate, product = FAMILIES[args.family], products.Product(args.product)
    drawn = sorted({d for taken in products.DTYPES[args.family].values() for d in taken}, key=products.ALL.index)
    if args.dtype not in drawn:
        ap.error(f"{args.family} draws no {args.dtype} ({', '.join(drawn)})")
    # A dtype the product does not take (or an operator it does not have): every call must say so.
    rejection = None
    if args.dtype not in product.dtypes(args.family):
        rejection = products.rejection(args.family, args.dtype, product)
    if not os.access(args.driver, os.X_OK):
        ap.error(f"no driver at {args.driver}: build the tree (cmake --build build) or pass --driver")
    out = args.out or tempfile.mkdtemp(prefix=f"torch_diff_{args.family}_{args.dtype}_{args.product}_")
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)  # small problems: threads cost more than they give

    rand = harness.Rand(args.seed)
    findings, worst, skipped, done, rejections = [], {}, 0, 0, 0
    t0 = time.time()
    while done < args.cases:
        batch = []
        while len(batch) < min(BATCH, args.cases - done):
            case = generate(rand, args.dtype, product)
            if case is None:  # PyTorch rejects the problem: nothing to compare
                skipped += 1
                continue
            if rejection:
                case.reject(*rejection)
            rejections += case.status != 0
            d = os.path.join(out, f"c{done + len(batch):05d}")
            shutil.rmtree(d, ignore_errors=True)
            case.write(d)
            batch.append((d, case))
        crashed = harness.run_driver(args.driver, [d for d, _ in batch], args.product)
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
    print(f"torch_diff {args.family} {args.dtype} {args.product} seed {args.seed}: {done} cases, "
          f"{len(findings)} findings ({rejections} of them calls the product rejects; {skipped} draws PyTorch "
          f"rejects skipped); worst error/tolerance: {ratios or '-'}; "
          f"{time.time() - t0:.1f} s" + (f"; failing cases in {out}" if findings else ""))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
