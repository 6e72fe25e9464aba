"""Checks a `+trace` file (Chrome trace-event JSON) the way a viewer will read it.

python check_trace.py TRACE.json [--pes N] [--min-entries K] [--cross-flows]
    [--migrations] [--lb-steps K]

Always: the file parses; every event has ph, pid, tid, ts (metadata: no ts); every PE
track is named "PE n"; complete events nest on each track; every flow start ("s") lies
inside an entry on its track, and every flow end ("f", bp "e") inside an entry on its
track with a start of the same id; v2 flows (bind_id) pair out with in. Options add
expectations. Exits 1 with the reasons on failure, 0 otherwise (prints a summary).
"""
import argparse
import bisect
import collections
import json
import sys


def check(path, pes=None, min_entries=0, cross_flows=False, migrations=False, lb_steps=0):
    errors = []
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    names = {}
    slices = collections.defaultdict(list)  # tid -> [(start, end, event)]
    for e in events:
        for key in ("ph", "pid", "tid"):
            if key not in e:
                errors.append(f"event without {key}: {e}")
        if e.get("ph") == "M":
            if e.get("name") == "thread_name":
                names[e["tid"]] = e["args"]["name"]
            continue
        if not isinstance(e.get("ts"), (int, float)):
            errors.append(f"event without a numeric ts: {e}")
            continue
        if e["ph"] == "X":
            if e["dur"] < 0:
                errors.append(f"negative duration: {e}")
            slices[e["tid"]].append((e["ts"], e["ts"] + e["dur"], e))
    for tid, name in names.items():
        if name != f"PE {tid - 1}":
            errors.append(f"track {tid} is named {name!r}, not 'PE {tid - 1}'")
    # Complete events on one track must nest (Perfetto drops ones that overlap).
    for tid, ss in slices.items():
        ss.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end, e in ss:
            while stack and stack[-1][1] <= start:
                stack.pop()
            if stack and end > stack[-1][1] + 1e-9:
                errors.append(f"PE {tid - 1}: {e['name']} at {start} overlaps "
                              f"{stack[-1][2]['name']} at {stack[-1][0]} without nesting")
            stack.append((start, end, e))

    entry_slices = {tid: [s for s in ss if s[2].get("cat") == "entry"]
                    for tid, ss in slices.items()}
    entry_starts = {tid: [s[0] for s in ss] for tid, ss in entry_slices.items()}

    def inside_entry(tid, ts):
        # The enclosing entry starts at or before ts: look back from the last such start
        # (entries nest, so a few steps back suffice).
        i = bisect.bisect_right(entry_starts.get(tid, []), ts)
        ss = entry_slices.get(tid, [])
        return any(ss[j][0] <= ts <= ss[j][1] for j in range(i - 1, max(i - 65, -1), -1))

    starts = {e["id"]: e for e in events if e.get("ph") == "s"}
    ends = [e for e in events if e.get("ph") == "f"]
    for e in starts.values():
        if not inside_entry(e["tid"], e["ts"]):
            errors.append(f"flow start outside an entry: {e}")
    cross = 0
    for e in ends:
        if e["id"] not in starts:
            errors.append(f"flow end without a start: {e}")
            continue
        if e.get("bp") != "e" or not inside_entry(e["tid"], e["ts"]):
            errors.append(f"flow end not bound inside an entry: {e}")
        if starts[e["id"]]["tid"] != e["tid"]:
            cross += 1
    bound = collections.defaultdict(dict)
    for e in events:
        if "bind_id" in e:
            bound[e["bind_id"]]["out" if e.get("flow_out") else "in"] = e
    for bid, pair in bound.items():
        if set(pair) != {"out", "in"}:
            errors.append(f"migration flow {bid} has only its {list(pair)} end")

    entries = collections.Counter(e["tid"] - 1 for e in events
                                  if e.get("ph") == "X" and e.get("cat") == "entry")
    for e in events:
        if e.get("cat") == "entry":
            for key in ("chare", "entry", "index"):
                if key not in e.get("args", {}):
                    errors.append(f"entry without args.{key}: {e}")
    lbs = [e for e in events if e.get("cat") == "lb"]
    for e in lbs:
        a = e.get("args", {})
        for key in ("step", "strategy", "before", "after", "moved"):
            if key not in a:
                errors.append(f"LB step without args.{key}: {e}")
    migs = [e for e in events if e.get("cat") == "migration"]
    if pes is not None:
        for pe in range(pes):
            if names.get(pe + 1) != f"PE {pe}":
                errors.append(f"no track named 'PE {pe}'")
            if entries[pe] < max(min_entries, 1):
                errors.append(f"PE {pe} has {entries[pe]} entry events, expected >= "
                              f"{max(min_entries, 1)}")
    elif min_entries and sum(entries.values()) < min_entries:
        errors.append(f"{sum(entries.values())} entry events, expected >= {min_entries}")
    if cross_flows and cross == 0:
        errors.append("no message flow between two PEs")
    if migrations and not migs:
        errors.append("no migration events")
    if len(lbs) < lb_steps:
        errors.append(f"{len(lbs)} LB steps, expected >= {lb_steps}")
    summary = (f"{len(events)} events; entries per PE {dict(sorted(entries.items()))}; "
               f"flows {len(starts)} sent, {len(ends)} received ({cross} between PEs); "
               f"idle {sum(1 for e in events if e.get('name') == 'idle')}; "
               f"migrations {len(migs)}; LB steps {len(lbs)}")
    return errors, summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--pes", type=int)
    ap.add_argument("--min-entries", type=int, default=0)
    ap.add_argument("--cross-flows", action="store_true")
    ap.add_argument("--migrations", action="store_true")
    ap.add_argument("--lb-steps", type=int, default=0)
    a = ap.parse_args()
    errors, summary = check(a.trace, a.pes, a.min_entries, a.cross_flows, a.migrations,
                            a.lb_steps)
    print(summary)
    for err in errors[:20]:
        print("error:", err, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
