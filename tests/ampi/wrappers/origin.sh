#!/usr/bin/env bash
# $ORIGIN in a program's RPATH is the folder of the executable, in both ways a rank's copy is
# loaded (into its isomalloc slice; dlopen of a memfd, which UCHARM_ISOMALLOC_REEXEC=0
# forces): a program linked with -Wl,-rpath,'$ORIGIN/../lib' (or ampicc -rpath-origin)
# finds its own libraries (one without a soname, one with) from any current directory.
#   origin.sh AMPICC UCHARMRUN WORKDIR
set -u
ampicc=$1 ucharmrun=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
cc=$("$ampicc" --showme:command)
rm -rf "$work" && mkdir -p "$work/app/bin" "$work/app/lib" "$work/flat" "$work/elsewhere" || exit 1
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
build() {  # LIBDIR: libown.so (no soname) and libnamed.so.1 (soname) there
  echo 'int own_value(void) { return 42; }' >"$work/own.c"
  echo 'int named_value(void) { return 7; }' >"$work/named.c"
  "$cc" -shared -fPIC "$work/own.c" -o "$1/libown.so" &&
    "$cc" -shared -fPIC -Wl,-soname,libnamed.so.1 "$work/named.c" -o "$1/libnamed.so.1" &&
    ln -sf libnamed.so.1 "$1/libnamed.so"
}
build "$work/app/lib" && build "$work/flat" || exit 1
"$ampicc" "$here/origin_prog.c" -o "$work/app/bin/prog" -L"$work/app/lib" -lown -lnamed \
  -Wl,-rpath,'$ORIGIN/../lib' || fail "linking with -Wl,-rpath,\$ORIGIN/../lib"
"$ampicc" "$here/origin_prog.c" -o "$work/flat/prog" -L"$work/flat" -lown -lnamed -rpath-origin ||
  fail "linking with -rpath-origin"
cd "$work/elsewhere" || exit 1
run() {  # WHAT RANKS COMMAND...
  local what=$1 ranks=$2
  shift 2
  out=$(timeout 60 "$@" 2>&1)
  if [[ $? -ne 0 || $out != *"origin: ok ($ranks ranks)"* ]]; then fail "$what: $out"; else echo "$what: ok"; fi
}
for prog in "$work/app/bin/prog" "$work/flat/prog"; do
  run "$prog, slices, 1 PE" 3 "$ucharmrun" -n 1 --timeout 50 "$prog" +vp 3
  run "$prog, slices, 2 PEs" 4 "$ucharmrun" -n 2 --timeout 50 "$prog" +vp 4
  run "$prog, dlopen, 2 PEs" 4 env UCHARM_ISOMALLOC_REEXEC=0 "$ucharmrun" -n 2 --timeout 50 "$prog" +vp 4
done
# A relative path to the program, from its own folder's parent.
cd "$work/app" && run "bin/prog from the parent folder" 2 "$ucharmrun" -n 1 --timeout 50 bin/prog +vp 2
if ((fails)); then
  echo "origin: $fails failures"
  exit 1
fi
echo "origin: all ok"
