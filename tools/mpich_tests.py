#!/usr/bin/env python3
"""Builds and runs MPICH's test/mpi programs under OpenMPI and ucharm's AMPI.

Started by tools/mpich-tests.sh (see its header and tools/README.md). Each
program of a directory's testlist is built with OpenMPI's mpicc and with
ampicc, then run with `mpirun -np N`, `ucharmrun -n N` (one rank per PE) and,
where N > 2, `ucharmrun -n 2 ... +vp N`. A run passes when it exits 0 and
prints " No Errors" (MTest's convention). Every build and run leaves a log and
a result file under the work folder, so an interrupted run resumes where it
stopped; --redo forgets them.
"""
import argparse
import hashlib
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

DIRS = ["basic", "pt2pt", "coll", "datatype", "comm", "group", "attr",
        "init", "errhan", "info", "topo", "rma", "io", "part"]
# Fortran: "f77" and "f90" stand for their folders (io, spawn and profile left out). f90's
# folders are made from f77's by MPICH's maint/f77tof90 (as its autogen.sh does) in a copy
# of the Fortran tests under the work folder, beside its own (misc).
F77_DIRS = ["f77/" + d for d in ("attr", "coll", "comm", "datatype", "ext", "info", "init",
                                 "pt2pt", "rma", "topo")]
F90_DIRS = ["f90/" + d for d in ("attr", "coll", "comm", "datatype", "ext", "info", "init",
                                 "misc", "pt2pt", "rma", "topo")]
FORTRAN_DIRS = F77_DIRS + F90_DIRS
# threads/ (MPI_THREAD_MULTIPLE, pthreads through MTest's util/mtest_thread.c): its own
# folders, named as "threads/pt2pt" or all at once as "threads". Not in the default set.
# (spawn, part and perf are left out: dynamic processes, partitioned communication and
# message-rate measurements.)
THREAD_DIRS = ["threads/pt2pt", "threads/comm", "threads/init", "threads/coll", "threads/rma",
               "threads/mpi_t"]

# basic/ has no testlist: its Makefile.am programs, at 2 ranks (1 for self, wtime).
# They print no " No Errors": exit 0 passes. netpipe and adapt (bandwidth sweeps
# that run until stopped) are left out.
BASIC = ["self 1", "simple 2", "sendrecv 2", "srtest 2", "wtime 1",
         "patterns 2"]

# What MPICH's configure would find for a C99 compiler on Linux and an MPI-3.1
# library that is not MPICH (USE_STRICT_MPI: no MPIX extensions).
CONF_H = """\
/* Written by tools/mpich_tests.py in place of configure's mpitestconf.h. */
#define HAVE_STRING_H 1
#define HAVE_UNISTD_H 1
#define HAVE_STDARG_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE_LONG_LONG_INT 1
#define HAVE__BOOL 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define HAVE_MPI_TYPE_CREATE_STRUCT 1
#define HAVE_MPI2_COMBINERS 1
#define HAVE_MPI_INIT_THREAD 1
#define HAVE_MPI_WIN_CREATE 1
#define USE_STRICT_MPI 1
#define F77_NAME_LOWER_USCORE 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define THREAD_PACKAGE_POSIX 1
#define THREAD_PACKAGE_NONE 0
#define HAVE_PTHREAD_BARRIER_INIT 1
"""

UTIL_SOURCES = {"mtest": ["util/mtest.c", "util/mtest_common.c", "util/mtest_single.c"],
                "dtypes": ["util/dtypes.c"],
                # MTest with threads (MTest_Start_thread, ...) in place of mtest_single.c:
                # what threads/ programs link instead of libmtest.a.
                "mtestth": ["util/mtest.c", "util/mtest_common.c", "util/mtest_thread.c"],
                # main() for the newer tests that only define run(): linked as an
                # object where the program has no main.
                "runmain": ["util/run_mpitests.c"],
                "dtpools": ["dtpools/src/dtpools.c", "dtpools/src/dtpools_attr.c",
                            "dtpools/src/dtpools_custom.c", "dtpools/src/dtpools_desc.c",
                            "dtpools/src/dtpools_init_verify.c",
                            "dtpools/src/dtpools_misc.c"]}


