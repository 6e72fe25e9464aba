#!/usr/bin/env bash
# exit_flush.sh NRANKS MODE LAUNCH...: runs LAUNCH... <prefix> MODE (the exit_flush program
# under ucharmrun or mpirun) and checks that every rank's never-closed file holds its line
# and that every rank's atexit handler and destructor printed.
set -u
n=$1 mode=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$("$@" "$dir/out" "$mode" 2>&1)
rc=$?
echo "$out"
fail=0
[ $rc -eq 0 ] || { echo "exit_flush.sh: the job ended with $rc"; fail=1; }
for ((r = 0; r < n; r++)); do
  grep -qx "rank $r wrote this" "$dir/out.$r" 2>/dev/null || { echo "exit_flush.sh: out.$r lacks its line (buffer not flushed)"; fail=1; }
  grep -q "atexit handler of rank $r\$" <<<"$out" || { echo "exit_flush.sh: no atexit line of rank $r"; fail=1; }
  grep -q "destructor of rank $r\$" <<<"$out" || { echo "exit_flush.sh: no destructor line of rank $r"; fail=1; }
done
[ $fail -eq 0 ] && echo "exit_flush ($mode): ok ($n ranks)"
exit $fail
