#!/usr/bin/env python3
"""Draws the OSU benchmark's CSV (test,mode,mem,size,value) as two PNGs, one line per
mode: latency (us) and bandwidth (MB/s) against message size, like the paper's
Figs. 11-14.   python tools/plot_osu.py osu.csv out_prefix"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    series = defaultdict(lambda: defaultdict(list))  # test -> label -> [(size, value)]
    with open(sys.argv[1], newline="") as f:
        for row in csv.reader(f):
            if len(row) != 5:
                print(f"plot_osu: skipping malformed row {row}", file=sys.stderr)
                continue
            test, mode, mem, size, value = row
            series[test][f"{mode} ({mem})"].append((int(size), float(value)))
    if not series:
        print("plot_osu: no data", file=sys.stderr)
        return 1
    titles = {"lat": ("one-way latency (us)", "latency"), "bw": ("bandwidth (MB/s)", "bandwidth")}
    for test, lines in series.items():
        ylabel, name = titles.get(test, (test, test))
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label, points in sorted(lines.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        out = f"{sys.argv[2]}-{name}.png"
        fig.savefig(out, dpi=120)
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
