#!/usr/bin/env bash
# The GPU checks, one command. Runs on the GPU machine, from the repository root, with
# .device/ carried (tools/device-pack.sh makes it; DEVICE_DIR names another folder), with
# any number of GPUs (one is enough: PEs then share it):
#   ctest   the GPU tests (CTest's *Gpu* tests: core, Converse, AMPI) with every GPU visible,
#           and with one GPU shared by all PEs;
#   jacobi  Jacobi3D --verify with CUDA kernels in every halo mode, with 1, 2 and 4 PEs per
#           GPU and at least 8 PEs, one block per PE and overdecomposed, and 2 PEs sharing
#           one GPU (CUDA_VISIBLE_DEVICES); device windows (kernel put/signal/wait);
#   ampi    GPU-aware AMPI: tools/gpu-ampi.sh's checks (p2p_cuda in 8 layouts, Jacobi3D in
#           MPI with --verify), without its benchmarks;
#   python  the CuPy tests and the Python Jacobi3D --verify (tools/gpu-python.sh);
#   all     all of these (the default).
# then prints one summary table. Full logs go to $OUT. Exit status: non-zero if any failed.
#   tools/gpu-check.sh [all|ctest|jacobi|ampi|python]...   (GPU_DIAG=1 adds UCX/CUDA diagnostics
#                                                          and traced one-PE stream chains)
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
source "$(dirname "${BASH_SOURCE[0]}")/device-env.sh"  # sets $build and $dev
R=$build/tools/ucharmrun/ucharmrun
J=$build/examples/jacobi3d/jacobi3d
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
first=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | head -1)
{
  nvidia-smi -L
  echo "--- libraries"
  ldd "$build/tests/converse/converse_testprog" | grep -E "not found|pmix|ucp|boost|fmt"
} 2>&1 | tee "$out/env.txt"
if [ "$gpus" -lt 1 ]; then
  echo "gpu-check: no GPU visible (nvidia-smi lists none)" >&2
  exit 2
fi

rows=()
failed=0
row() {  # what, PEs, GPUs, result
  rows+=("$(printf '%-50s %4s %5s  %s' "$1" "$2" "$3" "$4")")
  case $4 in ok*|passed*) ;; *) failed=$((failed + 1)) ;; esac
}
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(all)
for p in "${parts[@]}"; do
  case $p in all|ctest|jacobi|ampi|python) ;; *) echo "gpu-check: unknown part '$p' (all, ctest, jacobi, ampi, python)" >&2; exit 2 ;; esac
done
want() { [[ " ${parts[*]} " == *" $1 "* || " ${parts[*]} " == *" all "* ]]; }

