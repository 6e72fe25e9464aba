"""Shared helpers of the Python package's tests: every test runs a small charm4py-style
program (programs/*.py) as a real job, through ucharmrun (or mpirun, or alone), with a
time limit, and checks its exit code and output.

Environment (CTest sets both; see CMakeLists.txt):
  PYTHONPATH  must make `import ucharm` work (<build>/bindings/python)
  UCHARMRUN   the launcher (<build>/tools/ucharmrun/ucharmrun)
"""
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
PYTHON = sys.executable
JOB_LIMIT_S = 30     # the launcher stops the job after this (exit code 124): a hang
WAIT_LIMIT_S = 60    # and this test stops waiting for the launcher after this


def pytest_configure(config):
    if importlib.util.find_spec("ucharm") is None:
        pytest.exit("the ucharm package is not importable: put <build>/bindings/python on PYTHONPATH", 2)


def ucharmrun():
    path = os.environ.get("UCHARMRUN")
    if not path:
        path = str(HERE.parents[1] / "build" / "tools" / "ucharmrun" / "ucharmrun")
    if not os.access(path, os.X_OK):
        pytest.fail(f"ucharmrun not found at {path} (set UCHARMRUN)")
    return path


class Result:
    def __init__(self, cmd, rc, out, err):
        self.cmd, self.rc, self.out, self.err = cmd, rc, out, err

    @property
    def lines(self):
        return [ln.strip() for ln in self.out.splitlines() if ln.strip()]

    def describe(self):
        return (f"command: {' '.join(self.cmd)}\nexit code: {self.rc}\n--- stdout ---\n{self.out[-6000:]}"
                f"\n--- stderr ---\n{self.err[-6000:]}")


def _env(extra):
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # nothing written into the source tree
    env["PYTHONUNBUFFERED"] = "1"         # output in order even when a PE dies
    if extra:
        env.update(extra)
    return env


def run_cmd(cmd, env=None, timeout=WAIT_LIMIT_S):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(env),
                           cwd=str(PROGRAMS))
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        pytest.fail(f"timed out after {timeout} s (a hang)\ncommand: {' '.join(cmd)}\n--- stdout ---\n{out}"
                    f"\n--- stderr ---\n{err}")
    return Result(cmd, p.returncode, p.stdout, p.stderr)


def run(prog, pes=1, args=(), env=None, launcher="ucharmrun"):
    """Runs programs/<prog> on `pes` PEs; launcher: 'ucharmrun', 'mpirun' or 'none'."""
    script = str(PROGRAMS / prog)
    if launcher == "none":
        cmd = [PYTHON, script, *map(str, args)]
    elif launcher == "mpirun":
        cmd = [shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe", "-np", str(pes),
               "-x", "PYTHONPATH", PYTHON, script, *map(str, args)]
    else:
        cmd = [ucharmrun(), "-n", str(pes), "--timeout", str(JOB_LIMIT_S), PYTHON, script, *map(str, args)]
    return run_cmd(cmd, env)


def check_ok(r):
    """The job ended with code 0 and its last output line is 'ok'."""
    assert r.rc != 124, f"the job hung: the launcher stopped it after {JOB_LIMIT_S} s\n" + r.describe()
    assert r.rc == 0, "the job failed\n" + r.describe()
    assert r.lines and r.lines[-1] == "ok", "the last output line is not 'ok'\n" + r.describe()
    return r


def check_fails(r, *messages, code=None):
    """The job failed (code `code`, or any non-zero one) and its stderr names every one
    of `messages`."""
    if code is None:
        assert r.rc != 0, "the job should have failed\n" + r.describe()
        assert r.rc != 124, "the job hung until the launcher's time limit\n" + r.describe()
    else:
        assert r.rc == code, f"expected exit code {code}\n" + r.describe()
    for m in messages:
        assert m in r.err, f"stderr does not say {m!r}\n" + r.describe()
    return r


PES = [1, 2, 4]
