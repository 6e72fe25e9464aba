#!/usr/bin/env bash
# Every layer of ucharm against its peer (issue 20's table), measured alternately in one run:
# each repetition runs every layer and every peer once, in turn; the table holds medians of
# the repetitions, the ratio ucharm / peer and PASS/MISS against the issue's target.
#   benchmarks/run_peers.sh [build-dir]          REPS=5, QUICK=1 (fewer iterations, 3 reps)
#   ONLY="conv_lat raw_lat ..." runs only those jobs (names: the functions below).
#   TABLE_ONLY=1 OUT=dir prints the table again from dir/raw.tsv (nothing is measured).
#   OUT=dir    where the raw data goes (default build-dir/peers): raw.tsv (one line per
#              measurement: rep layer test size value), medians.tsv, table.md; tools/loggops.py
#              fits LogGOPS parameters from it.
# Rows: Converse vs raw `ucx_perftest tag_lat` (heap buffers) at every power of two 8 B-4 MiB;
# group and array (core_pingpong) vs Converse at every size; AMPI osu_latency vs OpenMPI pml
# ucx (ucharm's UCX) and ob1+vader at every size; Python proxy call and Channel 8 B vs mpi4py
# pickled send/recv; Converse message rate (converse_rate, 8 B, window 64) vs `tag_bw`; idle
# RSS per PE (converse_rate --idle at 2 PEs vs an MPI_Init + barrier + sleep program on ob1);
# start-up of a hello at 1-16 PEs vs mpirun of an MPI hello; co_await round trip vs a plain
# entry ping-pong (core_coawait, when built). Streaming sweeps (Converse
# rate, tag_bw, osu bw on AMPI and both OpenMPI pmls) feed the LogGOPS fit only.
# The small MPI peer program (hello / idle) is compiled from this script with mpicc.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
quick=${QUICK:-0}
if [ "$quick" = 1 ]; then reps=${REPS:-3}; else reps=${REPS:-5}; fi
out=${OUT:-$build/peers}
mkdir -p "$out"
out=$(cd "$out" && pwd)
run="$build/tools/ucharmrun/ucharmrun"
bench="$build/benchmarks"
ucx_root=${UCX_ROOT:-$(sed -n 's/^UCHARM_UCX_ROOT:PATH=//p' "$build/CMakeCache.txt")}
perftest="$ucx_root/bin/ucx_perftest"
py=${PYTHON:-$root/.venv/bin/python}
venv="$root/.venv-mpi4py"
port=$((20000 + RANDOM % 20000))
export PYTHONPATH="$build/bindings/python${PYTHONPATH:+:$PYTHONPATH}"

# Iterations: full mode as the other scripts; QUICK a fifth.
# rate_mib: timed bytes per size of the streaming sweeps (Converse and tag_bw alike).
if [ "$quick" = 1 ]; then pp_iters=2000 py_iters=4000 rate_iters=200000 rate_mib=32 bw_iters=40; else
  pp_iters=10000 py_iters=20000 rate_iters=1000000 rate_mib=128 bw_iters=200; fi
pes_list=(1 2 4 8 16)
sizes=()
for ((s = 8; s <= 4194304; s *= 2)); do sizes+=("$s"); done