# ctest's summary ends "... tests passed out of N" (or "... failed out of N").
gpu_tests() {  # label, log, [CUDA_VISIBLE_DEVICES value]
  local label=$1 log=$2 n rc
  if [ -n "${3:-}" ]; then
    CUDA_VISIBLE_DEVICES=$3 ctest --test-dir "$build" -R Gpu --output-on-failure --timeout 180 > "$log" 2>&1
    rc=$? n=1
  else
    ctest --test-dir "$build" -R Gpu --output-on-failure --timeout 180 > "$log" 2>&1
    rc=$? n=$gpus
  fi
  local total bad skipped
  total=$(sed -n 's/.* out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  bad=$(grep -cE "Test +#.*(Failed|Timeout|Exception|Not Run)" "$log")
  skipped=$(grep -c "\*\*\*Skipped" "$log")
  grep -E "Test +#|out of" "$log"
  if [ $rc -eq 0 ] && [ "${total:-0}" -gt 0 ] && [ "$skipped" -eq 0 ]; then
    row "$label" "-" "$n" "passed $total/$total"
  else
    local names
    names=$(grep -E "Test +#.*(Failed|Timeout|Exception|Not Run)" "$log" | sed -E 's/.*Test +#[0-9]+: ([^ ]+).*/\1/' | paste -sd, -)
    row "$label" "-" "$n" "FAILED ($bad failed, $skipped skipped of ${total:-?}: $names)"
  fi
}

if want ctest; then
  echo "--- GPU tests (ctest -R Gpu), every GPU visible"
  gpu_tests "GPU tests, $gpus GPU(s) visible" "$out/ctest-gpu.txt"
  if [ "$gpus" -gt 1 ]; then
    echo "--- GPU tests, one GPU shared by all PEs"
    gpu_tests "GPU tests, 1 GPU shared" "$out/ctest-gpu-shared.txt" "$first"
  fi
fi

# Jacobi3D: a small grid whose serial reference is quick; 23 iterations in all.
jacobi() {  # PEs, blocks, mode, GPUs it may use, [CUDA_VISIBLE_DEVICES value]
  local n=$1 blocks=$2 mode=$3 g=$4 r rc what="jacobi3d --verify $3, $2 blocks"
  [ -n "${5:-}" ] && what="$what, GPU $5 only"
  local args=(-x 48 -y 36 -z 24 --blocks "$blocks" --iters 20 --warmup 3 --mode "$mode" --kernels cuda --verify)
  if [ -n "${5:-}" ]; then
    r=$(CUDA_VISIBLE_DEVICES=$5 "$R" -n "$n" --timeout 120 "$J" "${args[@]}" 2>&1)
  else
    r=$("$R" -n "$n" --timeout 120 "$J" "${args[@]}" 2>&1)
  fi
  rc=$?
  printf '=== %s PEs, %s GPUs, %s blocks, %s (exit %s)\n%s\n' "$n" "$g" "$blocks" "$mode" "$rc" "$r" >> "$out/jacobi-verify.txt"
  local v
  v=$(echo "$r" | grep -E "^verify:" | head -1)
  if [ $rc -eq 0 ] && [[ $v == "verify: ok"* ]]; then
    row "$what" "$n" "$g" "ok"
  else
    row "$what" "$n" "$g" \
        "FAILED (exit $rc) ${v:-$(echo "$r" | grep -iE "error|abort|timeout" | head -1)}"
  fi
  echo "jacobi3d $mode $n PEs $g GPUs $blocks blocks: exit $rc ${v}"
}

if want jacobi; then
echo "--- Jacobi3D, CUDA kernels, --verify against the serial run"
for mode in staging gpumsg channel device; do
  jacobi 2 2 "$mode" 1 "$first"  # two PEs on one GPU
  pes="$gpus $((2 * gpus)) $((4 * gpus))"
  [ $((4 * gpus)) -lt 8 ] && pes="$pes 8"  # 8 PEs at least: 4 per GPU on 2 GPUs, more on 1
  for n in $pes; do
    jacobi "$n" "$n" "$mode" "$gpus"
    jacobi "$n" $((2 * n)) "$mode" "$gpus"
  done
done

echo "--- device window (kernel put/signal/wait, stream forms): 2 PEs, then 2 PEs on one GPU"
dw() {  # label, [DW_DEVICE value]
  local r rc
  r=$(env ${2:+DW_DEVICE=$2} "$R" -n 2 --timeout 120 "$build/tests/core/core_device_window" gpu 2>&1); rc=$?
  printf '=== %s (exit %s)\n%s\n' "$1" "$rc" "$r" >> "$out/device-window.txt"
  if [ $rc -eq 0 ] && [[ $r == *"device window ok"* ]]; then row "$1" 2 "$3" "ok"; else row "$1" 2 "$3" "FAILED (exit $rc)"; fi
}
dw "device window, 2 PEs" "" "$gpus"
dw "device window, 2 PEs on one GPU" "$first" 1

echo "--- protocols UCX picked for CUDA buffers (2 PEs)"
UCX_PROTO_INFO=y "$R" -n 2 --timeout 60 "$build/tests/converse/converse_testprog" channel cuda > "$out/proto.txt" 2>&1
grep -E "cuda|channel ok" "$out/proto.txt" | grep -vE "^\s*$" | head -20
fi  # jacobi

if want ampi; then
  echo "--- GPU-aware AMPI (tools/gpu-ampi.sh without its benchmarks)"
  SKIP_BENCH=1 bash tools/gpu-ampi.sh > "$out/ampi.txt" 2>&1
  cat "$out/ampi.txt"
  while read -r verdict label; do
    n=$(sed -n 's/.*-n \([0-9]*\).*/\1/p' <<<"$label")
    if [ "$verdict" = ok ]; then row "AMPI $label" "${n:--}" 1 "ok"; else row "AMPI ${label% (exit*}" "${n:--}" 1 "FAILED (${label##*(}"; fi
  done < <(grep -E "^(ok|FAIL) " "$out/ampi.txt")
  grep -qE "^(ok|FAIL) " "$out/ampi.txt" || row "AMPI checks" - 1 "FAILED (no result; ampi.txt)"
fi

if want python; then
  echo "--- Python: CuPy tests, Python Jacobi3D --verify (tools/gpu-python.sh)"
  bash tools/gpu-python.sh tests > "$out/python-tests.txt" 2>&1
  cat "$out/python-tests.txt"
  summary=$(grep -E "^[0-9]+ (passed|failed)|^=+ .*(passed|failed).* =+$" "$out/python-tests.txt" | tail -1)
  if grep -qE "passed" <<<"$summary" && ! grep -qE "failed|error" <<<"$summary"; then
    row "Python CuPy tests (pytest test_cupy.py)" "1-2" 1 "passed: ${summary//=/}"
  else
    row "Python CuPy tests (pytest test_cupy.py)" "1-2" 1 "FAILED: ${summary:-no summary (python-tests.txt)}"
  fi
  bash tools/gpu-python.sh jacobi > "$out/python-jacobi.txt" 2>&1
  cat "$out/python-jacobi.txt"
  while read -r line; do
    np=$(sed -n 's/^np=\([0-9]*\).*/\1/p' <<<"$line"); mode=$(sed -n 's/.*mode=\([a-z]*\).*/\1/p' <<<"$line")
    if [[ $line == *"rc=0 "* && $line == *"verify: ok"* ]]; then row "Python jacobi3d --gpu --verify $mode" "$np" 1 ok
    else row "Python jacobi3d --gpu --verify $mode" "$np" 1 "FAILED (python-jacobi.txt)"; fi
  done < <(grep -E "^np=" "$out/python-jacobi.txt")
  grep -qE "^np=" "$out/python-jacobi.txt" || row "Python jacobi3d --gpu" - 1 "FAILED (no result; python-jacobi.txt)"
fi

if [ "${GPU_DIAG:-0}" = 1 ]; then
  echo "--- diagnostics"
  ldd "$dev/libucx/lib/ucx/libuct_cuda.so.0" | grep -E "not found|cuda"
  ls /usr/local/cuda/lib64/libcudart.so* 2>/dev/null | head -3
  for n in 1 2; do
    UCX_LOG_LEVEL=info "$R" -n $n --timeout 60 "$build/tests/converse/converse_testprog" device cuda > "$out/diag$n.txt" 2>&1
    echo "device cuda on $n PEs: exit $?"; grep -iE "cuda|error|warn|segm|abort" "$out/diag$n.txt" | head -8
  done
  "$R" -n 1 --timeout 60 "$build/tests/converse/converse_testprog" memtype 2>&1 | tail -4
  # A stream-ordered chain between two chares of one PE, in variants (staged, unstaged,
  # pinned host buffers, the slab large enough for every round in flight): each op traced,
  # and where one hangs, every thread's stack (gdb, cuda-gdb or eu-stack, whichever the machine has).
  so=$build/tests/core/core_stream_ordered
  for v in "" UCHARM_STREAM_STAGING=0 SO_HOSTBUF=1 SO_WINDOW=1 CUDA_DEVICE_MAX_CONNECTIONS=32 UCHARM_STREAM_MEMOPS=0; do
    log="$out/chain1-${v:-staged}.txt"; log=${log//=/-}  # no "=" in file names
    env UCHARM_TRACE_OPS=1 SO_ROUNDS=40 $v "$R" -n 1 --timeout 25 "$so" gpu > "$log" 2>&1 &
    job=$!
    for _ in $(seq 150); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
    if kill -0 $job 2>/dev/null; then
      for p in $(pgrep -f "core_stream_ordered gpu"); do
        [ "$(cat /proc/$p/comm)" = ucharmrun ] && continue
        for t in /proc/$p/task/*; do echo "thread $(cat $t/comm) wchan $(cat $t/wchan)"; done >> "$log.stacks"
        dbg=$(command -v gdb || command -v cuda-gdb)  # the GPU image has cuda-gdb only
        { [ -n "$dbg" ] && timeout 60 "$dbg" -p $p -batch -ex "thread apply all bt 30"; } >> "$log.stacks" 2>&1
        { command -v eu-stack >/dev/null && timeout 20 eu-stack -p $p; } >> "$log.stacks" 2>&1
      done
    fi
    wait $job
    echo "chain on 1 PE ${v:-(staged)}: exit $?; $(grep -c 'point .* reached' "$log") points reached, last: $(grep ucharm: "$log" | tail -1)"
  done
fi

echo
echo "== GPU check summary: $gpus x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
printf '%-50s %4s %5s  %s\n' "check" "PEs" "GPUs" "result"
printf '%s\n' "${rows[@]}"
echo "${#rows[@]} checks, $failed failed"
# The logs as one archive (a copy-back may take few files): logs.tgz beside the output.
tgz=$(mktemp --suffix=.tgz)  # outside $out: an archive inside the folder it packs changes as tar reads
(cd "$out" && tar czf "$tgz" . && find . -type f -delete && mv "$tgz" logs.tgz) || rm -f "$tgz"
[ "$failed" -eq 0 ]
