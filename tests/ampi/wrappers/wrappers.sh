#!/usr/bin/env bash
# The compiler wrappers: mpi.h compiles under every language standard; ampicc/ampicxx keep
# the compiler's default standard; the options of OpenMPI's and MPICH's wrappers; Charm++
# charmc's options (those that mean something take effect, the others are noted and
# ignored); a program so built runs, with its linked-in +balancer default.
#   wrappers.sh AMPICC AMPICXX UCHARMRUN WORKDIR
set -u
ampicc=$1 ampicxx=$2 ucharmrun=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
# has TEXT NEEDLE WHAT: TEXT contains NEEDLE.
has() { [[ $1 == *"$2"* ]] || fail "$3: no '$2' in: $1"; }
hasnt() { [[ $1 != *"$2"* ]] || fail "$3: '$2' in: $1"; }

# mpi.h under each standard, -Wall -Wextra -Werror (-pedantic from C99 and C++11 on: C89 and
# C++98 have no long long, which MPI_Offset and MPI_Count need, as in OpenMPI's mpi.h).
check_std() {  # WRAPPER LANG STD [FLAGS...]
  local w=$1 lang=$2 std=$3
  shift 3
  if ! out=$("$w" -std="$std" -Wall -Wextra -Werror "$@" -x "$lang" -c "$here/mpih.c" -o mpih.o 2>&1); then
    fail "mpi.h with $(basename "$w") -std=$std $*: $out"
  fi
}
compilers=("gcc g++")
command -v clang >/dev/null && command -v clang++ >/dev/null && compilers+=("clang clang++")
for pair in "${compilers[@]}"; do
  read -r cc cxx <<<"$pair"
  export AMPICC_CC=$cc AMPICXX_CXX=$cxx
  check_std "$ampicc" c c89
  for s in c99 c11 c17; do check_std "$ampicc" c $s -pedantic; done
  check_std "$ampicxx" c++ c++98
  for s in c++11 c++14 c++17 c++20; do check_std "$ampicxx" c++ $s -pedantic; done
  if "$cxx" -std=c++23 -x c++ -E /dev/null >/dev/null 2>&1; then check_std "$ampicxx" c++ c++23 -pedantic; fi
  echo "mpi.h: every standard with $cc / $cxx"
done
unset AMPICC_CC AMPICXX_CXX

# The compiler's default standard: no -std added (a program that does not build as C++20
# builds as it would with the compiler alone); the program's own -std passes once.
std_of() { "$@" -E -dM -x "$lang" /dev/null 2>/dev/null | grep -E "__cplusplus|__STDC_VERSION__"; }
lang=c++
[[ $(std_of "$ampicxx") == "$(std_of "$("$ampicxx" --showme:command)")" ]] ||
  fail "ampicxx changes the compiler's default standard: $(std_of "$ampicxx")"
lang=c
[[ $(std_of "$ampicc") == "$(std_of "$("$ampicc" --showme:command)")" ]] ||
  fail "ampicc changes the compiler's default standard: $(std_of "$ampicc")"
for mode in "-c x.cpp" "x.cpp -o x" "-shared x.cpp -o libx.so"; do
  # shellcheck disable=SC2086
  hasnt "$("$ampicxx" -show $mode)" "-std=" "ampicxx -show $mode"
  # shellcheck disable=SC2086
  out=$("$ampicxx" -std=c++17 -show $mode)
  [[ $(grep -o -- "-std=[^ ]*" <<<"$out" | sort -u) == "-std=c++17" ]] || fail "ampicxx -std=c++17 $mode: $out"
done
# charm++.h (Charm++'s PUP::er, for AMPI programs that use it) needs C++20 and says so.
printf '#include <charm++.h>\nint f(PUP::er& p, int& x) { p | x; return x; }\n' >pup.cpp
out=$("$ampicxx" -std=c++17 -c pup.cpp -o pup.o 2>&1) && fail "charm++.h compiled as C++17"
has "$out" "needs C++20" "charm++.h as C++17"
out=$("$ampicxx" -std=c++20 -c pup.cpp -o pup.o 2>&1) || fail "charm++.h as C++20: $out"
echo "standard: the compiler's default"

# OpenMPI's queries.
incdir=$("$ampicc" --showme:incdirs)
[[ -f $incdir/mpi.h ]] || fail "--showme:incdirs: no mpi.h in '$incdir'"
found=0
for d in $("$ampicc" --showme:libdirs); do [[ -e $d/libucharm-ampi.so ]] && found=1; done
((found)) || fail "--showme:libdirs: no libucharm-ampi.so in $("$ampicc" --showme:libdirs)"
[[ $("$ampicc" --showme:libs) == ucharm-ampi ]] || fail "--showme:libs: $("$ampicc" --showme:libs)"
has "$("$ampicc" --showme:compile)" "-I$incdir" "--showme:compile"
has "$("$ampicc" --showme:link)" "-lucharm-ampi" "--showme:link"
has "$("$ampicc" -showme:link)" "-lucharm-ampi" "-showme:link"
command -v "$("$ampicc" --showme:command)" >/dev/null || fail "--showme:command: $("$ampicc" --showme:command)"
has "$("$ampicc" --showme:version)" "ampicc: ucharm AMPI" "--showme:version"
has "$("$ampicxx" --showme:version)" "(Language: C++)" "ampicxx --showme:version"
has "$("$ampicc" --showme:help)" "--showme:" "--showme:help"
out=$("$ampicc" --showme)
[[ $out == "$("$ampicc" --showme:command) "* ]] || fail "--showme: $out"
has "$out" "-I$incdir" "--showme"
has "$out" "-lucharm-ampi" "--showme"
out=$("$ampicc" --showme:nonsense 2>&1) && fail "--showme:nonsense succeeded"
has "$out" "--showme:nonsense" "--showme:nonsense's message"
has "$("$ampicc" -showme -c x.c)" " -c x.c" "-showme -c x.c"
echo "OpenMPI options: ok"

