"""`+trace` through the launcher.

  trace_integration.py merge UCHARMRUN
      ucharmrun joins the PEs' parts into FILE and removes them; after a failed job the
      parts stay, FILE holds their complete lines and the job's exit code is kept. The
      ranks are shell scripts that write parts as the tracer does (no runtime needed).
  trace_integration.py job UCHARMRUN PROGRAM DISPATCH_CPP
      a real program (examples/hello) at 2 PEs with +trace: one valid FILE, entry events
      on both PEs' tracks, message flows between the PEs, idle time (check_trace.py).
      Skips (77) while the core's dispatch.cpp does not call the tracer yet.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_trace  # noqa: E402

PART_SCRIPT = r"""
r=$PMIX_RANK
printf '{"traceEvents":[\n{"ph":"M","name":"thread_name","pid":1,"tid":%d,"args":{"name":"PE %d"}}\n' $((r+1)) $r > t.pe$r.json
printf ',{"ph":"X","name":"e","cat":"entry","pid":1,"tid":%d,"ts":1.000,"dur":2.000,"args":{"chare":"C","entry":"e","index":"(%d)"}}\n' $((r+1)) $r >> t.pe$r.json
if [ "$FAIL" = 1 ] && [ $r = 1 ]; then printf ',{"ph":"X","name":"cut' >> t.pe$r.json; exit 3; fi
printf ']}\n' >> t.pe$r.json
"""


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def merge(ucharmrun):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "mk.sh"), "w") as f:
            f.write(PART_SCRIPT)
        run = lambda env: subprocess.run(  # noqa: E731
            [ucharmrun, "-n", "3", "/bin/sh", "mk.sh", "+trace", "t.json"], cwd=d,
            env=dict(os.environ, **env), capture_output=True, text=True, timeout=60)
        r = run({})
        if r.returncode != 0:
            fail(f"job failed: {r.returncode} {r.stderr}")
        left = sorted(f for f in os.listdir(d) if f.endswith(".json"))
        if left != ["t.json"]:
            fail(f"after a good job expected only t.json, found {left}")
        errors, summary = check_trace.check(os.path.join(d, "t.json"), pes=3)
        if errors:
            fail(f"merged trace: {errors}")
        print("good job:", summary)
        r = run({"FAIL": "1"})
        if r.returncode != 3:
            fail(f"failed job: exit code {r.returncode}, expected the rank's 3")
        left = sorted(f for f in os.listdir(d) if f.endswith(".json"))
        if left != ["t.json", "t.pe0.json", "t.pe1.json", "t.pe2.json"]:
            fail(f"after a failed job expected t.json and its 3 parts, found {left}")
        if "parts t.peN.json stay" not in r.stderr:
            fail(f"no note about the parts kept: {r.stderr!r}")
        errors, summary = check_trace.check(os.path.join(d, "t.json"), pes=3)
        if errors:
            fail(f"trace of the failed job: {errors}")
        print("failed job:", summary)


def job(ucharmrun, program, dispatch_cpp):
    with open(dispatch_cpp) as f:
        if "trace::begin_entry" not in f.read():
            print("skipped: runtime/core/dispatch.cpp does not call the tracer yet")
            sys.exit(77)
    # core_migration's storm (element messages between PEs, migrations) and lb (a balancing
    # step with GreedyLB) modes.
    for mode, extra, want in (("storm", [], ["migrations 0"]), ("lb", ["+balancer", "GreedyLB"], ["LB steps 0", "migrations 0"])):
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "job.json")
            r = subprocess.run([ucharmrun, "-n", "2", program, mode, *extra, "+trace", trace], cwd=d,
                               capture_output=True, text=True, timeout=90)
            if r.returncode != 0:
                fail(f"{mode} +trace failed ({r.returncode}): {r.stdout}{r.stderr}")
            left = sorted(os.listdir(d))
            if left != ["job.json"]:
                fail(f"expected only job.json, found {left}")
            errors, summary = check_trace.check(trace, pes=2, min_entries=2, cross_flows=mode == "storm")
            if errors:
                fail(f"{mode}: {summary}: {errors[:10]}")
            for w in want:
                if w in summary:
                    fail(f"{mode}: the trace has no events of a kind it should: {summary}")
            print(mode, summary)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "merge":
        merge(sys.argv[2])
    elif len(sys.argv) >= 5 and sys.argv[1] == "job":
        job(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