# ---- medians, the table (TABLE_ONLY=1: again from OUT/raw.tsv, nothing measured) ----
print_table() {  # loads...
  python3 - "$out" "$quick" "$*" <<'EOF'
import collections, os, statistics, sys
out, quick, loads = sys.argv[1], sys.argv[2], sys.argv[3].split()
vals = collections.defaultdict(list)
reps = set()
with open(f'{out}/raw.tsv') as f:
    next(f)
    for line in f:
        rep, layer, test, size, v = line.split('\t')
        reps.add(rep)
        vals[(layer, test, int(size))].append(float(v))
med = {k: statistics.median(v) for k, v in vals.items()}
with open(f'{out}/medians.tsv', 'w') as f:
    f.write('layer\ttest\tsize\tmedian\tn\n')
    for k in sorted(med):
        f.write(f'{k[0]}\t{k[1]}\t{k[2]}\t{med[k]:.6g}\t{len(vals[k])}\n')

def size_txt(s):
    return f'{s >> 20} MiB' if s >= 1 << 20 else f'{s >> 10} KiB' if s >= 1024 else f'{s} B'

def num(v):
    return '-' if v is None else f'{v:.3g}' if v < 100 else f'{v:.0f}'

rows = []
def row(what, size, ours, peer, target=None, ge=False):
    """One comparison: ucharm's median, the peer's, the ratio, the target on the ratio."""
    r = ours / peer if ours is not None and peer else None
    bound = ('≥ ' if ge else '≤ ') + f'{target}x'
    verdict = 'n/a' if r is None else 'PASS' if (r >= target if ge else r <= target) else 'MISS'
    rows.append((what, size, num(ours), num(peer), '-' if r is None else f'{r:.2f}', bound, verdict))

g = lambda l, t, s: med.get((l, t, s))
sizes = [8 << i for i in range(20)]
for s in sizes:
    row('Converse vs raw `ucx_perftest tag_lat` (µs)', size_txt(s), g('converse', 'lat', s), g('raw', 'lat', s), 1.1)
for s in sizes:  # both group and array must meet the target
    c = g('converse', 'lat', s)
    o = [g('group', 'lat', s), g('array', 'lat', s)]
    r = [x / c if x is not None and c else None for x in o]
    verdict = 'n/a' if None in r else 'PASS' if max(r) <= 1.15 else 'MISS'
    rows.append(('group / array vs Converse (µs)', size_txt(s), ' / '.join(map(num, o)), num(c),
                 ' / '.join('-' if x is None else f'{x:.2f}' for x in r), '≤ 1.15x', verdict))
for s in sizes:
    a, u, b = g('ampi', 'lat', s), g('ompi_ucx', 'lat', s), g('ompi_ob1', 'lat', s)
    r = [a / p if a is not None and p else None for p in (u, b)]
    targeted = s in (8, 1 << 20)
    verdict = ('n/a' if r[0] is None else 'PASS' if r[0] <= 1.0 else 'MISS') if targeted else 'info'
    rows.append(('AMPI `osu_latency` vs OpenMPI pml ucx / ob1 (µs)', size_txt(s), num(a), f'{num(u)} / {num(b)}',
                 ' / '.join('-' if x is None else f'{x:.2f}' for x in r), '≤ 1.0x (ucx)' if targeted else '-', verdict))
row('Python proxy call vs mpi4py pickled (µs)', '8 B', g('py_proxy', 'lat', 8), g('mpi4py', 'lat', 8), 1.0)
row('Python Channel vs mpi4py pickled (µs)', '8 B', g('py_channel', 'lat', 8), g('mpi4py', 'lat', 8), 1.2)
m = lambda v: None if v is None else v / 1e6
row('message rate, window 64, vs raw `tag_bw` (M msg/s)', '8 B', m(g('converse', 'rate', 8)), m(g('raw', 'rate', 8)), 0.9, ge=True)
row('idle RSS per PE, 2 PEs, vs OpenMPI ob1 (MiB)', '2 PEs', g('ucharm', 'rss', 2), g('ompi_ob1', 'rss', 2), 1.0)
part = lambda l: ' / '.join(num(g(l, f'rss_{k}', 2)) for k in ('anon', 'file', 'shmem'))
rows.append(('idle RSS parts: anon / file (libraries) / shmem (MiB)', '2 PEs', part('ucharm'), part('ompi_ob1'),
             '-', '-', 'info'))
for n in (1, 2, 4, 8, 16):
    row('start-up, hello vs `mpirun` MPI hello (s)', f'{n} PEs', g('ucharm', 'start', n), g('ompi', 'start', n), 0.7)
if g('coawait', 'lat', 0) is not None:
    row('`co_await` round trip vs plain entry ping-pong (µs, round trip)', '8 B', g('coawait', 'lat', 0), g('plain', 'lat', 0), 1.2)
else:
    rows.append(('`co_await` round trip vs plain entry ping-pong', '-', '-', '-', '-', '≤ 1.2x',
                 'skipped (no build/benchmarks/core_coawait)'))

head = ('comparison', 'size', 'ucharm', 'peer', 'ratio', 'target', 'verdict')
lines = ['| ' + ' | '.join(head) + ' |', '|' + '|'.join(['---', '---:', '---:', '---:', '---:', '---', '---']) + '|']
lines += ['| ' + ' | '.join(r) + ' |' for r in rows]
npass = sum(r[-1] == 'PASS' for r in rows)
nmiss = sum(r[-1] == 'MISS' for r in rows)
lines.append('')
lines.append(f'Medians of {len(reps)} alternating repetitions (QUICK={quick}); {npass} PASS, {nmiss} MISS; '
             f'load average after each repetition: {", ".join(loads)} (on {os.cpu_count()} cores).')
text = '\n'.join(lines)
open(f'{out}/table.md', 'w').write(text + '\n')
print(text)
EOF
}
if [ "${TABLE_ONLY:-0}" = 1 ]; then
  [ -s "$out/raw.tsv" ] || { echo "run_peers.sh: no $out/raw.tsv to print" >&2; exit 1; }
  quick=$(sed -n 's/^mode: QUICK=//p' "$out/machine.txt" 2>/dev/null)
  quick=${quick:-?}
  print_table "$(sed -n 's/^load average (1 min) after each repetition: \([^;]*\);.*/\1/p' "$out/machine.txt" 2>/dev/null)"
  exit
