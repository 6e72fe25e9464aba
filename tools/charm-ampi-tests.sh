#!/usr/bin/env bash
# charm-ampi-tests.sh: Charm++'s own AMPI programs (its tests/ampi and examples/ampi,
# unchanged) built with ucharm's ampicc/ampicxx and run with ucharmrun.
#
# Usage: tools/charm-ampi-tests.sh CHARM_SRC [--build DIR] [--work DIR] [--only REGEX] [--timeout S]
#   CHARM_SRC  a tree holding tests/ampi and examples/ampi of UIUC-PPL/charm, e.g.
#              git --git-dir=CHARM.git archive HEAD tests/ampi examples/ampi | tar -x -C DIR
#   --build    ucharm's build folder (default: build/ beside tools/)
#   --work     where the programs are copied, built and run (default /work/charm-ampi-run)
# Each program folder is built by its own Makefile with CHARMC/AMPICC set to ampicc or
# ampicxx (nothing else changed), then run as its Makefile's `test` target runs it, twice:
#   1 rank/PE:  ucharmrun -n RANKS ./prog args
#   +vp:        ucharmrun -n P ./prog args +vp RANKS      (P: the Makefile's +pP)
# and passes on the expected exit code and output. Prints a table (also summary.md in the
# work folder); logs of every build and run are in WORK/logs. Runs under `nice -n 15`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
    exit $(( $# < 1 ? 2 : 0 ))
fi
exec nice -n 15 python3 -u "$here/charm_ampi_tests.py" "$@"
