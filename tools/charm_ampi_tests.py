#!/usr/bin/env python3
"""Builds and runs Charm++'s own AMPI programs (tests/ampi, examples/ampi) on ucharm.

Started by tools/charm-ampi-tests.sh (see its header). Each program directory is
copied to the work folder and built by its own Makefile, with the compiler
variables (CHARMC, AMPICC) pointed at ucharm's ampicc/ampicxx and nothing else
changed; then every program runs as its Makefile's `test` target runs it, twice:
one rank per PE (`ucharmrun -n RANKS prog args`) and virtualized as Charm++
does (`ucharmrun -n P prog args +vp RANKS`, P being the Makefile's +pP). A run
passes on the expected exit code and output. Prints a table and writes it to
summary.md in the work folder.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path


class Run:
    """One run: ranks, the PEs of the +vp form, program arguments (runtime options
    included, as the Makefile gives them), the exit code and output it must give."""

    def __init__(self, ranks, vp_pes, args, rc=0, expect=(), reject=(), label="", then=()):
        self.ranks, self.vp_pes, self.args = ranks, vp_pes, args
        self.rc, self.expect, self.reject, self.label = rc, expect, reject, label
        self.then = then  # restarts: (pes form, args) run after this one, in order


class Prog:
    def __init__(self, name, folder, target, binary, runs, make_vars=(), compiler="ampicxx", skip=None, note="",
                 timeout=1):
        self.name, self.folder, self.target, self.binary = name, folder, target, binary
        self.runs, self.make_vars, self.compiler, self.skip, self.note = runs, make_vars, compiler, skip, note
        self.timeout = timeout  # times --timeout: the big grids need longer on a small machine


FAILED = ("failed", "FAILED")
JAC = ["2", "2", "2", "40", "+balancer", "RotateLB", "+LBDebug", "1"]
PROGS = [
    Prog("megampi", "tests/ampi/megampi", "megampi", "megampi",
         [Run(4, 2, ["+balancer", "RandCentLB"], expect=["All tests passed"], reject=["TEST FAILED"]),
          Run(2, 1, ["+balancer", "RandCentLB"], expect=["All tests passed"], reject=["TEST FAILED"])]),
    Prog("stacksize", "tests/ampi/stacksize", "stacksize", "stacksize",
         [Run(4, 2, [], expect=["stacksize test passed"])], compiler="ampicc"),
    Prog("migration", "tests/ampi/migration", "migration", "migration",
         [Run(4, 2, ["+ampiEnableMigrateToPe"], expect=["All tests passed"]),
          Run(4, 2, ["+ampiEnableMigrateToPe", "--test_mapfile", "+mapping", "MAPFILE"],
              expect=["Testing mapfile correctness", "All tests passed"], label="mapfile"),
          Run(20, 2, ["+ampiEnableMigrateToPe", "--test_mapfile", "+mapping", "MAPFILE"],
              expect=["All tests passed"], label="mapfile")]),
    Prog("datatype", "tests/ampi/datatype", "datatype", "datatype",
         [Run(4, 1, [], expect=["Testing datatype free iscatterv"])]),
    Prog("intercomm_coll", "tests/ampi/intercomm_coll", "intercomm_coll", "intercomm_coll",
         [Run(4, 1, [], expect=["All tests passed"])]),
    # The variant closest to ucharm's privatization (a copy of the program per rank), with
    # the Makefile's charmc option for it left out; and the thread-local variant.
    Prog("privatization (pieglobals)", "tests/ampi/privatization", "pieglobals-cxx", "pieglobals-cxx",
         [Run(2, 1, ["+balancer", "RandCentLB"], expect=["All tests passed"]),
          Run(4, 2, ["+balancer", "RandCentLB"], expect=["All tests passed"])],
         make_vars=["OPTS_pieglobals_cxx="]),
    Prog("privatization (tlsglobals)", "tests/ampi/privatization", "tlsglobals-cxx", "tlsglobals-cxx",
         [Run(2, 1, ["+balancer", "RandCentLB"], expect=["All tests passed"]),
          Run(4, 2, ["+balancer", "RandCentLB"], expect=["All tests passed"])]),
    Prog("jacobi3d (tests)", "tests/ampi/jacobi3d", "jacobi", "jacobi",
         [Run(8, 2, ["2", "2", "2", "200"], expect=[r"iter 200 "])],
         note="run without +killFile (Charm++'s fault injection)", timeout=10),
    Prog("exit_explicit", "tests/ampi/exit", "exit_explicit", "exit_explicit",
         [Run(2, 1, [], rc=42)]),
    Prog("exit_return", "tests/ampi/exit", "exit_return", "exit_return",
         [Run(2, 1, [], rc=42)]),
    Prog("chkpt", "tests/ampi/chkpt", "hello", "hello",
         [Run(8, 4, [], expect=[r"\[0\]step 5"], label="checkpoint, restart on 4 and 2 PEs",
              then=[("same", ["+restart", "log"], [r"\[0\]step 3"], [r"\[0\]step 2,"]),
                    ("half", ["+restart", "log"], [r"\[0\]step 5"], [r"\[0\]step 2,"])])],
         compiler="ampicc"),
    Prog("pmpi", "tests/ampi/pmpi", "pmpi", "pmpi", [Run(2, 1, [], expect=["PMPI test passed"])], compiler="ampicc"),
    Prog("fallreduce", "tests/ampi/fallreduce", "fallreduce", "fallreduce", [],
         skip="Fortran (ampif90): ucharm's AMPI has no Fortran binding"),
    Prog("creduce", "examples/ampi/creduce", "creduce", "creduce",
         [Run(4, 2, [], expect=["MPI_Reduce test passed", "MPI_Ireduce test passed"], reject=FAILED),
          Run(2, 1, [], expect=["MPI_Reduce test passed", "MPI_Ireduce test passed"], reject=FAILED)]),
    Prog("Cjacobi3D jacobi", "examples/ampi/Cjacobi3D", "jacobi", "jacobi",
         [Run(8, 3, JAC, expect=["iter 40 "])], timeout=3),
    Prog("Cjacobi3D jacobi.pup", "examples/ampi/Cjacobi3D", "jacobi.pup", "jacobi.pup",
         [Run(8, 3, JAC, expect=["iter 40 "])], timeout=3),
    Prog("Cjacobi3D jacobi.iso", "examples/ampi/Cjacobi3D", "jacobi.iso", "jacobi.iso",
         [Run(8, 3, JAC, expect=["iter 40 "])], timeout=3),
    Prog("Cjacobi3D jacobi.tls", "examples/ampi/Cjacobi3D", "jacobi.tls", "jacobi.tls",
         [Run(8, 3, JAC, expect=["iter 40 "])], timeout=3),
    Prog("Cjacobi3D jacobi-cpp", "examples/ampi/Cjacobi3D", "jacobi-cpp", "jacobi-cpp",
         [Run(8, 3, ["40"] + JAC, expect=["iteration time: "])], make_vars=("OPTS=-std=c++20",),
         note="not run by Charm++'s Makefile (its first argument: DIM); charm++.h's PUP needs C++20",
         timeout=3),
    Prog("Cjacobi3D jacobi-get", "examples/ampi/Cjacobi3D", "jacobi-get", "jacobi-get",
         [Run(8, 3, ["2", "2", "2", "20"], expect=["iter 20 "])],
         note="not run by Charm++'s Makefile"),
    Prog("cuda/simple", "examples/ampi/cuda/simple", "simple", "simple", [],
         skip="needs Charm++'s HAPI (hapi.h, AMPI_GPU_Iinvoke) and a GPU"),
]


def sh(cmd, cwd, log, timeout):
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        try:
            p = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, Path(log).read_text(errors="replace")


def why_failed(out, rc, want_rc):
    for pat in [r"ucharm AMPI: [^\n]*", r"MPI_\w+: [^\n]*\(MPI_ERR\w*\)", r"[^\n]*is not implemented[^\n]*",
                r"[^\n]*error: [^\n]*", r"[^\n]*Error[^\n]*", r"[^\n]*FAILED[^\n]*", r"[^\n]*failed[^\n]*",
                r"[^\n]*Segmentation fault[^\n]*", r"[^\n]*signal \d+[^\n]*"]:
        m = re.search(pat, out)
        if m:
            return m.group(0).strip()[:160]
    if rc == 124:
        return "timed out"
    return f"exit {rc} (expected {want_rc})" if rc != want_rc else "expected output missing"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("charm_src")
    ap.add_argument("--build", default=str(Path(__file__).resolve().parent.parent / "build"))
    ap.add_argument("--work", default="/work/charm-ampi-run")
    ap.add_argument("--only", default="", help="regular expression on program names")
    ap.add_argument("--timeout", type=int, default=120)
    a = ap.parse_args()
    build = Path(a.build).resolve()
    bin_dir = build / "runtime/ampi/bin"
    ucharmrun = build / "tools/ucharmrun/ucharmrun"
    for f in (bin_dir / "ampicc", bin_dir / "ampicxx", ucharmrun):
        if not f.exists():
            sys.exit(f"charm-ampi-tests: {f} not found (build ucharm_ampi and ucharmrun)")
    src = Path(a.charm_src).resolve()
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    copied = set()
    for p in PROGS:
        if a.only and not re.search(a.only, p.name):
            continue
        if p.skip:
            rows.append((p.name, "-", "skip", "skip", p.skip))
            continue
        d = work / p.folder
        if p.folder not in copied:
            if d.exists():
                shutil.rmtree(d)
            shutil.copytree(src / p.folder, d)
            copied.add(p.folder)
        logs = work / "logs"
        logs.mkdir(exist_ok=True)
        tag = re.sub(r"[^\w.-]+", "_", p.name)
        cc = str(bin_dir / p.compiler)
        # $(OPTS) as the Makefiles add it to their CHARMC/AMPICC (command-line variables expand).
        make = ["make", "-C", str(d), p.target, f"CHARMC={cc} $(OPTS)", f"AMPICC={cc} $(OPTS)", "OPTS="] + list(p.make_vars)
        rc, out = sh(make, d, logs / f"{tag}.build.log", 900)
        if rc != 0 or not (d / p.binary).exists():
            rows.append((p.name, "FAIL", "-", "-", "build: " + why_failed(out, rc, 0)))
            print(f"{p.name}: build failed (logs/{tag}.build.log)", flush=True)
            continue
        results = {"pe": [], "vp": []}
        whys = []
        for i, r in enumerate(p.runs):
            for form in ("pe", "vp"):
                pes = r.ranks if form == "pe" else r.vp_pes
                tail = [] if form == "pe" else ["+vp", str(r.ranks)]
                steps = [(pes, r.args + tail, r.expect, r.reject)]
                for which, extra, exp, rej in r.then:
                    steps.append((pes if which == "same" else max(1, pes // 2), extra + tail, exp, rej))
                ok = True
                for k, (npes, args, expect, reject) in enumerate(steps):
                    if form == "pe" and k > 0:  # one rank per PE: a restart keeps the PE count
                        npes = r.ranks
                    limit = a.timeout * p.timeout
                    cmd = [str(ucharmrun), "-n", str(npes), "--timeout", str(limit - 10), f"./{p.binary}"] + args
                    log = logs / f"{tag}.{i}.{form}.{k}.log"
                    rc, out = sh(cmd, d, log, limit)
                    bad = [x for x in reject if re.search(x, out)]
                    missing = [x for x in expect if not re.search(x, out)]
                    if rc != r.rc or missing or bad:
                        ok = False
                        label = f" {r.label}" if r.label else ""
                        whys.append(f"{form} {' '.join(cmd[2:3])}{label}: "
                                    + (f"printed '{bad[0]}'" if bad and rc == r.rc else why_failed(out, rc, r.rc)))
                        break
                results[form].append(ok)
        cell = lambda v: "pass" if v and all(v) else ("-" if not v else "FAIL")
        note = "; ".join(whys) if whys else p.note
        rows.append((p.name, "ok", cell(results["pe"]), cell(results["vp"]), note))
        print(f"{p.name}: pe {cell(results['pe'])}, vp {cell(results['vp'])} {note}", flush=True)
    head = ["program", "build", "1 rank/PE", "+vp", "notes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    table = "\n".join(lines)
    (work / "summary.md").write_text(table + "\n")
    print(table)
    return 0 if all(r[1] in ("ok", "-") and "FAIL" not in r[2:4] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
