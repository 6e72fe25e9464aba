#!/usr/bin/env python3
"""Jacobi3D scaling results (the CSV that jacobi3d --csv appends to) as a Markdown table
and, where matplotlib is installed, PNG plots like the paper's Figs. 15-17: time per
iteration and communication time per iteration against PEs, one line per halo mode and
block count. Repeated runs of a point are reduced to their median.

  tools/plot_jacobi.py results.csv OUTPREFIX [--title T]   -> OUTPREFIX.png, table on stdout
"""
import argparse
import csv
import statistics
import sys
from collections import defaultdict

MODES = ["staging", "gpumsg", "channel", "device"]


def load(path):
    points = defaultdict(lambda: defaultdict(list))  # (pes, blocks, grid) -> mode -> [(iter, comm)]
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) != 11:
                continue
            mode, _kernels, pes, gx, gy, gz, blocks, _iters, per_iter, comm, _startup = row
            key = (int(pes), int(blocks), f"{gx}x{gy}x{gz}")
            points[key][mode].append((float(per_iter), float(comm)))
    return points


def med(vals, i):
    return statistics.median(v[i] for v in vals)


def table(points):
    print("| PEs | blocks | grid | mode | ms/iter | comm ms/iter | staging/mode (iter) | staging/mode (comm) | runs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in sorted(points):
        pes, blocks, grid = key
        by = points[key]
        base = by.get("staging")
        for mode in MODES:
            if mode not in by:
                continue
            it, cm = med(by[mode], 0), med(by[mode], 1)
            r_it = f"{med(base, 0) / it:.2f}x" if base and mode != "staging" and it > 0 else "-"
            r_cm = f"{med(base, 1) / cm:.2f}x" if base and mode != "staging" and cm > 0 else "-"
            print(f"| {pes} | {blocks} | {grid} | {mode} | {it:.3f} | {cm:.3f} | {r_it} | {r_cm} | {len(by[mode])} |")


def plot(points, prefix, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib not installed: no plot)", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    per_pe_blocks = sorted({b // p for p, b, _ in points})
    for bpp in per_pe_blocks:
        for mode in MODES:
            xs, it, cm = [], [], []
            for key in sorted(points):
                pes, blocks, _ = key
                if blocks // pes != bpp or mode not in points[key]:
                    continue
                xs.append(pes)
                it.append(med(points[key][mode], 0))
                cm.append(med(points[key][mode], 1))
            if xs:
                label = f"{mode}, {bpp} block{'s' if bpp > 1 else ''}/PE"
                style = "-" if bpp == per_pe_blocks[0] else "--"
                axes[0].plot(xs, it, style, marker="o", label=label)
                axes[1].plot(xs, cm, style, marker="o", label=label)
    for ax, what in zip(axes, ["time per iteration (ms)", "communication time per iteration (ms)"]):
        ax.set_xlabel("PEs")
        ax.set_ylabel(what)
        ax.set_xscale("log", base=2)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("prefix")
    ap.add_argument("--title", default="Jacobi3D")
    a = ap.parse_args()
    points = load(a.csv)
    if not points:
        sys.exit(f"plot_jacobi: no results in {a.csv}")
    table(points)
    plot(points, a.prefix, a.title)


if __name__ == "__main__":
    main()
