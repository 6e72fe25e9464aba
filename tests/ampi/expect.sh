#!/usr/bin/env bash
# expect.sh WANT [REGEX...] -- COMMAND...
# Runs COMMAND and passes (exit 0) when its exit code is WANT ("nonzero": any code but 0)
# and its output (stdout and stderr) matches every extended REGEX. Prints the output.
#  - A program that prints "SKIP" and exits 77 is a skip: exit 77 (CTest SKIP_RETURN_CODE).
#  - A sanitizer report (tools/sanitizers/run-test.sh, the sanitizer build's emulator, put
#    before COMMAND) fails the test whatever the exit code.
set -u
want=$1
shift
regexes=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  regexes+=("$1")
  shift
done
[ "${1:-}" = "--" ] || { echo "expect.sh: usage: expect.sh WANT [REGEX...] -- COMMAND..." >&2; exit 2; }
shift
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -eq 77 ] && grep -q "SKIP" <<<"$out"; then
  exit 77
fi
fail=0
if [ "$want" = nonzero ]; then
  [ $rc -ne 0 ] || { echo "expect.sh: exit code 0, expected a non-zero one"; fail=1; }
elif [ $rc -ne "$want" ]; then
  echo "expect.sh: exit code $rc, expected $want"
  fail=1
fi
for re in "${regexes[@]}"; do
  grep -Eq -- "$re" <<<"$out" || { echo "expect.sh: no output line matches /$re/"; fail=1; }
done
if grep -q "^sanitizer: .* report file" <<<"$out"; then
  echo "expect.sh: sanitizer reports above"
  fail=1
fi
exit $fail