def sh(cmd, log, timeout=None, cwd=None, env=None):
    """Runs cmd (a list), output to log; returns (rc, seconds). rc 124: timed out."""
    t0 = time.time()
    with open(log, "w") as f:
        f.write("$ " + shlex.join(cmd) + "\n")
        f.flush()
        try:
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=cwd,
                                 env=env, start_new_session=True)
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # The whole process group: mpirun/ucharmrun and every rank.
            os.killpg(p.pid, 9)
            p.wait()
            rc = 124
            f.write("\n[harness] killed after %s s\n" % timeout)
    return rc, time.time() - t0


class Entry:
    def __init__(self, d, name, np, args, env, opts, line):
        self.dir, self.name, self.np, self.args = d, name, np, args
        self.env, self.opts, self.line = env, opts, line
        key = "%s %d %s" % (name, np, " ".join(args))
        self.id = "%s.%d" % (name, np)
        if args:
            self.id += "." + hashlib.sha1(key.encode()).hexdigest()[:6]


def parse_testlist(src, d):
    """The entries of d's testlist, deduplicated on (program, np, args): the
    env= variants that only tune MPICH (MPIR_CVAR_*) would rerun the same thing."""
    if d == "basic":
        lines = BASIC
    else:
        path = next((src / d / n for n in ("testlist", "testlist.in")
                     if (src / d / n).exists()), None)
        lines = path.read_text().splitlines() if path else []
    out, seen = [], set()
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "@" in line:
            continue
        f = line.split()
        if len(f) < 2 or not f[1].isdigit():
            continue
        args, env, opts = [], {}, {}
        for kv in f[2:]:
            k, _, v = kv.partition("=")
            if k == "arg":
                args.append(v)
            elif k == "env":
                ek, _, ev = v.partition("=")
                env[ek] = ev
            else:
                opts[k] = v
        key = (f[0], int(f[1]), tuple(args))
        if key in seen:
            continue
        seen.add(key)
        out.append(Entry(d, f[0], int(f[1]), args, env, opts, line))
    out.sort(key=lambda e: e.np)  # small first; stable within a size
    return out


def makefile_rules(src, d):
    """prog -> (sources, -D flags) from d/Makefile.am's prog_SOURCES/_CPPFLAGS."""
    rules = {}
    mk = src / d / "Makefile.am"
    if not mk.exists():
        return rules
    for m in re.finditer(r"^(\w+)_(SOURCES|CPPFLAGS)\s*=\s*(.*)$", mk.read_text(), re.M):
        prog, kind, val = m.groups()
        r = rules.setdefault(prog, [None, []])
        if kind == "SOURCES":
            r[0] = val.split()
        else:
            r[1] = [w for w in val.split() if w.startswith("-D")]
    return rules


