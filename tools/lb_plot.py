#!/usr/bin/env python3
"""Per-PE load before and after each load-balancing step of a `+trace` file, as a PNG:
one bar chart per step (before and after side by side for every PE), with the average
load (the ideal every PE would have) as a line, and the step's strategy, objects moved
and max/average ratio before and after in its title.

  tools/lb_plot.py TRACE.json -o out.png [--steps N] [--title T]

Reads the "LB step" events (category "lb", on PE 0's track) that `+trace` writes:
args {step, strategy, before: [load per PE], after: [...], moved, objects}. With more
steps than --steps (default 6), the first and last ones are drawn. Needs matplotlib.
"""
import argparse
import json
import math
import sys


def lb_steps(path):
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    steps = [e for e in events if e.get("cat") == "lb" and "before" in e.get("args", {})]
    steps.sort(key=lambda e: (e["args"].get("step", 0), e.get("ts", 0)))
    return [e["args"] for e in steps]


def imbalance(loads):
    avg = sum(loads) / len(loads) if loads else 0
    return max(loads) / avg if avg > 0 else 1.0


def pick(steps, n):
    if len(steps) <= n:
        return steps
    head = n // 2
    return steps[:head] + steps[len(steps) - (n - head):]


def plot(steps, out, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = min(len(steps), 3)
    rows = math.ceil(len(steps) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows), squeeze=False)
    for ax, s in zip(axes.flat, steps):
        before, after = s["before"], s["after"]
        pes = range(max(len(before), len(after)))
        w = 0.4
        ax.bar([p - w / 2 for p in pes[:len(before)]], before, w, label="before", color="#d62728")
        ax.bar([p + w / 2 for p in pes[:len(after)]], after, w, label="after", color="#2ca02c")
        avg = sum(before) / len(before) if before else 0
        ax.axhline(avg, color="black", linestyle="--", linewidth=1, label="average")
        moved = s.get("moved", "?")
        objs = s.get("objects")
        ax.set_title(f"step {s.get('step', '?')} ({s.get('strategy', '?')}): moved {moved}"
                     + (f" of {objs}" if objs is not None else "")
                     + f"\nmax/avg {imbalance(before):.2f} -> {imbalance(after):.2f}",
                     fontsize=9)
        ax.set_xlabel("PE")
        ax.set_ylabel("load (s)")
        if len(pes) <= 32:
            ax.set_xticks(list(pes))
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(steps):]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="a +trace file (Chrome trace-event JSON)")
    ap.add_argument("-o", "--output", required=True, help="the PNG to write")
    ap.add_argument("--steps", type=int, default=6, help="steps drawn at most (default 6)")
    ap.add_argument("--title", default="", help="a title over the charts")
    a = ap.parse_args()
    try:
        steps = lb_steps(a.trace)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"lb_plot: cannot read {a.trace} as a trace: {e}")
    if not steps:
        sys.exit(f"lb_plot: {a.trace} has no load-balancing steps (run with +trace and a "
                 "balancer, e.g. +balancer GreedyRefine, and AtSync in the program)")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("lb_plot: matplotlib is not installed (pip install matplotlib)")
    plot(pick(steps, max(a.steps, 1)), a.output, a.title)
    print(f"lb_plot: {len(steps)} LB steps; wrote {a.output}")


if __name__ == "__main__":
    main()