fi

raw="$out/raw.tsv"
printf 'rep\tlayer\ttest\tsize\tvalue\n' >"$raw"
note() { echo "$*" >&2; echo "$*" >>"$out/notes.txt"; }
: >"$out/notes.txt"
: >"$out/stderr.txt"
printf 'rep\tjob\tseconds\n' >"$out/jobs.tsv"
# record rep layer test: reads "size value" lines (numeric rows only: UCX may log to stdout).
record() {
  awk -v r="$1" -v l="$2" -v t="$3" '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9.]+(e[-+]?[0-9]+)?$/ {
    printf "%s\t%s\t%s\t%s\t%s\n", r, l, t, $1, $2 }' >>"$raw"
}

# ---- the MPI peer program: "hello" prints and ends; "idle S" barriers, sleeps S s, ends ----
mpi_peer="$out/mpi_peer"
if command -v mpicc >/dev/null && { [ ! -x "$mpi_peer" ] || [ "$mpi_peer" -ot "${BASH_SOURCE[0]}" ]; }; then
  cat >"$out/mpi_peer.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char** argv) {
  int rank, size;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc > 2 && strcmp(argv[1], "idle") == 0) {
    MPI_Barrier(MPI_COMM_WORLD); /* connected, as the ucharm program after its first message */
    if (rank == 0) { printf("idle %d ranks\n", size); fflush(stdout); }
    usleep((useconds_t)(atof(argv[2]) * 1e6));
  } else {
    printf("hello from rank %d of %d\n", rank, size);
  }
  MPI_Finalize();
  return 0;
}
EOF
  mpicc -O2 -o "$mpi_peer" "$out/mpi_peer.c" || note "mpicc failed: no MPI peer program"
fi
# mpi4py against the system OpenMPI, in its own virtualenv (as run_python_pingpong.sh).
if ! "$venv/bin/python" -c 'import mpi4py' 2>/dev/null; then
  echo "== creating $venv with mpi4py"
  python3 -m venv "$venv" && echo '*' >"$venv/.gitignore" && "$venv/bin/pip" install --quiet mpi4py ||
    note "mpi4py could not be installed: no Python peer"
fi

