#!/usr/bin/env bash
# Where a one-way 8-byte message's instructions go, per layer: raw UCX (ucx_perftest
# tag_lat), Converse (converse_pingpong) and chares (core_pingpong, group); AMPI's loader
# re-executes the program, which valgrind cannot follow through ucharmrun. Each runs 2 PEs under callgrind; tools/msg_profile.py keeps the
# functions called about once per message (not the idle polling loop, not start-up) and
# prints their own instructions per message. Then a perf flame graph of the Converse and
# group ping-pongs (FLAME=0 skips it).
#   benchmarks/profile_messages.sh [build-dir] [out-dir]      (about 2 minutes)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=$(mkdir -p "${2:-/tmp/ucharm-profile}" && cd "${2:-/tmp/ucharm-profile}" && pwd)
run="$build/tools/ucharmrun/ucharmrun"
prof="$root/tools/msg_profile.py"
py=${PYTHON:-python3}
ucx=${UCX_ROOT:-$(sed -n 's/^UCHARM_UCX_ROOT:PATH=//p' "$build/CMakeCache.txt")}
iters=${ITERS:-20000}
command -v valgrind >/dev/null || { echo "profile_messages.sh: valgrind is not installed" >&2; exit 1; }

# layer name, the function called once per received message, command
profile() {
  local name=$1 anchor=$2
  shift 2
  rm -f "$out/cg.$name".*
  "$@" >"$out/$name.log" 2>&1 || { echo "$name: failed (see $out/$name.log)" >&2; return 0; }
  echo "### $name"
  "$py" "$prof" counts "$anchor" "$out/cg.$name".* --top 30 | grep -v -E "strcmp|strlen|strncmp|_IO_|malloc|free\b" || true
  echo
}
cg=(valgrind --tool=callgrind)
profile raw 'ucp_tag_recv_nbx' bash -c "
  port=\$((20000 + RANDOM % 20000))
  UCX_ALLOC_PRIO=heap LD_LIBRARY_PATH='$ucx/lib' timeout 120 ${cg[*]} --callgrind-out-file='$out/cg.raw.srv' '$ucx/bin/ucx_perftest' -p \$port >/dev/null 2>&1 &
  sleep 2
  UCX_ALLOC_PRIO=heap LD_LIBRARY_PATH='$ucx/lib' timeout 120 ${cg[*]} --callgrind-out-file='$out/cg.raw.cli' '$ucx/bin/ucx_perftest' 127.0.0.1 -p \$port -t tag_lat -s 8 -n $iters -w 100
  wait"
profile converse 'ping_handler' "$run" -n 2 --timeout 300 "${cg[@]}" --callgrind-out-file="$out/cg.converse.%p" \
  "$build/benchmarks/converse_pingpong" --min 8 --max 8 --iters "$iters" --warmup 100
profile group 'invoke_entry<.*GroupPP::ping' "$run" -n 2 --timeout 300 "${cg[@]}" --callgrind-out-file="$out/cg.group.%p" \
  "$build/benchmarks/core_pingpong" --min 8 --max 8 --iters "$iters" --warmup 100 --kind group
[ "${FLAME:-1}" = 0 ] && exit 0
command -v perf >/dev/null || { echo "(no perf: no flame graph)"; exit 0; }
wrap="$out/perfwrap.sh"
printf '#!/bin/bash\nexec perf record -e cpu-clock -F 20000 --call-graph dwarf,16384 -q -o "%s/perf.$1.$PMIX_RANK" "${@:2}"\n' "$out" >"$wrap"
chmod +x "$wrap"
for layer in converse group; do
  case $layer in
    converse) cmd=("$build/benchmarks/converse_pingpong" --min 8 --max 8 --iters 200000 --warmup 1000) ;;
    group) cmd=("$build/benchmarks/core_pingpong" --min 8 --max 8 --iters 200000 --warmup 1000 --kind group) ;;
  esac
  "$run" -n 2 --timeout 300 "$wrap" "$layer" "${cmd[@]}" >/dev/null 2>&1 || { echo "perf $layer failed"; continue; }
  perf script -i "$out/perf.$layer.1" 2>/dev/null >"$out/perf.$layer.txt"
  "$py" "$prof" flame "$out/perf.$layer.txt" "$out/flame-$layer.svg" --title "$layer 8 B ping-pong, PE 1 (perf, cpu-clock)"
done
