#!/usr/bin/env python3
"""Message Roofline plot (seed 003): sustained GB/s against message size, one dot per
(message size, messages per synchronization), for each communication path, with the
model's ceilings drawn from parameters fitted to the same measurements.

Input: CSV files with the header `path,msgs_per_sync,bytes,usec_per_sync` (one row per
measurement: the median time of one synchronization, i.e. `msgs_per_sync` messages of
`bytes` each and the wait that ends them). The benchmarks that write it:
benchmarks/core/roofline.cpp (target core_roofline) and benchmarks/run_roofline.sh.

Model, per path (times in microseconds):
  t(n, B) = L + n * max(o, B * G)      one latency per synchronization, then n messages
                                       each costing its overhead or its bytes' gap
  L = t(1, Bmin) - o                   the latency of a lone small message
  o = (t(nmax, Bmin) - t(1, Bmin)) / (nmax - 1)   per-message overhead, when pipelined
  1/G = the highest bandwidth measured (GB/s)
Sharp ceiling: n*B / max(L, n*o, n*B*G); the dots should lie under it and approach it.

  tools/message_roofline.py out.png in1.csv [in2.csv ...]   (prints the fitted table)
"""
import csv
import sys
from collections import defaultdict


def load(paths):
    rows = defaultdict(list)  # path -> [(n, bytes, usec)]
    for p in paths:
        with open(p, newline="") as f:
            for r in csv.DictReader(f):
                rows[r["path"]].append((int(r["msgs_per_sync"]), int(r["bytes"]), float(r["usec_per_sync"])))
    if not rows:
        sys.exit("message_roofline: no measurements in " + " ".join(paths))
    return rows


def fit(points):
    """L, o (us) and peak GB/s of one path, as the module docstring says."""
    bmin = min(b for _, b, _ in points)
    small = {n: t for n, b, t in points if b == bmin}
    t1 = small.get(1, min(small.values()))
    nmax = max(small)
    o = (small[nmax] - t1) / (nmax - 1) if nmax > 1 else 0.0
    o = max(o, 0.0)
    lat = max(t1 - o, 1e-3)
    peak = max(n * b / (t * 1e3) for n, b, t in points)  # bytes/us = MB/s; /1e3 -> GB/s
    return lat, o, peak


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    out, inputs = argv[1], argv[2:]
    rows = load(inputs)
    fits = {p: fit(pts) for p, pts in rows.items()}
    print(f"{'path':<28} {'L (us)':>9} {'o (us)':>9} {'peak GB/s':>10}")
    for p, (lat, o, peak) in fits.items():
        print(f"{p:<28} {lat:9.3f} {o:9.3f} {peak:10.1f}")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = list(rows)
    cols = min(3, len(paths))
    nrows = (len(paths) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 4.2 * nrows), squeeze=False, sharey=True)
    for ax, p in zip(axes.flat, paths):
        lat, o, peak = fits[p]
        pts = rows[p]
        ns = sorted({n for n, _, _ in pts})
        sizes = sorted({b for _, b, _ in pts})
        cmap = plt.get_cmap("viridis")
        for i, n in enumerate(ns):
            xs = [b for m, b, _ in sorted(pts, key=lambda r: r[1]) if m == n]
            ys = [m * b / (t * 1e3) for m, b, t in sorted(pts, key=lambda r: r[1]) if m == n]
            color = cmap(i / max(1, len(ns) - 1))
            ax.plot(xs, ys, "o", color=color, label=f"{n} msg/sync", ms=4)
            # The sharp ceiling for n messages per synchronization.
            g = 1e-3 / peak  # us per byte
            cx = [sizes[0] / 2] + sizes + [sizes[-1] * 2]
            cy = [n * b / (max(lat, n * o, n * b * g) * 1e3) for b in cx]
            ax.plot(cx, cy, "--", color=color, lw=0.8)
        ax.axhline(peak, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{p}\nL={lat:.2f} us  o={o:.2f} us  peak={peak:.0f} GB/s", fontsize=9)
        ax.set_xlabel("message size (bytes)")
        ax.grid(True, which="major", lw=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("sustained GB/s")
    for ax in list(axes.flat)[len(paths):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("Message Roofline: dots measured, dashed = sharp ceiling n*B/max(L, n*o, n*B*G)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(sys.argv)