# ---- one function per layer / peer; each appends its figures for repetition $1 ----
mpirun_=(mpirun --allow-run-as-root)
ompi_ucx=(env "LD_LIBRARY_PATH=$ucx_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "${mpirun_[@]}" -np 2 --bind-to core
  -x LD_LIBRARY_PATH --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
ompi_ob1=("${mpirun_[@]}" -np 2 --bind-to core --mca pml ob1 --mca btl "self,vader")
osu_lat=(-t latency -m 8:4194304 -i "$pp_iters" -x $((pp_iters / 10)) -p 3)
# bw: windows of 64; large sizes (a tenth of the windows above 8 KiB) in a second run with
# fewer windows, so that 4 MiB stays ~0.3 GiB per size.
osu_bw_small=(-t bw -m 8:65536 -i "$bw_iters" -x $((bw_iters / 10)) -p 3)
osu_bw_large=(-t bw -m 131072:4194304 -i 10 -x 10 -p 3)

# Both sides of ucx_perftest bound to cores 0 and 1, as ucharmrun binds the two PEs; one
# process pair runs every size (batch file), heap buffers as the runtime's.
perftest_batch() {  # batch-file -> the "Final:" lines in order
  port=$((port + 1))
  UCX_ALLOC_PRIO=heap LD_LIBRARY_PATH="$ucx_root/lib" timeout 120 taskset -c 1 "$perftest" -p "$port" -b "$1" >/dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  UCX_ALLOC_PRIO=heap LD_LIBRARY_PATH="$ucx_root/lib" timeout 120 taskset -c 0 "$perftest" 127.0.0.1 -p "$port" \
    -b "$1" 2>/dev/null | grep '^Final:'
  wait "$srv" 2>/dev/null
}
: >"$out/tag_lat.batch"
: >"$out/tag_bw.batch"
for s in "${sizes[@]}"; do
  n=$((s >= 262144 ? 500 : (s >= 16384 ? 5000 : 20000)))
  [ "$quick" = 1 ] && n=$((n / 4))
  echo "lat$s -t tag_lat -s $s -n $n -w $((n / 10))" >>"$out/tag_lat.batch"
  # as converse_rate: rate_iters messages, a tenth from 64 KiB, a hundredth from 1 MiB, <= rate_mib
  m=$((s >= 1048576 ? rate_iters / 100 : (s >= 65536 ? rate_iters / 10 : rate_iters)))
  cap=$((rate_mib * 1048576 / s))
  m=$((m < cap ? m : cap))
  echo "bw$s -t tag_bw -s $s -n $m -w $((m / 10 > 64 ? m / 10 : 64))" >>"$out/tag_bw.batch"
done

# Ping-pong sweeps in two runs: the warm-up (a tenth of the iterations) up to 32 KiB, 20
# round trips from 64 KiB (a slow layer's 1000 warm-up trips of 4 MiB would take a minute).
pp_sweep() {  # cmd... -> the table 8 B - 4 MiB
  "$@" --min 8 --max 32k --iters "$pp_iters" --warmup $((pp_iters / 10))
  "$@" --min 64k --max 4M --iters "$pp_iters" --warmup 20 | grep -v '^#'
}
conv_lat() { pp_sweep "$run" -n 2 --timeout 120 "$bench/converse_pingpong" | record "$1" converse lat; }
raw_lat() {
  perftest_batch "$out/tag_lat.batch" | paste -d' ' <(printf '%s\n' "${sizes[@]}") - | awk '{print $1, $6}' | record "$1" raw lat
}
core_lat() {
  local t
  t=$(pp_sweep "$run" -n 2 --timeout 120 "$bench/core_pingpong")
  awk '{print $1, $2}' <<<"$t" | record "$1" group lat
  awk '{print $1, $3}' <<<"$t" | record "$1" array lat
}
ampi_lat() { "$run" -n 2 --timeout 120 "$bench/mpi/osu_mpi_ampi" "${osu_lat[@]}" | record "$1" ampi lat; }
ompi_ucx_lat() { timeout 120 "${ompi_ucx[@]}" "$bench/mpi/osu_mpi_ompi" "${osu_lat[@]}" | record "$1" ompi_ucx lat; }
ompi_ob1_lat() { timeout 120 "${ompi_ob1[@]}" "$bench/mpi/osu_mpi_ompi" "${osu_lat[@]}" | record "$1" ompi_ob1 lat; }
py_one() {  # mode -> "8 us"
  "$run" -n 2 --timeout 120 "$py" "$root/benchmarks/python/pingpong.py" --mode "$1" --min 8 --max 8 --iters "$py_iters" |
    awk '$1 == 8 {print $1, $2}'
}
py_proxy() { py_one proxy-bytes | record "$1" py_proxy lat; }
py_channel() { py_one channel-bytes | record "$1" py_channel lat; }
# as the OSU runs: bound, not --oversubscribe (which makes OpenMPI yield when idle)
mpi4py_lat() {
  timeout 120 "${mpirun_[@]}" -np 2 --bind-to core "$venv/bin/python" "$root/benchmarks/python/mpi4py_pingpong.py" \
    --mode pickle --min 8 --max 8 --iters "$py_iters" | awk '$1 == 8 {print $1, $2}' | record "$1" mpi4py lat
}
conv_rate() {
  local t
  t=$("$run" -n 2 --timeout 120 "$bench/converse_rate" --min 8 --max 4M --iters "$rate_iters" --max-bytes "${rate_mib}M")
  awk '{print $1, $2}' <<<"$t" | record "$1" converse rate
  awk '{print $1, $3}' <<<"$t" | record "$1" converse bw
}
raw_bw() {  # ucx_perftest: overall MB/s is MiB/s (column 7), overall msg/s column 9
  local t
  t=$(perftest_batch "$out/tag_bw.batch" | paste -d' ' <(printf '%s\n' "${sizes[@]}") -)
  awk '{print $1, $10}' <<<"$t" | record "$1" raw rate
  awk '{printf "%s %.2f\n", $1, $8 * 1.048576}' <<<"$t" | record "$1" raw bw
}
both_bw() { "$@" "${osu_bw_small[@]}"; "$@" "${osu_bw_large[@]}"; }  # cmd... -> the bw table 8 B-4 MiB
ampi_bw() { both_bw "$run" -n 2 --timeout 120 "$bench/mpi/osu_mpi_ampi" | record "$1" ampi bw; }
ompi_ucx_bw() { both_bw timeout 120 "${ompi_ucx[@]}" "$bench/mpi/osu_mpi_ompi" | record "$1" ompi_ucx bw; }
ompi_ob1_bw() { both_bw timeout 120 "${ompi_ob1[@]}" "$bench/mpi/osu_mpi_ompi" | record "$1" ompi_ob1 bw; }

descendants() { local c; for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do echo "$c"; descendants "$c"; done; }
# rss_of comm cmd...: starts cmd, waits for its "idle" line, prints "FIELD 2 MiB" for VmRSS and
# its parts RssAnon, RssFile (libraries), RssShmem: the mean over the processes named comm
# under it (2: their count, the size column), then lets it end.
rss_of() {
  local comm=$1 log pid p t
  shift
  log=$(mktemp)
  "$@" >"$log" 2>&1 &
  pid=$!
  for ((t = 0; t < 200; t++)); do grep -q '^idle' "$log" && break; sleep 0.05; done
  sleep 0.3
  for p in $(descendants "$pid"); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$comm" ] && cat "/proc/$p/status" 2>/dev/null
  done | awk '$1 ~ /^(VmRSS|RssAnon|RssFile|RssShmem):$/ { k = substr($1, 1, length($1) - 1); s[k] += $2; n[k]++ }
    END { for (k in s) printf "%s %d %.2f\n", k, n[k], s[k] / n[k] / 1024 }'
  wait "$pid" >/dev/null 2>&1
  rm -f "$log"
}
rss_record() {  # rep layer: "FIELD n MiB" lines -> tests rss, rss_anon, rss_file, rss_shmem
  local f n v
  while read -r f n v; do
    case $f in VmRSS) echo "$n $v" | record "$1" "$2" rss ;; *) echo "$n $v" | record "$1" "$2" "rss_$(tr 'A-Z' 'a-z' <<<"${f#Rss}")" ;; esac
  done
}
rss_ucharm() { rss_of converse_rate "$run" -n 2 --timeout 60 "$bench/converse_rate" --idle 1.5 | rss_record "$1" ucharm; }
rss_ompi() { rss_of mpi_peer timeout 60 "${ompi_ob1[@]}" "$mpi_peer" idle 1.5 | rss_record "$1" ompi_ob1; }
wall() {  # cmd... -> seconds of wall time (empty if it failed)
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || return 1
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", b - a }'
}
startup() {  # ucharm hello and the MPI hello, alternating per PE count
  local n
  for n in "${pes_list[@]}"; do
    echo "$n $(wall "$run" -n "$n" --timeout 120 "$build/examples/hello")" | record "$1" ucharm start
    echo "$n $(wall timeout 120 "${mpirun_[@]}" --oversubscribe -np "$n" "$mpi_peer" hello)" | record "$1" ompi start
  done
}
# core_coawait (issue 20 part 2): plain, co_await and callback round trips alternate inside
# it; its line "median round trip (us): plain P, co_await C, callback B" gives the figures.
coawait() {
  local runs=3
  [ "$quick" = 1 ] && runs=1
  "$run" -n 2 --timeout 120 "$bench/core_coawait" --iters $((pp_iters * 10)) --runs "$runs" |
    sed -n 's/^median round trip (us): plain \([0-9.]*\), co_await \([0-9.]*\).*/\1 \2/p' >"$out/coawait.tmp"
  awk '{print 0, $2}' "$out/coawait.tmp" | record "$1" coawait lat
  awk '{print 0, $1}' "$out/coawait.tmp" | record "$1" plain lat
  rm -f "$out/coawait.tmp"
}

