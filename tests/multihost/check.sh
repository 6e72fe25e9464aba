#!/usr/bin/env bash
# tests/multihost/check.sh: one job on the two emulated hosts of tools/multihost.sh (2 PEs
# each: PEs 0-1 on host 1, 2-3 on host 2), checked.
#   check.sh job REGEX -- program [args...]
#       passes when the job exits 0, its output matches REGEX, the PEs report 2 hosts and
#       UCX chose TCP between the hosts and shared memory (or CMA) inside each
#       (UCX_PROTO_INFO=y tables: "inter-node" ones must use tcp/mhnet only, "intra-node"
#       ones sysv/posix/cma memory only, "self" ones memory ones (one-sided ones of both
#       may also use TCP); both hosts must show TCP
#       and shared memory must appear)
#   check.sh kill -- program [args...]
#       the program prints "rank R pid P ... ready" on every rank; then rank 3 (host 2) is
#       killed with SIGKILL. Passes when the job ends by itself, non-zero, and every
#       surviving PE (0, 1, 2) printed a line naming PE 3 (how long it took is printed, not
#       judged: a job that never ends is stopped by `timeout`, which fails the test).
# Skips (exit 77) where tools/multihost.sh cannot make namespaces (not root, ...).
set -u
here=$(cd "$(dirname "$0")" && pwd)
mh=$here/../../tools/multihost.sh
mode=${1:?usage: check.sh job REGEX -- program... | check.sh kill -- program...}
shift
regex=
if [ "$mode" = job ]; then regex=$1; shift; fi
[ "${1:-}" = -- ] && shift

