"""tools/lb_plot.py on a synthetic trace: two LB steps on 3 PEs give a PNG; a trace
without LB steps is a clear error. Skips (77) without matplotlib."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import matplotlib  # noqa: F401
except ImportError:
    print("matplotlib is not installed: skipped")
    sys.exit(77)

tool = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    trace = os.path.join(d, "t.json")
    events = [{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "PE 0"}}]
    for step, (before, after) in enumerate([([6, 1, 2], [3, 3, 3]), ([4, 3, 2], [3, 3, 3])], 1):
        events.append({"ph": "i", "s": "t", "name": "LB step", "cat": "lb", "pid": 1,
                       "tid": 1, "ts": 1000.0 * step,
                       "args": {"step": step, "strategy": "GreedyRefine", "moved": 2,
                                "objects": 12, "before": before, "after": after}})
    with open(trace, "w") as f:
        json.dump({"traceEvents": events}, f)
    png = os.path.join(d, "out.png")
    subprocess.run([sys.executable, tool, trace, "-o", png], check=True)
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert os.path.getsize(png) > 5000, "PNG suspiciously small"
    # No LB steps: exit code 1 and a message naming the cause.
    with open(trace, "w") as f:
        json.dump({"traceEvents": events[:1]}, f)
    r = subprocess.run([sys.executable, tool, trace, "-o", png], capture_output=True, text=True)
    assert r.returncode != 0 and "no load-balancing steps" in r.stderr, (r.returncode, r.stderr)
print("lb_plot: PNG written; trace without LB steps refused")
