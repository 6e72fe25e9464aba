#!/usr/bin/env bash
# On the GPU machine (a pack from tools/device-pack.sh carried; DEVICE_DIR names it): the
# Message Roofline benchmark (benchmarks/core/roofline.cpp), 2 PEs on 2 GPUs, every path
# alternated in one run; its table and $OUT/roofline.csv, and $OUT/roofline.png drawn by
# tools/message_roofline.py where that machine's python has matplotlib (otherwise draw it
# on the development machine from the CSV:
#   .venv/bin/python tools/message_roofline.py docs/message-roofline.png roofline.csv).
# Should the joint run fail (a path that hangs is killed by the timeout and takes every
# figure with it), each path runs alone after it, into the same CSV. Options go to the
# benchmark (e.g. --reps 5 --max-bytes 64M; not --csv or --paths); RF_DEVICE=d puts both
# PEs on GPU d. About 30 s when all goes well; at most 8.5 minutes. Logs in $OUT.
#   benchmarks/run_roofline.sh [benchmark options]
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
source tools/device-env.sh
R=$build/tools/ucharmrun/ucharmrun
B=$build/benchmarks/core_roofline
nvidia-smi -L | tee "$out/gpus.txt"
nvidia-smi topo -m > "$out/topo.txt" 2>&1
csv=$out/roofline.csv
rm -f "$csv"
echo "--- all paths, alternated"
timeout 200 "$R" -n 2 --timeout 190 "$B" --csv "$csv" "$@" > "$out/roofline.txt" 2>&1
rc=$?
echo "exit $rc"; cat "$out/roofline.txt"
if [ $rc -ne 0 ]; then
  echo "--- the joint run failed: each path alone"
  echo "path,msgs_per_sync,bytes,usec_per_sync" > "$csv"
  rc=0
  for p in kernel stream channel memcpy window flush; do
    timeout 65 "$R" -n 2 --timeout 60 "$B" --paths "$p" --csv "$out/roofline-$p.csv" "$@" \
      > "$out/roofline-$p.txt" 2>&1
    r=$?
    echo "$p: exit $r"; cat "$out/roofline-$p.txt"
    [ $r -eq 0 ] || rc=$r
    [ -s "$out/roofline-$p.csv" ] && tail -n +2 "$out/roofline-$p.csv" >> "$csv"
  done
fi
if [ -s "$csv" ] && [ "$(wc -l < "$csv")" -gt 1 ]; then
  py=python3
  [ -x .venv/bin/python ] && py=.venv/bin/python
  if $py -c 'import matplotlib' 2>/dev/null; then
    $py tools/message_roofline.py "$out/roofline.png" "$csv"
  else
    echo "run_roofline: $py has no matplotlib here: draw $csv on the development machine" \
         "(tools/message_roofline.py)"
  fi
fi
exit $rc