# ---- which jobs can run here ----
jobs=()
want() {  # job file...: the job runs when every file is executable
  local j=$1 f
  shift
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $j "* ]] && return  # ONLY="conv_lat raw_lat": a subset
  for f in "$@"; do [ -x "$f" ] || { note "skipped $j: $f is not built"; return; }; done
  jobs+=("$j")
}
want conv_lat "$bench/converse_pingpong"
want raw_lat "$perftest"
want core_lat "$bench/core_pingpong"
want ampi_lat "$bench/mpi/osu_mpi_ampi"
want ompi_ucx_lat "$bench/mpi/osu_mpi_ompi" "$(command -v mpirun)"
want ompi_ob1_lat "$bench/mpi/osu_mpi_ompi" "$(command -v mpirun)"
if "$py" -c 'import ucharm' 2>/dev/null; then want py_proxy "$py"; want py_channel "$py"; else
  note "skipped Python: $py cannot import ucharm (is $build/bindings/python built?)"; fi
want mpi4py_lat "$venv/bin/python" "$(command -v mpirun)"
want conv_rate "$bench/converse_rate"
want raw_bw "$perftest"
want ampi_bw "$bench/mpi/osu_mpi_ampi"
want ompi_ucx_bw "$bench/mpi/osu_mpi_ompi"
want ompi_ob1_bw "$bench/mpi/osu_mpi_ompi"
want rss_ucharm "$bench/converse_rate"
want rss_ompi "$mpi_peer"
want startup "$build/examples/hello" "$mpi_peer"
want coawait "$bench/core_coawait"