# MPICH's.
for o in -compile-info -compile_info; do
  out=$("$ampicc" $o x.c)
  has "$out" "-I$incdir" "$o"
  has "$out" " -c" "$o"
  hasnt "$out" "compose" "$o"
done
for o in -link-info -link_info; do
  out=$("$ampicc" $o x.o -o x)
  has "$out" "-lucharm-ampi" "$o"
  has "$out" "ucharm-ampi-compose" "$o"
done
[[ $("$ampicc" -show-compile-info) == "$("$ampicc" --showme:compile)" ]] || fail "-show-compile-info"
[[ $("$ampicc" -show-link-info) == "$("$ampicc" --showme:link)" ]] || fail "-show-link-info"
[[ $("$ampicc" -cc=my-cc -show -c x.c) == "my-cc "* ]] || fail "-cc=: $("$ampicc" -cc=my-cc -show -c x.c)"
[[ $("$ampicxx" -cxx=my-cxx -show -c x.cpp) == "my-cxx "* ]] || fail "-cxx=: $("$ampicxx" -cxx=my-cxx -show -c x.cpp)"
has "$("$ampicc" -help)" "-compile-info" "-help"
out=$("$ampicc" -nativelinking -show x.c -o x)
hasnt "$out" "compose" "-nativelinking"
has "$out" "-I$incdir" "-nativelinking"
has "$("$ampicc" -show -profile=mytool x.c -o x)" "-lmytool" "-profile="
echo "MPICH options: ok"

# Charm++ charmc's: -rpath, -rpath-origin, the per-language options.
has "$("$ampicc" -show -rpath /opt/x x.c -o x)" "-Wl,-rpath,/opt/x" "-rpath"
has "$("$ampicc" -show -rpath-origin x.c -o x)" "'-Wl,-rpath,\$ORIGIN'" "-rpath-origin"
has "$("$ampicc" -show -ld-option -Wl,--as-needed x.c -o x)" "-Wl,--as-needed" "-ld-option"
has "$("$ampicxx" -show -c++-option -DCXX_OPTION=5 -c x.cpp)" "-DCXX_OPTION=5" "-c++-option"
out=$("$ampicxx" -show -cc-option -DNOT_MINE -c x.cpp 2>&1)
hasnt "$out" "-DNOT_MINE " "ampicxx -cc-option"
has "$out" "ignored" "ampicxx -cc-option's note"
has "$("$ampicc" -show -optimize -c x.c)" "-O3" "-optimize"
out=$("$ampicc" -memory 2>&1) && fail "-memory without a value succeeded"
has "$out" "-memory needs a value" "-memory without a value"
out=$("$ampicc" -language ampif -c x.f90 2>&1) && fail "-language ampif succeeded"
has "$out" "-language ampif" "-language ampif's message"

# A program built with the options AMPI users pass to charmc: the ones without meaning here
# are noted (one line each) and ignored.
if ! "$ampicc" -memory isomalloc -tlsglobals -pieglobals -swapglobals -module CommonLBs -standalone \
     -language ampi -cc-option -DCC_OPTION=3 -cpp-option -DCPP_OPTION=4 -balancer NoSuchLB \
     -echo "$here/hello.c" -o hello 2>notes; then
  fail "ampicc with charmc options: $(cat notes)"
fi
notes=$(cat notes)
for o in "-memory isomalloc" -tlsglobals -pieglobals -swapglobals "-module CommonLBs" -standalone; do
  has "$notes" "ampicc: $o: ignored" "the note on $o"
done
has "$notes" "ucharm-ampi-compose" "-echo"
[[ -x hello ]] || fail "no program built"
# The linked-in -balancer is the default (NoSuchLB stops the job, naming it); the command
# line's +balancer wins.
out=$(timeout 60 "$ucharmrun" -n 2 --timeout 50 ./hello +vp 4 2>&1) && fail "the linked-in -balancer NoSuchLB was not used"
has "$out" "+balancer NoSuchLB: no such load balancer" "the linked-in -balancer"
out=$(timeout 60 "$ucharmrun" -n 2 --timeout 50 ./hello +vp 4 +balancer GreedyLB 2>&1) || fail "hello: $out"
has "$out" "hello: ok (4 ranks)" "hello +balancer GreedyLB"
echo "charmc options: ok"

if ((fails)); then
  echo "wrappers: $fails failures"
  exit 1
fi
echo "wrappers: ok"
