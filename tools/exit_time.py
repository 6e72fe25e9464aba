#!/usr/bin/env python3
"""Times a job's end: runs the command, notes when a line containing MARKER appears on its
output (default: the exitstorm mode's "exiting with traffic in flight"), and prints the
seconds from that line to the job's end, with the exit code.
  tools/exit_time.py [--marker TEXT] ucharmrun -n 8 converse_testprog exitstorm"""
import subprocess
import sys
import time

args = sys.argv[1:]
marker = "exiting with traffic in flight"
if len(args) >= 2 and args[0] == "--marker":
    marker, args = args[1], args[2:]
if not args:
    sys.exit(__doc__)
p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
seen = None
for line in p.stdout:
    if seen is None and marker in line:
        seen = time.monotonic()
p.wait()
end = time.monotonic()
if seen is None:
    sys.exit(f"exit_time: '{marker}' never appeared (exit code {p.returncode})")
print(f"exit code {p.returncode}; {end - seen:.3f} s from the marker to the end")