ucx_v=$(LD_LIBRARY_PATH="$ucx_root/lib" "$ucx_root/bin/ucx_info" -v 2>/dev/null | sed -n 's/# Library version: //p')
machine="$(nproc) cores ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), Linux $(uname -r); UCX $ucx_v; $(mpirun --version 2>/dev/null | head -1)"
echo "$machine" >"$out/machine.txt"
echo "== machine: $machine"
echo "== $reps alternating repetitions (QUICK=$quick), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
start_s=$SECONDS
loads=""
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
echo "mode: QUICK=$quick" >>"$out/machine.txt"
for ((i = 1; i <= reps; i++)); do
  for j in "${jobs[@]}"; do
    t0=$SECONDS
    $j "$i" 2>>"$out/stderr.txt" || note "$j: failed in repetition $i (see $out/stderr.txt)"
    printf '%s\t%s\t%s\n' "$i" "$j" "$((SECONDS - t0))" >>"$out/jobs.tsv"  # seconds per job
  done
  load=$(cut -d' ' -f1 /proc/loadavg)
  loads+="$load "
  echo "   repetition $i done after $((SECONDS - start_s)) s (load $load)"
done
echo "load average (1 min) after each repetition: $loads; $((SECONDS - start_s)) s in all" >>"$out/machine.txt"

print_table "$loads"
echo
echo "raw data: $out/raw.tsv (medians.tsv, table.md, notes.txt); LogGOPS: .venv/bin/python tools/loggops.py $out"
