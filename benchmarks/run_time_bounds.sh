#!/usr/bin/env bash
# The time bounds the correctness tests print but do not judge (a loaded machine would fail
# them), judged here on a quiet one: what an idle PE costs and how soon it wakes, and how
# long 1024 ranks on one PE take.
#   idle wake   a flag put (put + fence + put, by CMA: nothing wakes the target) to an idle
#               PE with a poller is noticed within 50 ms, in every one of 20 rounds at 2 PEs
#               (tests/converse/rma_prog.cpp, mode idle)
#   idle CPU    PEs waiting in their schedulers while PE 0 computes 1 s use at most 0.3 s of
#               CPU each, at 4 PEs (tests/converse/testprog/idle.cpp)
#   incast      ranks waiting for a computing rank (their small sends queued because its
#               shared-memory FIFO is full) leave it the cores: its work takes at most
#               2.5x (+0.3 s) as long as alone, at 8 and 16 PEs (tests/ampi/progs/incast.c)
#   many ranks  1024 virtual ranks on one PE (Allgather, Alltoall, Gather, Comm_split: n
#               receives posted at once) end within 30 s (about 9 s with the indexed matching
#               queues; 45 s when matching searched one list) (tests/ampi/progs/many_ranks.c)
#   benchmarks/run_time_bounds.sh [build-dir]
# Prints one PASS/MISS line per target; exits 1 if any missed. Needs UCHARM_BUILD_TESTS.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
run="$build/tools/ucharmrun/ucharmrun"
missed=0
verdict() {  # name, ok (0/1), text
  if [ "$2" = 1 ]; then echo "PASS  $1: $3"; else echo "MISS  $1: $3"; missed=1; fi
}

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

out=$("$run" -n 2 --timeout 60 "$build/tests/converse/converse_rmaprog" idle 20 2>&1)
echo "$out" | grep '^idle wake'
worst=$(echo "$out" | sed -nE 's/^idle wake: .*, ([0-9.]+) ms at most$/\1/p' | sort -g | tail -1)
[ -n "$worst" ] || { echo "$out"; worst=inf; }
verdict "idle wake (2 PEs, 20 rounds)" "$(awk -v w="$worst" 'BEGIN { print (w + 0 <= 50 && w != "inf") }')" \
  "largest delay $worst ms (target <= 50 ms)"

out=$("$run" -n 4 --timeout 60 "$build/tests/converse/converse_testprog" idle 2>&1)
echo "$out" | grep '^idle:'
cpu=$(echo "$out" | sed -nE 's/^idle: the busiest idle PE used ([0-9.]+) s of CPU in 1 s$/\1/p')
[ -n "$cpu" ] || { echo "$out"; cpu=inf; }
verdict "idle CPU (4 PEs)" "$(awk -v c="$cpu" 'BEGIN { print (c + 0 <= 0.3 && c != "inf") }')" \
  "busiest idle PE $cpu s of CPU in 1 s (target <= 0.3 s)"

for pes in 8 16; do
  out=$("$run" -n "$pes" --timeout 60 "$build/tests/ampi/ampi_incast" 2>&1)
  line=$(echo "$out" | grep '^incast: work')
  echo "$line"
  ok=$(echo "$line" | awk '{ a = $3; b = $6; print (b <= 2.5 * a + 0.3 && a > 0) ? 1 : 0 }')
  echo "$out" | grep -q "incast: ok ($pes ranks)" || ok=0
  verdict "incast ($pes PEs)" "${ok:-0}" "${line#incast: } (target: during <= 2.5 x alone + 0.3 s)"
done
SECONDS=0
out=$("$run" -n 1 --timeout 120 "$build/tests/ampi/ampi_many_ranks" +vp 1024 2>&1)
took=$SECONDS
ok=0; echo "$out" | grep -q 'many_ranks: ok (1024 ranks)' && [ "$took" -le 30 ] && ok=1
echo "$out" | grep -q 'many_ranks: ok' || echo "$out" | tail -5
verdict "many ranks (1 PE, +vp 1024)" "$ok" "$took s (target <= 30 s)"
exit $missed
