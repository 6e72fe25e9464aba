#!/usr/bin/env bash
# The sanitizer build's test launcher (CMAKE_CROSSCOMPILING_EMULATOR of every target, so
# CTest starts each test program through it). The sanitizer options come from the
# environment (build-asan/sanitizer-env.cmake sets them for every test); here every
# process the test starts, ranks under ucharmrun or mpirun included (they inherit the
# environment), writes its reports to a file in a fresh folder. Any report fails the test
# and is printed, even where the test itself expected a non-zero exit.
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/ucharm-sanitizer.XXXXXX")
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$dir/asan"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$dir/ubsan"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}log_path=$dir/lsan"
"$@"
rc=$?
reports=("$dir"/*)
if [ -e "${reports[0]}" ]; then
  for f in "${reports[@]}"; do
    echo "==== sanitizer report $(basename "$f") (command: $*)" >&2
    cat "$f" >&2
  done
  # The head of each report once more, last: a log that keeps only the end of a test's
  # output (CI's summary) still shows the error line and the innermost frames.
  for f in "${reports[@]}"; do
    echo "==== head of $(basename "$f")" >&2
    grep -m 1 -E "ERROR|runtime error" "$f" >&2
    grep -m 14 -E "^ *#[0-9]+ " "$f" >&2
  done
  rm -rf "$dir"
  echo "sanitizer: ${#reports[@]} report file(s) above; the test fails" >&2
  # Death by a signal fails the test even where CTest judges it by its output
  # (PASS_REGULAR_EXPRESSION), which ignores the exit code.
  ulimit -c 0
  trap - ABRT
  kill -ABRT $$
  exit 1
fi
rm -rf "$dir"
exit "$rc"