# A pair of hosts of this run's own (other test runs may use theirs at the same time);
# pairs left by runs that were killed are removed first.
for d in /run/ucmh-*; do
  [ -d "$d" ] && ! kill -0 "${d#/run/ucmh-}" 2>/dev/null && MULTIHOST_NAME=${d#/run/} "$mh" down
done
export MULTIHOST_NAME=ucmh-$$
err=$("$mh" up 2>&1) || { rc=$?; echo "$err"; exit $rc; }
out=$(mktemp)
ucxlog=$(mktemp -d)  # UCX's protocol tables, one file per process (no interleaved lines)
trap '"$mh" down; rm -rf "$out" "$out.timeout" "$ucxlog"' EXIT

fail() { echo "check.sh: FAIL: $*"; exit 1; }

if [ "$mode" = job ]; then
  start=$(date +%s.%N)
  UCX_PROTO_INFO=y UCX_LOG_FILE="$ucxlog/ucx.%h.%p" UCHARM_VERBOSE=1 timeout -k 5 50 "$mh" run -- "$@" >"$out" 2>&1
  rc=$?
  end=$(date +%s.%N)
  cat "$ucxlog"/ucx.* >>"$out" 2>/dev/null  # whole files, after the job's own output
  cat "$out"
  echo "check.sh: the job took $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s (exit code $rc)"
  [ $rc = 0 ] || fail "exit code $rc"
  grep -Eq -- "$regex" "$out" || fail "no output line matches /$regex/"
  grep -q "ucharm: 4 PEs on 2 hosts" "$out" || fail "the PEs did not report 4 PEs on 2 hosts"
  # host kind transport, one line per row of UCX's protocol tables.
  # UCX prefixes each line with "[time] [host:pid:thread]"; the table being read is
  # tracked per process. (Written to stdout, the processes' lines interleaved, and a row
  # could mix two processes' characters: "tcpcp/mhnet"; UCX_LOG_FILE keeps them apart.)
  rows=$(awk '
    !match($0, /^\[[0-9.]+\] \[[^]]*\]/) { next }
    { p = substr($0, RSTART, RLENGTH); sub(/^\[[0-9.]+\] \[/, "", p); sub(/\]$/, "", p) }
    match($0, /\| ucharm [a-z-]+ cfg#/) {  # a table for one kind of peer: intra-node, inter-node, self
      k = substr($0, RSTART + 9, RLENGTH - 9); sub(/ cfg#$/, "", k); sub(/-node$/, "", k)
      kind[p] = k; next }
    # One-sided tables (put/get/atomics) inside a host or to self: neither sysv nor posix
    # reaches user memory and CMA is left out of multihost jobs, so UCX may use TCP there.
    (p in kind) && kind[p] ~ /^(intra|self)$/ && /\| (remote memory|fetching atomic|posted atomic|atomic compare)/ {
      kind[p] = kind[p] "-rma"; next }
    (p in kind) && /\|[^|]*\|[^|]*\|[^|]*\| *$/ {
      host = p; sub(/:.*/, "", host)
      # A row has exactly three cells; more: two processes wrote into one line (their
      # output interleaves), which names no transport reliably.
      n = split($0, cell, "|"); if (n != 5) next
      t = cell[n - 1]; gsub(/ /, "", t)
      if (t != "Config") print host, kind[p], t }' "$out" | sort -u)
  echo "check.sh: transports seen (host, kind, transport):"
  echo "$rows" | sed 's/^/  /'
  [ -n "$rows" ] || fail "no UCX_PROTO_INFO tables in the output"
  bad=$(echo "$rows" | awk '($2 == "inter" && $3 !~ /^tcp\/mhnet$/) ||
                            ($2 == "intra" && $3 !~ /^(sysv|posix|cma)\/memory$/) ||
                            ($2 ~ /-rma$/ && $3 !~ /^((self|sysv|posix|cma)\/memory|tcp\/mhnet)$/) ||
                            ($2 == "self" && $3 !~ /^(self|sysv|posix|cma)\/memory$/)')
  [ -z "$bad" ] || fail "unexpected transports: $bad"
  echo "$rows" | grep -q " inter tcp/mhnet" || fail "no TCP between the hosts"
  echo "$rows" | grep -Eq " intra (sysv|posix)/memory" || fail "no shared memory inside a host"
  for h in 1 2; do
    echo "$rows" | grep -q "^$MULTIHOST_NAME-h$h inter" || fail "host $h reported no TCP table"
  done
  echo "check.sh: ok"
  exit 0
fi

[ "$mode" = kill ] || { echo "check.sh: unknown mode '$mode'"; exit 2; }
# Stopped by `timeout` (exit 124, or 137 after -k) only once its 50 s have passed.
( SECONDS=0; timeout -k 5 50 "$mh" run -- "$@" >"$out" 2>&1; rc=$?
  [ $SECONDS -ge 50 ] && echo timeout >"$out.timeout"; exit $rc ) &
job=$!
while [ "$(grep -c 'ready' "$out")" -lt 4 ] && kill -0 $job 2>/dev/null; do sleep 0.1; done
victim=$(sed -n 's/.*rank 3 pid \([0-9]*\) on \([^ ]*\) ready.*/\1 \2/p' "$out")
[ -n "$victim" ] || { cat "$out"; fail "rank 3 never said it was ready"; }
set -- $victim
[ "$2" = "$MULTIHOST_NAME-h2" ] || { cat "$out"; fail "rank 3 runs on $2, not on host 2"; }
start=$(date +%s.%N)
kill -KILL "$1"
wait $job
rc=$?
end=$(date +%s.%N)
took=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
cat "$out"
echo "check.sh: killed rank 3 (pid $1 on $2); the job ended $took s later with exit code $rc"
[ $rc != 0 ] || fail "the job ended with exit code 0"
[ ! -e "$out.timeout" ] || fail "the job did not end after the kill: timeout stopped it"
missing=
for pe in 0 1 2; do
  grep -Eq "PE $pe: .*PE 3([^0-9]|$)" "$out" || missing="$missing $pe"
done
[ -z "$missing" ] || fail "PEs that did not name PE 3:$missing"
echo "check.sh: ok"
