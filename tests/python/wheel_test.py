"""The wheel as a user gets it: `pip wheel bindings/python`, installed into a fresh
virtualenv outside the tree, running a charm4py-style program at 2 PEs through that
virtualenv's `ucharmrun` console script, with nothing of the source or build tree on any
path (checked inside the program: where ucharm, its libraries and UCX were loaded from).

    python wheel_test.py --source bindings/python --work DIR [--build-dir DIR] [--ucx-root PATH]

--work keeps what makes a second run fast: the wheel's CMake build folder (incremental;
--build-dir puts it elsewhere, e.g. the one tools/setup.sh's `pip install` made, so that
the runtime is not compiled once more) and a wheelhouse of the wheel's dependencies
(greenlet, numpy, libucx-cu13; downloaded once, then installed with --no-index).
Everything else lives in a temporary folder.
Exit codes: 0 passed, 1 failed, 77 skipped (no venv/pip, or the dependencies cannot be
had), as CTest's SKIP_RETURN_CODE says.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

SKIP = 77

PROGRAM = textwrap.dedent('''
    import os, sys
    import numpy as np
    from ucharm import charm, Chare, Group, Array, Reducer, Future, Channel, coro


    class Block(Chare):
        def __init__(self, scale):
            self.scale = scale

        def work(self, x, done):
            self.contribute(x * self.scale, Reducer.sum, done)

        @coro
        def ring(self, n):
            me, k = self.thisIndex[0], 4
            right = Channel(self, remote=self.thisProxy[(me + 1) % k])
            left = Channel(self, remote=self.thisProxy[(me - 1) % k])
            right.send(np.full(n, me, dtype=np.int64))
            got = left.recv()
            return int(got.sum()) == n * ((me - 1) % k)


    class Where(Chare):
        def where(self):
            import ucharm
            maps = open("/proc/self/maps").read().split()
            libs = sorted({p for p in maps if p.startswith("/") and ".so" in p and os.path.basename(p).startswith(
                           ("libucharm", "libucp", "libucs", "libuct", "_core."))})
            return charm.myPe(), os.path.dirname(ucharm.__file__), libs, list(sys.path)


    def main(args):
        blocks = Array(Block, 4, args=[2])
        f = Future()
        blocks.work(3, f)
        assert f.get() == 24
        assert all(blocks.ring(1 << 17, ret=True).get())  # 1 MiB per element
        places = Group(Where).where(ret=True).get()
        for pe, pkg, libs, path in places:
            print("PE", pe, "package", pkg)
            for p in libs:
                print("PE", pe, "loaded", p)
            for p in path:
                print("PE", pe, "path", p)
        assert charm.numPes() == 2 and len(places) == 2
        print("ok")
        charm.exit()


    charm.start(main)
''')


def log(msg):
    print(f"wheel_test: {msg}", flush=True)


def run(cmd, timeout, env=None, cwd=None):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    log(f"{time.monotonic() - t0:6.1f} s  rc {p.returncode}  {' '.join(map(str, cmd))[:160]}")
    return p


def show(p):
    sys.stdout.write(p.stdout[-8000:])
    sys.stdout.write(p.stderr[-8000:])


def clean_env(extra=None):
    """The environment of a user's shell: nothing that points into the tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "UCHARMRUN", "LD_LIBRARY_PATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra or {})
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="bindings/python")
    ap.add_argument("--work", required=True, help="a folder kept between runs (build folder, wheelhouse)")
    ap.add_argument("--build-dir", default="", help="the wheel's CMake build folder (default: WORK/build)")
    ap.add_argument("--ucx-root", default="", help="the UCX the project build uses (UCHARM_UCX_ROOT)")
    a = ap.parse_args()
    source = pathlib.Path(a.source).resolve()
    tree = source.parents[1]
    work = pathlib.Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    build_dir = pathlib.Path(a.build_dir).resolve() if a.build_dir else work / "build"
    t_start = time.monotonic()

    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        log(f"SKIP: pip is not available to {sys.executable}: {probe.stderr.strip()}")
        return SKIP
    version = tuple(int(x) for x in probe.stdout.split()[1].split(".")[:2] if x.isdigit())
    if version < (22, 3):
        log(f"SKIP: pip {probe.stdout.split()[1]} is older than 22.3 (no `pip --python`)")
        return SKIP
    missing = [m for m in ("scikit_build_core", "Cython") if subprocess.run(
        [sys.executable, "-c", f"import {m}"], capture_output=True).returncode != 0]
    if missing:
        log(f"SKIP: {sys.executable} lacks the build requirements {missing} (tools/setup.sh installs them)")
        return SKIP

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ucharm-wheel-"))
    try:
        # 1. pip wheel bindings/python: the project's build requirements come from this
        #    interpreter (no build isolation: no download of scikit-build-core and Cython);
        #    the CMake build folder is kept in --work, so a second run only relinks.
        dist = tmp / "dist"
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist),
               "-C", f"build-dir={build_dir}", str(source)]
        if a.ucx_root:
            cmd[5:5] = ["-C", f"cmake.define.UCHARM_UCX_ROOT={a.ucx_root}"]
        p = run(cmd, timeout=1500, env=clean_env({"CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}))
        if p.returncode != 0:
            show(p)
            log("FAIL: pip wheel bindings/python failed")
            return 1
        wheels = sorted(dist.glob("ucharm-*.whl"))
        if len(wheels) != 1:
            log(f"FAIL: expected one ucharm wheel in {dist}, found {wheels}")
            return 1
        wheel = wheels[0]
        log(f"wheel {wheel.name} ({wheel.stat().st_size // 1024} KiB)")

        # 2. A fresh virtualenv outside the tree. Without its own copy of pip (seeding it
        #    takes longer than the rest): this pip installs into it (`pip --python`).
        venv = tmp / "venv"
        p = run([sys.executable, "-m", "venv", "--without-pip", str(venv)], timeout=300, env=clean_env())
        vpy = venv / "bin" / "python"
        if p.returncode != 0 or not vpy.exists():
            show(p)
            log("SKIP: cannot create a virtualenv (python3-venv missing?)")
            return SKIP
        pip = [sys.executable, "-m", "pip", "--python", str(vpy)]

        # 3. Install the wheel and its dependencies: from the wheelhouse in --work when it
        #    has them, else downloaded into it first (pip's cache helps there).
        house = work / "wheelhouse"
        house.mkdir(exist_ok=True)
        install = pip + ["install", "--no-index", "--find-links", str(house), str(wheel)]
        p = run(install, timeout=600, env=clean_env())
        if p.returncode != 0:
            d = run(pip + ["download", "-d", str(house), str(wheel)], timeout=1200, env=clean_env())
            if d.returncode != 0:
                show(d)
                log("SKIP: the wheel's dependencies (greenlet, numpy, libucx-cu13) cannot be downloaded")
                return SKIP
            for w in house.glob("ucharm-*.whl"):
                w.unlink()  # the wheel itself comes from dist/ each time
            p = run(install, timeout=600, env=clean_env())
        if p.returncode != 0:
            show(p)
            log("FAIL: installing the wheel into a fresh virtualenv failed")
            return 1

        # 4. The program, at 2 PEs, through the virtualenv's ucharmrun, from a folder
        #    outside the tree.
        prog = tmp / "prog.py"
        prog.write_text(PROGRAM)
        ucharmrun = venv / "bin" / "ucharmrun"
        if not ucharmrun.exists():
            log(f"FAIL: the wheel installed no ucharmrun console script into {venv / 'bin'}")
            return 1
        p = run([str(ucharmrun), "-n", "2", "--timeout", "60", str(vpy), str(prog)], timeout=120,
                env=clean_env({"PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}"}), cwd=str(tmp))
        show(p)
        lines = [ln.strip() for ln in p.stdout.splitlines() if ln.strip()]
        if p.returncode != 0 or not lines or lines[-1] != "ok":
            log("FAIL: the program did not end with 'ok' and exit code 0")
            return 1
        bad = []
        for ln in lines:
            parts = ln.split(" ", 3)
            if len(parts) == 4 and parts[0] == "PE" and parts[2] in ("package", "loaded", "path"):
                where = parts[3]
                if where.startswith(str(tree)):
                    bad.append(ln)
                if parts[2] in ("package", "loaded") and not where.startswith(str(venv)):
                    bad.append(ln)
        if bad:
            log("FAIL: the program used files outside the fresh virtualenv or inside the tree:\n  " + "\n  ".join(bad))
            return 1
        log(f"passed in {time.monotonic() - t_start:.1f} s")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
