#!/usr/bin/python3
"""A campaign: torch_diff.py over every family x dtype x product (or the ones named), one run after
another, then the totals. With --refused, the dtypes and families each product lacks instead: every
call must be refused (README.md, "Products"). Exit status: 0 no findings, 1 findings."""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import products  # noqa: E402 (after the path)

SUMMARY = re.compile(r"^torch_diff .*: (\d+) cases, (\d+) findings \((\d+) of them")


def runs(families, ids, refused):
    """(family, dtype, product) of the campaign, in a fixed order."""
    for pid in ids:
        product = products.Product(pid)
        for family in families:
            drawn = {d for taken in products.DTYPES[family].values() for d in taken}
            for dtype in sorted(drawn, key=products.ALL.index):
                if (dtype in product.dtypes(family)) != refused:
                    yield family, dtype, pid


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=300, help="cases per run (default 300)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", action="append", choices=sorted(products.DTYPES), help="(repeatable) default: all")
    ap.add_argument("--product", action="append", choices=products.IDS, help="(repeatable) default: all")
    ap.add_argument("--refused", action="store_true", help="the dtypes and families each product lacks")
    ap.add_argument("--driver", help="passed on to torch_diff.py")
    args = ap.parse_args()
    total = dict(runs=0, cases=0, findings=0, refused=0)
    for family, dtype, pid in runs(args.family or list(products.DTYPES), args.product or products.IDS, args.refused):
        cmd = [sys.executable, os.path.join(HERE, "torch_diff.py"), family, "--cases", str(args.cases),
               "--seed", str(args.seed), "--dtype", dtype, "--product", pid]
        if args.driver:
            cmd += ["--driver", args.driver]
        p = subprocess.run(cmd, capture_output=True, text=True)
        lines = (p.stdout + p.stderr).strip().splitlines()
        m = SUMMARY.match(lines[-1]) if lines else None
        if not m:  # a usage or setup error: the whole output, counted as a finding
            print("\n".join(lines) or f"{' '.join(cmd)}: no output", flush=True)
            total["findings"] += 1
            continue
        cases, findings, refused = map(int, m.groups())
        print("\n".join(lines if findings else lines[-1:]), flush=True)
        total["runs"] += 1
        total["cases"] += cases
        total["findings"] += findings
        total["refused"] += refused
    print(f"campaign seed {args.seed}: {total['runs']} runs, {total['cases']} cases ({total['refused']} of them "
          f"calls a product refuses), {total['findings']} findings")
    return 1 if total["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
