#!/usr/bin/env python3
"""Joins the per-PE parts of a `+trace FILE` run into FILE, as ucharmrun does at the end
of a job: for jobs started by mpirun or srun, or to redo it by hand.

  tools/trace_merge.py FILE     (reads FILE less ".json" plus ".pe0.json", ".pe1.json", ...)

Lines cut short (a PE killed while writing) are left out. The parts stay.
"""
import glob
import os
import re
import sys


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.exit(__doc__)
    out_path = sys.argv[1]
    stem = out_path[:-5] if out_path.endswith(".json") and len(out_path) > 5 else out_path
    parts = glob.glob(glob.escape(stem) + ".pe*.json")
    parts = sorted((p for p in parts if re.fullmatch(r"\.pe\d+\.json", p[len(stem):])),
                   key=lambda p: int(p[len(stem) + 3:-5]))
    if not parts:
        sys.exit(f"trace_merge: no parts {stem}.peN.json found")
    events = []
    for p in parts:
        with open(p) as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # cut short while being written
                line = line.strip()
                if line.startswith('{"traceEvents":['):
                    line = line[len('{"traceEvents":['):]
                line = line.lstrip(",")
                if line.startswith("{") and line.endswith("}"):
                    events.append(line)
    tmp = out_path + ".merging"
    with open(tmp, "w") as f:
        f.write('{"traceEvents":[\n' + "\n,".join(events) + "\n]}\n")
    os.replace(tmp, out_path)
    print(f"trace_merge: {len(parts)} parts, {len(events)} events -> {out_path}")


if __name__ == "__main__":
    main()
