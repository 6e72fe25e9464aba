#!/usr/bin/env bash
# hdf5-testpar.sh: parallel HDF5's testpar programs under ucharm's AMPI and under another MPI.
#
# Usage:
#   tools/hdf5-testpar.sh build HDF5_SRC BUILD_DIR CC
#       Configure HDF5 (CMake: static library, --enable-parallel, no Fortran/C++/tools/HL,
#       tests on) with CC as the compiler and build only the testpar programs, -j${JOBS:-2}.
#       CC is build/runtime/ampi/bin/ampicc for ucharm (static: each rank's copy of the
#       program then holds its own copy of HDF5's globals) or e.g. OpenMPI's mpicc.
#   tools/hdf5-testpar.sh run BUILD_DIR LABEL NP 'LAUNCHER' ['AFTER'] [TEST...]
#       Run the testpar set (or the TESTs named) as LAUNCHER PROG AFTER, each word `%N`
#       replaced by NP, in BUILD_DIR/run-LABEL-NP (fresh), each with `timeout ${TIMEOUT:-300}`;
#       `testphdf5:NAME` runs only testphdf5's subtest NAME (-o NAME; `testphdf5:long` is
#       every subtest that the plain testphdf5 run skips, one run each);
#       appends "label np test result seconds" to BUILD_DIR/../hdf5-testpar.tsv (RESULTS
#       overrides) and keeps each log there. A run passes when it exits 0 (t_pflush1, which
#       always exits 1, when it does not print HDF5's 'REAL ERROR').
#   tools/hdf5-testpar.sh table [RESULTS]
#       The pass/fail table of RESULTS (the last result of each label, np and test).
#   tools/hdf5-testpar.sh compare HDF5_SRC WORK_DIR
#       Both builds (WORK_DIR/ucharm with this tree's ampicc, WORK_DIR/ompi with mpicc), then
#       every run: ucharmrun -n 2, -n 4, -n 2 ... +vp 4, mpirun -np 2 and -np 4; the table.
#
# Examples:
#   tools/hdf5-testpar.sh run /work/hdf5-build/ucharm ucharm-vp 4 \
#       'build/tools/ucharmrun/ucharmrun -n 2 --timeout 300' '+vp %N' t_mpi testphdf5
#   tools/hdf5-testpar.sh run /work/hdf5-build/ompi ompi 4 \
#       'mpirun --allow-run-as-root --oversubscribe -np %N'
# The programs run in HDF5's smallest mode (HDF5TestExpress=3, its CMake default); testphdf5
# is run as HDF5's CTest runs it (its long subtests skipped with -x). t_cache_image is built
# but, as in HDF5's own CTest list, not run. Not part of CI: HDF5 is not a dependency.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

# In run order: t_pflush2 reads what t_pflush1 left.
TESTS=(t_mpi t_bigio t_cache t_pflush1 t_pflush2 t_pread t_pshutdown t_prestart t_init_term
       t_pmulti_dset t_select_io_dset t_shapesame t_filters_parallel t_2Gio t_vfd testphdf5)
# HDF5's CTest list runs these testphdf5 subtests separately (they are slow); left out here.
TESTPHDF5_SKIP=(cchunk1 cchunk2 cchunk3 cchunk4 ecdsetw eidsetw2 selnone cngrpw-ingrpr
                cschunkw ccchunkw tldsc actualio MC_coll_MD_read)

build() {
    local src=$1 dir=$2 cc=$3
    [[ -f "$src/testpar/t_mpi.c" ]] || { echo "hdf5-testpar: $src is not an HDF5 source tree" >&2; exit 2; }
    mkdir -p "$dir"
    CC="$cc" cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DBUILD_STATIC_LIBS=ON -DHDF5_ENABLE_PARALLEL=ON \
        -DBUILD_TESTING=ON -DHDF5_TEST_PARALLEL=ON -DHDF5_TEST_SERIAL=OFF \
        -DHDF5_BUILD_TOOLS=OFF -DHDF5_BUILD_HL_LIB=OFF -DHDF5_BUILD_EXAMPLES=OFF \
        -DHDF5_BUILD_CPP_LIB=OFF -DHDF5_BUILD_FORTRAN=OFF -DHDF5_BUILD_JAVA=OFF \
        -DHDF5_BUILD_UTILS=OFF -DHDF5_TEST_TOOLS=OFF -DHDF5_TEST_EXAMPLES=OFF \
        -DHDF5_TEST_SWMR=OFF -DHDF5_TEST_VFD=OFF -DHDF5_TEST_PASSTHROUGH_VOL=OFF \
        -DHDF5_TEST_API=OFF -DHDF5_ENABLE_Z_LIB_SUPPORT=ON -DHDF5_ENABLE_SZIP_SUPPORT=OFF \
        -DHDF5_ENABLE_SUBFILING_VFD=OFF -DHDF5_ALLOW_EXTERNAL_SUPPORT=NO >"$dir/configure.log" 2>&1 ||
        { tail -20 "$dir/configure.log" >&2; exit 1; }
    ninja -C "$dir" -j "${JOBS:-2}" "${TESTS[@]}" t_cache_image >"$dir/build.log" 2>&1 ||
        { tail -20 "$dir/build.log" >&2; exit 1; }
    echo "hdf5-testpar: built ${#TESTS[@]} programs in $dir/bin"
}

