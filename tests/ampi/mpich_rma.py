#!/usr/bin/env python3
"""A chosen set of MPICH's test/mpi/rma programs under ucharm's AMPI (CTest ampi.mpich_rma).

Each program is built with ampicc against MTest's util (as tools/mpich_tests.py builds
them: its mpitestconf.h and util sources) and run with `ucharmrun -n N` and, where N > 2,
`ucharmrun -n 2 ... +vp N`; it passes when it exits 0 and prints " No Errors". The MPICH
tree comes from $UCHARM_MPICH_SRC (default /work/mpich); without it the test is skipped
(exit 77). tools/mpich-tests.sh runs the whole directory against OpenMPI.

usage: mpich_rma.py BUILD_DIR WORK_DIR
"""
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))
import mpich_tests  # noqa: E402  (CONF_H, UTIL_SOURCES, makefile_rules)

# (program, ranks, args): every synchronization kind, every operation, datatypes on both
# sides, dynamic and shared windows, attributes, request-based operations, lock-free lists.
CHOSEN = [
    ("transpose6", 1, []), ("contig_displ", 1, []), ("attrorderwin", 1, []), ("baseattrwin", 1, []),
    ("fkeyvalwin", 1, []), ("selfrma", 1, []), ("get_acc_local", 1, []), ("rmanull", 2, []),
    ("rmazero", 2, []), ("badrma", 2, []),
    ("winname", 2, []), ("wincall", 2, []), ("test1", 2, []), ("test2", 2, []),
    ("test3", 2, []), ("test4", 2, []), ("test5_am", 2, []), ("transpose3", 2, []),
    ("transpose4", 2, []), ("lockopts", 2, []), ("locknull", 2, []), ("rputget", 2, []),
    ("strided_acc_subarray", 2, []), ("strided_get_indexed", 2, []), ("put_bottom", 2, []),
    ("window_creation", 2, []), ("manyrma3", 2, []), ("rma_contig", 2, ["-iter=10"]),
    ("lockcontention", 3, []), ("adlb_mimic1", 3, []), ("win_flavors", 3, []),
    ("accfence2", 4, []), ("getgroup", 4, []), ("putfidx", 4, []), ("lockcontention2", 4, []),
    ("strided_putget_indexed", 4, []), ("strided_getacc_indexed", 4, []),
    ("window_attach", 4, []), ("win_dynamic_acc", 4, []), ("win_shared", 4, []),
    ("win_shared_noncontig_put", 4, []), ("compare_and_swap", 4, []),
    ("fetch_and_op_double", 4, []), ("get_accumulate_int_derived", 4, []), ("flush", 4, []),
    ("reqops", 4, []), ("req_example", 4, []), ("linked_list", 4, []),
    ("linked_list_fop", 4, []), ("linked_list_lockall", 4, []), ("pscw_ordering", 4, []),
    ("mutex_bench", 4, []), ("acc_loc", 4, []), ("fetchandadd", 7, []),
    ("fetchandadd_am", 7, []), ("nullpscw", 7, []),
    ("win_dynamic_rma_flush_get", 2, ["-count=9216", "-op=acc"]), ("win_shared_query", 4, ["-flavor=allocate"]),
]


def run(cmd, log, timeout=None, cwd=None):
    with open(log, "w") as f:
        try:
            return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout, cwd=cwd).returncode
        except subprocess.TimeoutExpired:
            return 124


def main():
    build, work = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    src = Path(os.environ.get("UCHARM_MPICH_SRC", "/work/mpich")) / "test" / "mpi"
    if not (src / "rma" / "testlist.in").exists() and not (src / "rma" / "testlist").exists():
        print("skipped: no MPICH test/mpi/rma at %s (set UCHARM_MPICH_SRC)" % src)
        return 77
    ampicc, ucharmrun = build / "runtime/ampi/bin/ampicc", build / "tools/ucharmrun/ucharmrun"
    inc = work / "include"
    (inc / "sub").mkdir(parents=True, exist_ok=True)
    (inc / "mpitestconf.h").write_text(mpich_tests.CONF_H)
    (inc / "mtest_mpix.h").write_text("/* empty: no MPIX extensions */\n")
    (inc / "dtpoolsconf.h").write_text("/* nothing needed */\n")
    cflags = ["-O1", "-w", "-I%s" % inc, "-I%s" % (inc / "sub"), "-I%s" % (src / "include")]
    objs = []
    for s in mpich_tests.UTIL_SOURCES["mtest"] + mpich_tests.UTIL_SOURCES["dtypes"]:
        o = work / (Path(s).stem + ".o")
        if run([str(ampicc), "-c", *cflags, str(src / s), "-o", str(o)], str(o) + ".log") != 0:
            print("FAIL building %s (%s.log)" % (s, o))
            return 1
        objs.append(str(o))
    rules = mpich_tests.makefile_rules(src, "rma")  # programs built from other sources, -D flags
    fails = passes = 0
    for prog, np, args in CHOSEN:
        exe = work / prog
        sources, defines = rules.get(prog, [None, []])
        sources = [str(src / "rma" / s) for s in (sources or [prog + ".c"]) if s.endswith(".c")]
        if run([str(ampicc), *cflags, *defines, *sources, *objs, "-o", str(exe), "-lm"],
               str(exe) + ".build.log") != 0:
            print("FAIL build %s (%s.build.log)" % (prog, exe))
            fails += 1
            continue
        configs = [("n%d" % np, ["-n", str(np)], [])]
        if np > 2:
            configs.append(("n2_vp%d" % np, ["-n", "2"], ["+vp", str(np)]))
        for name, launch, extra in configs:
            log = work / ("%s.%s.log" % (prog, name))
            rc = run([str(ucharmrun), *launch, "--timeout", "60", str(exe), *args, *extra], str(log),
                     timeout=90, cwd=str(work))
            ok = rc == 0 and " No Errors" in log.read_text(errors="replace")
            print("%s %s %s%s" % ("PASS" if ok else "FAIL", prog, name, "" if ok else " (rc %d, %s)" % (rc, log)))
            passes += ok
            fails += not ok
    print("mpich_rma: %d passed, %d failed" % (passes, fails))
    return 0 if fails == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
