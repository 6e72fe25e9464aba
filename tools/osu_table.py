#!/usr/bin/env python3
"""The paper's Table 1 from an OSU CSV (benchmarks/osu --csv): how much GPU-aware
communication improves on host staging, measured in the same run.

  latency range   min-max over sizes of staging latency / GPU-aware latency
  eager           the same ratio at the smallest size (UCX's eager protocol)
  bandwidth range min-max over sizes of GPU-aware bandwidth / staging bandwidth

Standard library only, so it also runs on the GPU machine.
  tools/osu_table.py osu.csv [--aware channel] [--mem cuda]
"""
import argparse
import csv
import sys
from collections import defaultdict


def load(path, mem):
    data = defaultdict(dict)  # (test, mode) -> {size: value}
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) != 5:
                continue
            test, mode, m, size, value = row
            if m == mem:
                data[(test, mode)][int(size)] = float(value)
    return data


def ratios(num, den):
    common = sorted(set(num) & set(den))
    return [(s, num[s] / den[s]) for s in common if den[s] > 0]


def span(rs):
    vals = [r for _, r in rs]
    return f"{min(vals):.1f}x-{max(vals):.1f}x" if vals else "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--aware", default="channel", help="GPU-aware mode to compare (channel or gpumsg)")
    ap.add_argument("--mem", default="cuda")
    a = ap.parse_args()
    d = load(a.csv, a.mem)
    lat = ratios(d[("lat", "staging")], d[("lat", a.aware)])
    bw = ratios(d[("bw", a.aware)], d[("bw", "staging")])
    if not lat and not bw:
        sys.exit(f"osu_table: {a.csv} has no {a.mem} results for both staging and {a.aware}")
    print(f"| Improvement ({a.aware} vs staging, {a.mem}) | Range | Smallest size |")
    print("|---|---|---|")
    eager = f"{lat[0][1]:.1f}x at {lat[0][0]} B" if lat else "n/a"
    print(f"| Latency | {span(lat)} | {eager} |")
    bw_small = f"{bw[0][1]:.1f}x at {bw[0][0]} B" if bw else "n/a"
    print(f"| Bandwidth | {span(bw)} | {bw_small} |")


if __name__ == "__main__":
    main()