class Harness:
    def __init__(self, a):
        self.a = a
        self.src = Path(a.mpich).resolve() / "test" / "mpi"
        if not (self.src / "util" / "mtest.c").exists():
            sys.exit("mpich-tests: %s has no test/mpi/util/mtest.c" % a.mpich)
        self.work = Path(a.work).resolve()
        self.root = Path(a.main).resolve()
        self.rebuilt = set()  # (compiler, dir, program) built by this call
        self.cc = {"ompi": a.mpicc, "ucharm": str(self.root / "build/runtime/ampi/bin/ampicc")}
        self.fc = {"ompi": a.mpifort, "ucharm": str(self.root / "build/runtime/ampi/bin/ampif90")}
        self.fsrc = None
        if any(d in FORTRAN_DIRS for d in a.dirs):
            self.fsrc = self.prepare_fortran()
        self.run_cmd = str(self.root / "build/tools/ucharmrun/ucharmrun")
        for c in (self.cc["ucharm"], self.run_cmd):
            if not os.access(c, os.X_OK):
                sys.exit("mpich-tests: %s is missing (build ucharm first)" % c)
        # Programs built against another mpi.h (MPI_Status's layout, constants) would not
        # fit the library: a changed mpi.h drops every ucharm build and result here.
        mpi_h = self.root / "build/runtime/ampi/include/mpi.h"
        sig = hashlib.sha1(mpi_h.read_bytes()).hexdigest() if mpi_h.exists() else "none"
        mark = self.work / "ucharm" / "mpi.h.sha1"
        if (self.work / "ucharm").exists() and (not mark.exists() or mark.read_text().strip() != sig):
            print("mpich-tests: mpi.h changed since the ucharm builds in %s: building them again" % self.work)
            import shutil
            shutil.rmtree(self.work / "ucharm")
        mark.parent.mkdir(parents=True, exist_ok=True)
        mark.write_text(sig + "\n")
        inc = self.work / "include"
        inc.mkdir(parents=True, exist_ok=True)
        (inc / "mpitestconf.h").write_text(CONF_H)
        (inc / "mtest_mpix.h").write_text("/* empty: no MPIX extensions */\n")
        # dtpools includes "../dtpoolsconf.h": found through the empty folder inc/sub.
        (inc / "sub").mkdir(exist_ok=True)
        (inc / "dtpoolsconf.h").write_text("/* configure's dtpoolsconf.h: nothing needed */\n")
        self.cflags = ["-O1", "-w", "-I" + str(inc), "-I" + str(inc / "sub"), "-I" + str(self.src / "include"),
                       "-I" + str(self.src / "dtpools" / "include")]

    def prepare_fortran(self):
        """A writable copy of MPICH's Fortran tests: the .h files configure would write
        (INTEGER*8 addresses and offsets), and f90/ made from f77/ by maint/f77tof90."""
        import shutil
        root = self.work / "fsrc"
        for d in ("f77", "f90", "util", "include"):
            shutil.copytree(self.src / d, root / d, dirs_exist_ok=True)
        for hin in (root / "f77").rglob("*.h.in"):
            text = hin.read_text().replace("@F77_MPI_ADDRESS@", "integer*8").replace("@F77_MPI_OFFSET@", "integer*8")
            hin.with_suffix("").write_text(text)
        for d in sorted((root / "f77").iterdir()):
            if d.is_dir():
                (root / "f90" / d.name).mkdir(exist_ok=True)
                sh(["perl", str(self.src / "maint" / "f77tof90"), "f77/" + d.name, "f90/" + d.name,
                    "Makefile.am", "Makefile.ap"], str(root / ("f77tof90.%s.log" % d.name)), cwd=str(root))
        return root

    def source_root(self, d):
        return self.fsrc if d in FORTRAN_DIRS else self.src

    def fortran_libs(self, comp):
        """libmtest_f77.a and libmtest_f90.a (MTest's Fortran helpers) for one compiler."""
        d = self.work / comp / "util"
        d.mkdir(parents=True, exist_ok=True)
        libs = {}
        for kind, src in (("f77", "util/mtest_f77.f"), ("f90", "util/mtest_f90.f90")):
            a = d / ("libmtest_%s.a" % kind)
            if not a.exists() or self.a.redo_build or (self.a.redo_ucharm and comp == "ucharm"):
                o = d / ("mtest_%s.o" % kind)
                rc, _ = sh([self.fc[comp], "-c", *self.fflags, str(self.fsrc / src), "-o", str(o)],
                           str(o) + ".log", cwd=str(d))
                if rc == 0:
                    sh(["ar", "rcs", str(a), str(o)], str(a) + ".log")
                else:
                    print("  %s: %s does not build (see %s.log)" % (comp, src, o))
            libs[kind] = str(a)
        return libs

    fflags = ["-O1", "-w", "-fallow-argument-mismatch"]

    def commit(self):
        r = subprocess.run(["git", "-C", str(self.root), "log", "-1", "--format=%h"],
                           capture_output=True, text=True)
        return r.stdout.strip() or "?"

    def util_libs(self, comp):
        """Builds libmtest.a, libdtypes.a, libdtpools.a for one compiler (once)."""
        d = self.work / comp / "util"
        d.mkdir(parents=True, exist_ok=True)
        libs = []
        for lib, srcs in UTIL_SOURCES.items():
            a = d / ("lib%s.a" % lib)
            if not a.exists() or self.a.redo_build or (self.a.redo_ucharm and comp == "ucharm"):
                objs = []
                for s in srcs:
                    o = d / (Path(s).stem + ".o")
                    rc, _ = sh([self.cc[comp], "-c", *self.cflags, str(self.src / s),
                                "-o", str(o)], str(o) + ".log")
                    if rc == 0:
                        objs.append(str(o))
                    else:
                        print("  %s: %s does not build (see %s.log)" % (comp, s, o))
                if objs:
                    sh(["ar", "rcs", str(a), *objs], str(a) + ".log")
            if a.exists() and lib != "runmain":
                libs.append(str(a))
        return libs

    def build(self, comp, e, rules, libs):
        """Returns 'ok' or 'build' (failed); logs in <work>/<comp>/<dir>/<prog>.build.log."""
        d = self.work / comp / e.dir
        d.mkdir(parents=True, exist_ok=True)
        exe, log = d / e.name, d / (e.name + ".build.log")
        stamp = d / (e.name + ".build.rc")
        again = (self.a.redo_build or (self.a.redo_ucharm and comp == "ucharm")) \
            and (comp, e.dir, e.name) not in self.rebuilt
        if stamp.exists() and not again:
            ok = stamp.read_text().strip() == "0"
            if ok or not (self.a.redo_failed and comp == "ucharm"):
                return "ok" if ok else "build"
        srcs, defs = rules.get(e.name, [None, []])
        fortran = e.dir in FORTRAN_DIRS
        src = self.source_root(e.dir)
        default_ext = ".c" if not fortran else (".f" if e.dir.startswith("f77") else ".f90")
        srcs = srcs or [e.name + default_ext]
        if not all((src / e.dir / s).exists() for s in srcs):
            stamp.write_text("nosrc\n")
            log.write_text("no source %s\n" % srcs)
            return "build"
        if fortran:
            return self.build_fortran(comp, e, srcs, src, libs, exe, log, stamp)
        text = "".join((self.src / e.dir / s).read_text(errors="replace") for s in srcs)
        objs = []
        if not re.search(r"\bmain\s*\(", text):
            objs = [str(self.work / comp / "util" / "run_mpitests.o")]
        drop = "libmtest.a" if e.dir.startswith("threads/") else "libmtestth.a"
        libs = [x for x in libs if Path(x).name != drop]
        cmd = [self.cc[comp], *self.cflags, *defs, *[str(self.src / e.dir / s) for s in srcs],
               *objs, "-o", str(exe), *libs, "-lm", "-lpthread"]
        rc, _ = sh(cmd, str(log))
        if rc != 0 and self.runtime_busy(log):
            time.sleep(30)
            rc, _ = sh(cmd, str(log))
        stamp.write_text("%d\n" % rc)
        self.rebuilt.add((comp, e.dir, e.name))
        return "ok" if rc == 0 else "build"

    def build_fortran(self, comp, e, srcs, src, libs, exe, log, stamp):
        """A Fortran test: its C parts compiled with the C wrapper, linked by the Fortran one."""
        d = exe.parent
        objs, rc = [], 0
        with open(log, "w") as f:
            f.write("")
        for s in srcs:
            if s.endswith(".c"):
                o = d / (e.name + "." + Path(s).stem + ".o")
                rc, _ = sh([self.cc[comp], "-c", *self.cflags, str(src / e.dir / s), "-o", str(o)],
                           str(log) + ".c.log")
                with open(log, "a") as f:
                    f.write(Path(str(log) + ".c.log").read_text(errors="replace"))
                if rc != 0:
                    break
                objs.append(str(o))
        if rc == 0:
            kind = "f77" if e.dir.startswith("f77") else "f90"
            fc = self.fc[comp]
            if comp == "ucharm" and kind == "f77":
                fc = fc.replace("ampif90", "ampif77")
            # f77/rma includes attr's attraints.h (configure writes it there).
            cmd = [fc, *self.fflags, "-I" + str(src / e.dir), "-I" + str(src / kind / "attr"),
                   "-I" + str(src / "include"),
                   *[str(src / e.dir / s) for s in srcs if not s.endswith(".c")], *objs,
                   "-o", str(exe), self.flibs[comp][kind], *libs, "-lm"]
            rc, _ = sh(cmd, str(log) + ".f.log", cwd=str(d))
            with open(log, "a") as f:
                f.write(Path(str(log) + ".f.log").read_text(errors="replace"))
        stamp.write_text("%d\n" % rc)
        self.rebuilt.add((comp, e.dir, e.name))
        return "ok" if rc == 0 else "build"

    @staticmethod
    def runtime_busy(log):
        """True when a failure looks like ucharm's libraries being rebuilt meanwhile (a
        link error inside MTest's helpers, a truncated .so): then it is tried once more."""
        text = Path(log).read_text(errors="replace")
        return ("file too short" in text or "file format not recognized" in text
                or "undefined reference to `ucharm_" in text
                or re.search(r"libmtest\.a\(\w+\.o\).*\n.*undefined reference", text)
                is not None)

    def run(self, cfg, e):
        comp = "ompi" if cfg == "ompi" else "ucharm"
        d = self.work / comp / e.dir
        res = d / ("%s.%s.res" % (e.id, cfg))
        if res.exists() and not self.a.redo and not (self.a.redo_ucharm and cfg != "ompi"):
            st = res.read_text().split("\t")[0]
            if st == "pass" or cfg == "ompi" or not self.a.redo_failed:
                return st
        exe = "./" + e.name
        t = self.a.timeout
        if cfg == "ompi":
            cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(e.np),
                   exe, *e.args]
        elif cfg == "pe":
            cmd = [self.run_cmd, "-n", str(e.np), "--timeout", str(t), exe, *e.args]
        else:
            cmd = [self.run_cmd, "-n", "2", "--timeout", str(t), exe, *e.args,
                   "+vp", str(e.np)]
        env = dict(os.environ, **e.env)
        log = d / ("%s.%s.log" % (e.id, cfg))
        rc, secs = sh(cmd, str(log), timeout=t + 10, cwd=str(d), env=env)
        if rc != 0 and cfg != "ompi" and self.runtime_busy(log):
            time.sleep(30)
            rc, secs = sh(cmd, str(log), timeout=t + 10, cwd=str(d), env=env)
        text = log.read_text(errors="replace")
        # basic/ programs do not use MTest: there a clean exit passes.
        # MTest_Finalize prints " No Errors", run_mpitests.c's main "No Errors", a few
        # tests " No errors": MPICH's runtests takes all three.
        ok = re.search(r"^\s*No [Ee]rrors\s*$", text, re.M) is not None
        if rc == 0 and (ok or e.dir == "basic"):
            st = "pass"
        elif rc == 124 or "[harness] killed" in text:
            st = "timeout"
        else:
            st = "fail"
        res.write_text("%s\t%d\t%.1f\t%s\n" % (st, rc, secs, self.commit()))
        return st

    def result(self, comp, cfg, e):
        res = self.work / comp / e.dir / ("%s.%s.res" % (e.id, cfg))
        if res.exists():
            return res.read_text().split("\t")
        return None

    def wanted(self, e):
        """Within --max-np and under --max-mem (the testlist's mem=GB); named by --only."""
        return (not self.a.max_np or e.np <= self.a.max_np) and \
            float(e.opts.get("mem", 0)) < self.a.max_mem and \
            (not self.a.only or re.fullmatch(self.a.only, e.name))

    def do_dir(self, d, libs):
        entries = [e for e in parse_testlist(self.source_root(d), d) if self.wanted(e)]
        rules = makefile_rules(self.source_root(d), d)
        print("== %s: %d entries at %s" % (d, len(entries), self.commit()), flush=True)
        for e in entries:
            if self.deadline and time.time() > self.deadline:
                print("deadline reached", flush=True)
                return False
            marks = []
            if self.build("ompi", e, rules, libs["ompi"]) == "ok":
                marks.append("ompi=" + self.run("ompi", e))
            else:
                marks.append("ompi=build")
            if "ompi=pass" in marks or self.a.all:
                if self.build("ucharm", e, rules, libs["ucharm"]) == "ok":
                    marks.append("pe=" + self.run("pe", e))
                    if e.np > 2:
                        marks.append("vp=" + self.run("vp", e))
                else:
                    # A result of an earlier build must not outlive a failed rebuild.
                    for cfg in ("pe", "vp"):
                        (self.work / "ucharm" / d / ("%s.%s.res" % (e.id, cfg))).unlink(
                            missing_ok=True)
                    marks.append("ucharm=build")
            print("  %-24s np=%-2d %s %s" % (e.name, e.np, " ".join(e.args)[:30],
                                             " ".join(marks)), flush=True)
        return True

    def main(self):
        self.deadline = time.time() + self.a.minutes * 60 if self.a.minutes else None
        if not self.a.report_only:
            libs = {c: self.util_libs(c) for c in ("ompi", "ucharm")}
            if self.fsrc:
                self.flibs = {c: self.fortran_libs(c) for c in ("ompi", "ucharm")}
            for d in self.a.dirs:
                if not self.do_dir(d, libs):
                    break
        self.report()

    def report(self):
        """TSV of every entry run, summary per directory, failures with a hint."""
        rows, summ, fails = [], [], []
        tot = [0] * 7
        for d in self.a.dirs:
            entries = parse_testlist(self.source_root(d), d)
            n = [0] * 7  # listed, run, ompi pass, pe pass, vp-eligible, vp pass, commit
            commits = set()
            for e in entries:
                n[0] += 1
                if not self.wanted(e):
                    continue
                o = self.result("ompi", "ompi", e)
                if o is None:
                    if (self.work / "ompi" / d / (e.name + ".build.rc")).exists():
                        o = ["build"]
                    else:
                        continue
                n[1] += 1
                p = self.result("ucharm", "pe", e)
                v = self.result("ucharm", "vp", e) if e.np > 2 else None
                rcf = self.work / "ucharm" / d / (e.name + ".build.rc")
                if p is None and rcf.exists():
                    if rcf.read_text().strip() != "0":
                        p = ["build", "", "", ""]
                        v = ["build", "", "", ""] if e.np > 2 else None
                for r in (p, v):
                    if o[0] == "pass" and r and len(r) > 3 and r[3].strip():
                        commits.add(r[3].strip())
                cell = lambda r: r[0] if r else "-"
                rows.append([d, e.name, str(e.np), " ".join(e.args), cell(o), cell(p),
                             cell(v) if e.np > 2 else "n/a",
                             "xfail" if "xfail" in e.opts else "",
                             (p[3].strip() if p and len(p) > 3 else "")])
                if o[0] == "pass":
                    n[2] += 1
                    n[3] += p is not None and p[0] == "pass"
                    if e.np > 2:
                        n[4] += 1
                        n[5] += v is not None and v[0] == "pass"
                    for cfg, r in (("pe", p), ("vp", v)):
                        if r is not None and r[0] != "pass":
                            fails.append([d, e.name, str(e.np), " ".join(e.args), cfg, r[0],
                                          self.hint(e, cfg, r[0])])
            pct = lambda a, b: "%.1f%%" % (100.0 * a / b) if b else "-"
            summ.append([d, n[0], n[1], n[2], n[3], pct(n[3], n[2]), n[4], n[5],
                         pct(n[5], n[4]), ",".join(sorted(commits))])
            for i in range(6):
                tot[i] += n[i]
        out = self.work
        with open(out / "results.tsv", "w") as f:
            f.write("dir\tprogram\tnp\targs\tompi\tucharm_pe\tucharm_vp\txfail\tcommit\n")
            for r in rows:
                f.write("\t".join(r) + "\n")
        with open(out / "failures.tsv", "w") as f:
            f.write("dir\tprogram\tnp\targs\tconfig\tstatus\tcause\n")
            for r in fails:
                f.write("\t".join(r) + "\n")
        pct = lambda a, b: "%.1f%%" % (100.0 * a / b) if b else "-"
        lines = ["| dir | listed | run | OpenMPI pass | ucharm n=N pass | % | OpenMPI pass, N>2 |"
                 " ucharm +vp pass | % | commit(s) |", "|" + "---|" * 10]
        for s in summ:
            lines.append("| " + " | ".join(str(x) for x in s) + " |")
        lines.append("| all | %d | %d | %d | %d | %s | %d | %d | %s | |" % (
            tot[0], tot[1], tot[2], tot[3], pct(tot[3], tot[2]), tot[4], tot[5],
            pct(tot[5], tot[4])))
        (out / "summary.md").write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        print("results: %s/results.tsv, failures: %s/failures.tsv" % (out, out))

    def hint(self, e, cfg, st):
        """A one-line cause from a failed ucharm run's log."""
        if st == "build":
            log = self.work / "ucharm" / e.dir / (e.name + ".build.log")
            text = log.read_text(errors="replace") if log.exists() else ""
            m = re.search(r"undefined reference to `(\w+)'", text)
            if m:
                return "link: undefined " + m.group(1)
            m = re.search(r"error: (.*)", text)
            return "build: " + (m.group(1)[:120] if m else "failed")
        if st == "timeout":
            return "timeout (60 s)"
        log = self.work / "ucharm" / e.dir / ("%s.%s.log" % (e.id, cfg))
        text = log.read_text(errors="replace") if log.exists() else ""
        m = re.search(r"(MPI_\w+) is not implemented", text)
        if m:
            return "not implemented: " + m.group(1)
        m = re.search(r"ucharmrun: job ran past[^\n]*|\[harness\] killed[^\n]*", text)
        if m:
            return "timeout (60 s)"
        m = re.search(r"ucharm: PE \d+: (?:abort: )?([^\n]*)", text)
        if m:
            return "abort: " + m.group(1)[:150].replace("\t", " ")
        m = re.search(r"ucharmrun: ([^\n]*(?:signal|killed)[^\n]*)", text)
        if m:
            return "crash: " + m.group(1)[:150]
        # The test's own first complaint: a wrong result.
        own = [l.strip() for l in text.splitlines() if l.strip() and not l.startswith("$ ")
               and not l.startswith("ucharmrun:") and "No Errors" not in l
               and not re.match(r"\s*Found \d+ errors?", l)]
        found = re.search(r"Found (\d+) errors?", text)
        if own:
            return ("wrong result: " if found else "") + own[0][:150].replace("\t", " ")
        m = re.search(r"ucharmrun: ([^\n]*)", text)
        if m:
            return m.group(1)[:150]
        return "no output, exit code " + (text and "non-zero" or "?")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("mpich", help="MPICH source tree (holds test/mpi)")
    p.add_argument("dirs", nargs="*", default=DIRS)
    p.add_argument("--work", default="/work/mpich-run")
    p.add_argument("--main", default=str(Path(__file__).resolve().parents[1]))
    p.add_argument("--mpicc", default="mpicc")
    p.add_argument("--mpifort", default="mpifort")
    p.add_argument("--timeout", type=int, default=60)
    p.add_argument("--max-np", type=int, default=0)
    p.add_argument("--max-mem", type=float, default=4.0, help="skip mem=GB entries >= this")
    p.add_argument("--minutes", type=float, default=0, help="stop starting tests after this")
    p.add_argument("--redo", action="store_true", help="rerun tests already run")
    p.add_argument("--redo-build", action="store_true", help="rebuild programs")
    p.add_argument("--redo-ucharm", action="store_true",
                   help="rebuild and rerun every ucharm run (OpenMPI's results kept)")
    p.add_argument("--redo-failed", action="store_true",
                   help="rebuild and rerun ucharm's failures (the runtime changed)")
    p.add_argument("--all", action="store_true", help="run ucharm also where OpenMPI fails")
    p.add_argument("--only", default="", help="only the programs whose name matches this regex")
    p.add_argument("--report-only", action="store_true")
    a = p.parse_args()
    dirs = []
    for d in a.dirs:
        dirs += {"f77": F77_DIRS, "f90": F90_DIRS, "threads": THREAD_DIRS}.get(d, [d])
    a.dirs = dirs
    for d in a.dirs:
        if d not in DIRS + FORTRAN_DIRS + THREAD_DIRS:
            sys.exit("mpich-tests: unknown directory %s (one of %s f77 f90 %s threads %s)"
                     % (d, " ".join(DIRS), " ".join(FORTRAN_DIRS), " ".join(THREAD_DIRS)))
    Harness(a).main()


if __name__ == "__main__":
    main()
