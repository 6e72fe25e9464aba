#!/usr/bin/env bash
# The installed package, used as an application would: installs the build into a scratch
# prefix, builds tests/package/ in another folder with find_package(ucharm), and runs its
# programs (hello, and a message storm) at 2 and 4 PEs under the installed ucharmrun.
# Checks that every binary loads the UCX ucharm was built against, even with a different
# UCX (Debian's libucx0, when installed) first on LD_LIBRARY_PATH; fails on any UCX
# warning or error, any ucharm abort or launcher complaint, and any non-zero exit. With a
# different UCX installed, also checks that a process made to load it (LD_PRELOAD) stops
# at once with a message naming both versions.
#   check.sh BUILD_DIR SOURCE_DIR(tests/package)
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "package check: FAIL: $*" >&2; exit 1; }

# The UCX the build was configured with (ucx_DIR is <prefix>/lib/cmake/ucx).
ucx_dir=$(sed -n 's/^ucx_DIR:PATH=//p' "$build/CMakeCache.txt")
[ -n "$ucx_dir" ] || fail "no ucx_DIR in $build/CMakeCache.txt"
want=$(realpath "$ucx_dir/../..")
[ -e "$want/libucp.so.0" ] || fail "the build's UCX has no $want/libucp.so.0"

# Another UCX in the default library path, if any: it goes first on LD_LIBRARY_PATH.
# (awk reads to the end: leaving early would kill ldconfig with SIGPIPE, and pipefail
# would end this script silently, now and then.)
other=$(ldconfig -p | awk '$1 == "libucp.so.0" && /x86-64/ && !found {found = 1; print $NF}')
other_dir=
if [ -n "$other" ] && [ "$(realpath "$(dirname "$other")")" != "$want" ]; then
  other_dir=$(realpath "$(dirname "$other")")
  export LD_LIBRARY_PATH=$other_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "package check: another UCX in $other_dir, first on LD_LIBRARY_PATH"
fi

cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src" -B "$work/app" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/app" >/dev/null
{ read -r said_dir; read -r said_version; } < "$work/app/ucharm-ucx.txt"
[ -n "$said_dir" ] && [ "$(realpath "$said_dir")" = "$want" ] ||
  fail "the package names UCX in '$said_dir', the build used $want"
echo "package check: ucharm was built against UCX $said_version in $want"

# Which libucp.so.0 each binary resolves to (ldd applies RPATH and LD_LIBRARY_PATH as
# the loader does).
resolves() {  # binary soname -> the file the loader would open
  ldd "$1" | awk -v s="$2" '$1 == s {print $3}'
}
for bin in "$work/prefix/lib/libucharm-converse.so" "$work/prefix/lib/libucharm-core.so" \
           "$work/app/consumer" "$work/app/storm"; do
  got=$(resolves "$bin" libucp.so.0)
  [ -n "$got" ] && [ "$(realpath "$(dirname "$got")")" = "$want" ] ||
    fail "$bin resolves libucp.so.0 to '${got:-nothing}', not to $want"
done
for bin in "$work/prefix/lib/libucharm-core.so" "$work/app/storm"; do
  got=$(resolves "$bin" libucharm-converse.so)
  [ "$got" = "$work/prefix/lib/libucharm-converse.so" ] ||
    fail "$bin resolves libucharm-converse.so to '${got:-nothing}', not to the installed one"
done

# Runs one job; checks its exit code, its output and the libucp each process loaded.
run_job() {  # np program args...
  local np=$1 name
  shift
  name=$(basename "$1")-$np
  mkdir -p "$work/ld/$name"
  local rc=0
  LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/ld/$name/p" \
    "$work/prefix/bin/ucharmrun" -n "$np" --timeout 60 "$@" > "$work/$name.out" 2>&1 || rc=$?
  sed "s/^/[$name] /" "$work/$name.out"
  [ "$rc" = 0 ] || fail "$name exited with $rc"
  # (the sanitizer build's reports too: its processes print them on stderr)
  if grep -E 'UCX  (WARN|ERROR)|ucharm:.*abort|ucharmrun:|Sanitizer|runtime error:' "$work/$name.out"; then
    fail "$name printed a UCX warning or error, an abort, a launcher error or a sanitizer report (lines above)"
  fi
  # ld.so writes one file per process: the launcher (no UCX) and np ranks.
  local loaded
  loaded=$(grep -h 'calling init: .*/libucp\.so\.0$' "$work/ld/$name"/p.* | sed 's/.*calling init: //' | sort | uniq -c)
  [ "$(grep -c . <<<"$loaded")" = 1 ] && [ "$(awk '{print $1}' <<<"$loaded")" = "$np" ] &&
    [ "$(realpath "$(dirname "$(awk '{print $2}' <<<"$loaded")")")" = "$want" ] ||
    fail "$name: its $np ranks did not all load libucp.so.0 from $want; loaded (count, file): $loaded"
}
for np in 2 4; do
  run_job "$np" "$work/app/consumer"
  grep -q "PE 1 got .hi. from PE 0" "$work/consumer-$np.out" || fail "consumer-$np: PE 1 got no hi"
  run_job "$np" "$work/app/storm" 3000
  [ "$(grep -c "received $((3000 * np)) messages" "$work/storm-$np.out")" = "$np" ] ||
    fail "storm-$np: not every PE received its $((3000 * np)) messages"
done

# A process that loads another UCX anyway (LD_PRELOAD beats any RPATH) must stop before
# using it, with a message naming both versions.
if [ -n "$other_dir" ] && [ -e "$other_dir/libucs.so.0" ]; then
  pre="$other_dir/libucp.so.0 $other_dir/libuct.so.0 $other_dir/libucs.so.0 $other_dir/libucm.so.0"
  # In the sanitizer build, ASan's runtime must stay the first library loaded.
  asan=$(ldd "$work/app/consumer" | awk '$1 ~ /^libasan\.so/ {print $3}')
  [ -z "$asan" ] || pre="$asan $pre"
  rc=0
  "$work/prefix/bin/ucharmrun" -n 2 --timeout 60 env LD_PRELOAD="$pre" "$work/app/consumer" \
    > "$work/preload.out" 2>&1 || rc=$?
  sed 's/^/[preload] /' "$work/preload.out"
  [ "$rc" != 0 ] || fail "a rank that loaded the UCX in $other_dir ran on (exit 0)"
  mm=$(cut -d. -f1-2 <<<"$said_version")
  grep -q "ucharm: UCX version mismatch.*compiled against UCX $mm, but this process loaded UCX .* from $other_dir" \
    "$work/preload.out" || fail "no clear UCX version mismatch message from a rank that loaded $other_dir"
fi
echo "package check: OK"