run() {
    local dir=$1 label=$2 np=$3 launcher=$4 after=${5:-}
    shift $(( $# < 5 ? $# : 5 ))
    local tests=("$@")
    [[ ${#tests[@]} -gt 0 ]] || tests=("${TESTS[@]}")
    local expanded=()
    for t in "${tests[@]}"; do
        if [[ $t == testphdf5:long ]]; then
            for s in "${TESTPHDF5_SKIP[@]}"; do expanded+=("testphdf5:$s"); done
        else
            expanded+=("$t")
        fi
    done
    tests=("${expanded[@]}")
    dir=$(cd "$dir" && pwd)
    local results=${RESULTS:-$dir/../hdf5-testpar.tsv}
    local work="$dir/run-$label-$np"
    rm -rf "$work" && mkdir -p "$work"
    local -a pre post
    read -r -a pre <<<"${launcher//%N/$np}"
    read -r -a post <<<"${after//%N/$np}"
    for t in "${tests[@]}"; do
        local prog="$dir/bin/${t%%:*}" extra=()
        [[ -x "$prog" ]] || { echo "hdf5-testpar: $prog not built" >&2; exit 2; }
        if [[ $t == testphdf5 ]]; then
            for s in "${TESTPHDF5_SKIP[@]}"; do extra+=(-x "$s"); done
        elif [[ $t == testphdf5:* ]]; then
            extra=(-o "${t#*:}")
        fi
        local t0 t1 rc=0 result
        t0=$(date +%s.%N)
        (cd "$work" && HDF5TestExpress=${HDF5TestExpress:-3} HDF5_ALARM_SECONDS=3600 srcdir="$work" \
            timeout "${TIMEOUT:-300}" "${pre[@]}" "$prog" "${post[@]}" "${extra[@]}" \
            >"$work/${t/:/-}.log" 2>&1) || rc=$?
        t1=$(date +%s.%N)
        case $rc in
            0) result=pass ;;
            124|137) result=timeout ;;
            *) result="fail($rc)" ;;
        esac
        # t_pflush1 leaves without closing the file and always exits 1 (HDF5's CTest:
        # WILL_FAIL); it failed only where it says so.
        if [[ $t == t_pflush1 && $result == fail* ]] && ! grep -q 'REAL ERROR' "$work/${t/:/-}.log"; then
            result=pass
        elif [[ $t == t_pflush1 && $result == pass ]]; then
            result="fail(exit 0)"
        fi
        local secs
        secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
        printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$np" "$t" "$result" "$secs" >>"$results"
        printf '%-12s np=%-2s %-20s %-10s %ss\n' "$label" "$np" "$t" "$result" "$secs"
    done
}

table() {
    local results=${1:-}
    [[ -f "$results" ]] || { echo "hdf5-testpar: no results file '$results'" >&2; exit 2; }
    awk -F'\t' '
        { key = $1 "/" $2; if (!(key in seen)) { seen[key] = 1; cols[++ncol] = key }
          if (!($3 in tseen)) { tseen[$3] = 1; rows[++nrow] = $3 }
          r[$3, key] = $4 }
        END {
            printf "| test |"; for (c = 1; c <= ncol; c++) printf " %s |", cols[c]; printf "\n"
            printf "|---|"; for (c = 1; c <= ncol; c++) printf "---|"; printf "\n"
            for (i = 1; i <= nrow; i++) {
                printf "| %s |", rows[i]
                for (c = 1; c <= ncol; c++) { v = r[rows[i], cols[c]]; printf " %s |", v == "" ? "-" : v }
                printf "\n"
            }
        }' "$results"
}

compare() {
    local src=$1 work=$2
    mkdir -p "$work"
    work=$(cd "$work" && pwd)
    local ucharmrun="$root/build/tools/ucharmrun/ucharmrun"
    [[ -x "$root/build/runtime/ampi/bin/ampicc" && -x "$ucharmrun" ]] ||
        { echo "hdf5-testpar: build ucharm first (build/runtime/ampi/bin/ampicc, ucharmrun)" >&2; exit 2; }
    command -v mpicc >/dev/null || { echo "hdf5-testpar: mpicc not found" >&2; exit 2; }
    build "$src" "$work/ucharm" "$root/build/runtime/ampi/bin/ampicc"
    build "$src" "$work/ompi" mpicc
    export RESULTS="$work/hdf5-testpar.tsv"
    rm -f "$RESULTS"
    local t=${TIMEOUT:-300}
    run "$work/ucharm" ucharm 2 "$ucharmrun -n %N --timeout $t"
    run "$work/ompi" openmpi 2 "mpirun --allow-run-as-root --oversubscribe -np %N"
    run "$work/ucharm" ucharm 4 "$ucharmrun -n %N --timeout $t"
    run "$work/ompi" openmpi 4 "mpirun --allow-run-as-root --oversubscribe -np %N"
    run "$work/ucharm" ucharm-2pe-vp 4 "$ucharmrun -n 2 --timeout $t" "+vp %N"
    table "$RESULTS"
}

case ${1:-} in
    build) [[ $# -eq 4 ]] || { usage; exit 2; }; build "$2" "$3" "$4" ;;
    run) [[ $# -ge 5 ]] || { usage; exit 2; }; shift; run "$@" ;;
    table) table "${2:-${RESULTS:-}}" ;;
    compare) [[ $# -eq 3 ]] || { usage; exit 2; }; compare "$2" "$3" ;;
    -h|--help) usage ;;
    *) usage; exit 2 ;;
esac
