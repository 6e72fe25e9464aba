#!/usr/bin/env python3
"""Where a one-way message's instructions go, per layer, and a flame graph.

  tools/msg_profile.py counts MESSAGES|REGEX CALLGRIND_FILE... [--min-calls 0.5] [--top 25]
      Reads a callgrind output file of one PE of a ping-pong that handled MESSAGES
      messages (or as many as the calls of the function matching REGEX), and prints, for every function called between 0.5 and 4 times per
      message (the message path; the idle polling loop runs thousands of times and the
      start-up once), its own instructions per message and calls per message.
  tools/msg_profile.py flame PERF_SCRIPT_OUTPUT OUT.svg [--title T]
      Folds the stacks of `perf script` output and draws them as a flame graph (SVG):
      width is the share of samples, bottom frames are the outermost calls.

The measurement recipe is benchmarks/profile_messages.sh.
"""
from __future__ import annotations

import argparse
import collections
import html
import re
import sys
from pathlib import Path


# ---- callgrind -------------------------------------------------------------------------

def parse_callgrind(path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Self instructions and incoming call counts per function name."""
    names: dict[str, str] = {}  # "(id)" -> name (callgrind's name compression)
    self_ir: dict[str, int] = collections.defaultdict(int)
    calls: dict[str, int] = collections.defaultdict(int)
    fn = None
    pending_call = None  # callee of the last calls= line: its next cost line is inclusive

    def resolve(spec: str) -> str:
        m = re.match(r"\((\d+)\)(?:\s+(.*))?", spec)
        if not m:
            return spec
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), spec)

    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("fn="):
            fn = resolve(line[3:].strip())
            pending_call = None
        elif line.startswith("cfn="):
            pending_call = resolve(line[4:].strip())
        elif line.startswith("calls="):
            if pending_call is not None:
                calls[pending_call] += int(line[6:].split()[0])
            pending_call = ("__inclusive__", pending_call)
        elif line and (line[0].isdigit() or line[0] in "+-*"):
            parts = line.split()
            if len(parts) < 2 or fn is None:
                continue
            if isinstance(pending_call, tuple):  # the inclusive cost of a call: not ours
                pending_call = None
                continue
            try:
                self_ir[fn] += int(parts[1])
            except ValueError:
                pass
    return self_ir, calls


def counts(args: argparse.Namespace) -> int:
    # Several files (one per PE): the one where the anchor is called most.
    best = None
    for f in args.file:
        ir, cl = parse_callgrind(Path(f))
        score = sum(c for fn, c in cl.items() if args.messages.isdigit() or re.search(args.messages, fn))
        if best is None or score > best[0]:
            best = (score, ir, cl)
    _, self_ir, calls = best
    if args.messages.isdigit():
        n = int(args.messages)
    else:  # the calls of the one function matching the regex (the handler, say) count the messages
        hits = {f: c for f, c in calls.items() if re.search(args.messages, f)}
        if not hits:
            print(f"msg_profile.py: no function matches '{args.messages}'", file=sys.stderr)
            return 1
        anchor, n = max(hits.items(), key=lambda kv: kv[1])
        print(f"# {n} messages: the calls of {anchor[:100]}")
    # libc's string and stdio routines are called about as often during start-up (option
    # parsing, library loading) as there are messages in a short run: not the message path.
    startup = re.compile(r"^(strcmp|strncmp|strlen|__str\w*|_IO_\w*|malloc|_int_malloc|free|_int_free|getenv)$")
    rows = []
    for name, c in calls.items():
        if startup.match(name):
            continue
        per = c / n
        if args.min_calls <= per <= args.max_calls and self_ir.get(name, 0) > 0:
            rows.append((self_ir[name] / n, per, name))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"{'instr/msg':>10} {'calls/msg':>9}  function (self instructions per message)")
    for ir, per, name in rows[: args.top]:
        short = re.sub(r"\(anonymous namespace\)::", "", name)
        short = re.sub(r"ucharm::(machine|converse)::(detail::)?", "", short)
        print(f"{ir:10.1f} {per:9.2f}  {short[:110]}")
    print(f"{total:10.1f} {'':9}  total over {len(rows)} message-path functions")
    return 0


# ---- flame graph -----------------------------------------------------------------------

def fold(perf_script: Path) -> collections.Counter:
    """`perf script` stacks -> Counter of 'outer;...;inner' strings."""
    stacks: collections.Counter = collections.Counter()
    frames: list[str] = []
    for line in perf_script.read_text(errors="replace").splitlines() + [""]:
        if not line.strip():
            if frames:
                stacks[";".join(reversed(frames))] += 1
            frames = []
            continue
        if line[0] in " \t":
            m = re.match(r"\s+[0-9a-f]+\s+(.*?)(?:\+0x[0-9a-f]+)?\s+\((.*)\)\s*$", line)
            if m:
                sym = m.group(1)
                if sym == "[unknown]":
                    sym = Path(m.group(2)).name or sym
                sym = re.sub(r"\(anonymous namespace\)::", "", sym)
                frames.append(sym)
    return stacks


def flame(args: argparse.Namespace) -> int:
    stacks = fold(Path(args.perf_script))
    if not stacks:
        print("msg_profile.py: no stacks in the perf script output", file=sys.stderr)
        return 1
    total = sum(stacks.values())
    tree: dict = {}
    for stack, n in stacks.items():
        node = tree
        for f in stack.split(";"):
            child = node.setdefault(f, {"_n": 0, "_c": {}})
            child["_n"] += n
            node = child["_c"]
    width, row_h = 1600, 16
    rows: list[str] = []
    depth_max = [0]

    def place(children: dict, x: float, depth: int) -> None:
        for name, node in sorted(children.items(), key=lambda kv: -kv[1]["_n"]):
            w = node["_n"] / total * width
            if w >= 0.5:
                depth_max[0] = max(depth_max[0], depth)
                hue = 10 + (hash(name) % 40)
                label = html.escape(name)
                pct = 100.0 * node["_n"] / total
                text = html.escape(name[: int(w / 7)]) if w > 21 else ""
                rows.append((depth, f'<g><title>{label} ({pct:.1f}%)</title><rect x="{x:.1f}" y="{{y}}" '
                                    f'width="{w:.1f}" height="{row_h - 1}" fill="hsl({hue},85%,60%)"/>'
                                    f'<text x="{x + 3:.1f}" y="{{ty}}" font-size="11">{text}</text></g>'))
                place(node["_c"], x, depth + 1)
            x += w

    place(tree, 0.0, 0)
    height = (depth_max[0] + 3) * row_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace">',
           f'<rect width="100%" height="100%" fill="white"/>',
           f'<text x="4" y="14" font-size="13">{html.escape(args.title)} ({total} samples)</text>']
    for depth, g in rows:
        y = height - (depth + 1) * row_h
        out.append(g.replace("{y}", str(y)).replace("{ty}", str(y + row_h - 4)))
    out.append("</svg>")
    Path(args.out).write_text("\n".join(out))
    print(f"wrote {args.out}: {len(stacks)} distinct stacks, {total} samples")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("counts")
    c.add_argument("messages_first", metavar="MESSAGES|REGEX")
    c.add_argument("file", nargs="+", help="callgrind output files (one per PE): the one where the anchor is called most")
    c.add_argument("--min-calls", type=float, default=0.5)
    c.add_argument("--max-calls", type=float, default=4.0)
    c.add_argument("--top", type=int, default=25)
    f = sub.add_parser("flame")
    f.add_argument("perf_script")
    f.add_argument("out")
    f.add_argument("--title", default="flame graph")
    a = ap.parse_args()
    if a.cmd == "counts":
        a.messages = a.messages_first
    return counts(a) if a.cmd == "counts" else flame(a)


if __name__ == "__main__":
    sys.exit(main())
