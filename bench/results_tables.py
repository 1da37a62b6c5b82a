#!/usr/bin/env python3
"""bench/RESULTS.md's tables from aclnn-cpu-bench JSON files (--json), one column per run.

usage: bench/results_tables.py run1.json [run2.json ...] > tables.md

Prints, per operator, every bar the runs judged (the bench's `cases[].bars`): a `%limit` bar as
"69.0 % (near 36, traffic 82)", a speedup as "10.72× (9.56–13.62)" (the median of the runs' ratios,
their range), a time bar as "0.87×"; a missed bar in bold, followed by "missed". Then one line per
run: when it started, the load, the roofline and the count of bars met.
"""
import json
import sys


def pct(case, bar):
    text = f"{bar['value']:.1f} %"
    near, traffic = case.get("pct_of_near_copy"), case.get("pct_of_traffic")
    if near is not None or traffic is not None:
        parts = []
        if near is not None:
            parts.append(f"near {near:.0f}")
        if traffic is not None:
            parts.append(f"traffic {traffic:.0f}")
        text += " (" + ", ".join(parts) + ")"
    return text


def speedup(case, bar):
    runs = case.get("speedup_runs") or []
    text = f"{bar['value']:.2f}×"
    if len(runs) > 1:
        text += f" ({min(runs):.2f}–{max(runs):.2f})"
    return text


def cell(case, bar):
    if bar["verdict"] == "not measured" or bar.get("value") is None:
        return "not measured"
    text = {"pct_of_limit": pct, "speedup": speedup}.get(bar["kind"], lambda c, b: f"{b['value']:.2f}×")(case, bar)
    return f"**{text}** missed" if bar["verdict"] == "missed" else text


def bar_label(bar):
    return bar["bar"].replace(">=", "≥").replace("<=", "≤")


def main(paths):
    runs = [json.load(open(p)) for p in paths]
    rows = {}  # op -> {(case rest, bar label): [cell per run]}
    for r, run in enumerate(runs):
        for case in run["cases"]:
            op, rest = case["id"].split("/", 1)
            for bar in case.get("bars", []):
                key = (rest, bar_label(bar))
                rows.setdefault(op, {}).setdefault(key, [""] * len(runs))[r] = cell(case, bar)
    for r, run in enumerate(runs, 1):
        roof, host = run.get("roofline") or {}, run["host"]
        verdicts = [b["verdict"] for c in run["cases"] for b in c.get("bars", [])]
        line = f"- **Run {r}**: {run['started']}, load {host['loadavg_at_start']} → {host['loadavg_at_end']}"
        if roof:
            line += (f"; copy {roof['copy_gbps']:.1f} GB/s (read {roof['read_gbps']:.1f}, write "
                     f"{roof['write_gbps']:.1f}), FMA {roof['fma_gflops']:.0f} GFLOP/s")
        line += (f"; {len(verdicts)} bars: {verdicts.count('met')} met, {verdicts.count('missed')} missed, "
                 f"{verdicts.count('not measured')} not measured.")
        print(line)
    for op in sorted(rows):
        print(f"\n### {op}\n")
        print("| case | bar | " + " | ".join(f"run {r}" for r in range(1, len(runs) + 1)) + " |")
        print("|---|---|" + "---|" * len(runs))
        for (rest, label), cells in rows[op].items():
            print(f"| {rest} | {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
