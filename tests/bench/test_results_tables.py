#!/usr/bin/env python3
"""bench/results_tables.py on two small bench JSON files: the run lines, a column per run, each kind
of bar's cell (a %limit with near and traffic, a speedup with its range, a time ratio, a missed bar
in bold, a bar not measured) and a bar only one run judged. usage: test_results_tables.py SCRIPT"""
import json
import os
import subprocess
import sys
import tempfile

ROOF = {"copy_gbps": 100.0, "read_gbps": 80.0, "write_gbps": 50.0, "fma_gflops": 400.0}


def run_json(started, cases):
    return {"started": started, "host": {"loadavg_at_start": "1.00", "loadavg_at_end": "1.50"},
            "roofline": ROOF, "cases": cases}


def case(cid, bars, **fields):
    return dict({"id": cid, "bars": bars}, **fields)


RUN1 = run_json("T1", [
    case("Op/shape/float32/atlas-a2", [
        {"kind": "pct_of_limit", "bar": "copy >= 60 %", "value": 61.25, "verdict": "met"},
        {"kind": "speedup", "bar": "PyTorch >= 5x", "value": 4.5, "verdict": "missed"}],
        pct_of_near_copy=70.4, pct_of_traffic=80.6, speedup_runs=[4.0, 4.5, 6.0]),
    case("Op/shape/float16/atlas-a2", [
        {"kind": "time_ratio", "bar": "time <= 1.5x float32's", "value": 0.87, "verdict": "met"}]),
])
RUN2 = run_json("T2", [
    case("Op/shape/float32/atlas-a2", [
        {"kind": "pct_of_limit", "bar": "copy >= 60 %", "value": 40.0, "verdict": "missed"},
        {"kind": "speedup", "bar": "PyTorch >= 5x", "value": None, "verdict": "not measured"}]),
])

WANT = """- **Run 1**: T1, load 1.00 → 1.50; copy 100.0 GB/s (read 80.0, write 50.0), FMA 400 GFLOP/s; 3 bars: 2 met, 1 missed, 0 not measured.
- **Run 2**: T2, load 1.00 → 1.50; copy 100.0 GB/s (read 80.0, write 50.0), FMA 400 GFLOP/s; 2 bars: 0 met, 1 missed, 1 not measured.

### Op

| case | bar | run 1 | run 2 |
|---|---|---|---|
| shape/float32/atlas-a2 | copy ≥ 60 % | 61.2 % (near 70, traffic 81) | **40.0 %** missed |
| shape/float32/atlas-a2 | PyTorch ≥ 5x | **4.50× (4.00–6.00)** missed | not measured |
| shape/float16/atlas-a2 | time ≤ 1.5x float32's | 0.87× |  |
"""


def main(script):
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, run in enumerate((RUN1, RUN2)):
            paths.append(os.path.join(d, f"run{i}.json"))
            with open(paths[-1], "w") as f:
                json.dump(run, f)
        got = subprocess.run([sys.executable, script] + paths, check=True, capture_output=True, text=True).stdout
    if got != WANT:
        print("got:\n" + got + "\nwant:\n" + WANT)
        return 1
    print("results_tables: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
