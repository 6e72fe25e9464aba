"""python -m ucharm.interactive: statements from stdin run on the job (charm4py.interactive):
waits on futures at the prompt, a chare class defined at the prompt used on every PE, an
imported module's chares, a function defined at the prompt called on another PE, errors that
do not end the session, exit(). With CHARM4PY_SRC set, charm4py's tests/interactive/test1.in
(its import of charm4py changed) runs too."""
import os
import pathlib

import pytest

from conftest import PROGRAMS, PYTHON, ucharmrun

import subprocess

from conftest import _env

HERE = PROGRAMS / "interactive"


def session(pes, stdin_text, cwd=HERE, env=None):
    cmd = [ucharmrun(), "-n", str(pes), "--timeout", "60", PYTHON, "-m", "ucharm.interactive"]
    p = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True, timeout=90, cwd=str(cwd),
                       env=_env(dict(env or {}, PYTHONPATH=os.pathsep.join(
                           [str(cwd), os.environ.get("PYTHONPATH", "")]))))
    return p


@pytest.mark.parametrize("pes", [1, 2, 4])
def test_session_from_stdin(pes):
    p = session(pes, (HERE / "session.in").read_text())
    d = f"exit code {p.returncode}\n--- stdout ---\n{p.stdout}\n--- stderr ---\n{p.stderr}"
    assert p.returncode == 0, d
    out = p.stdout
    assert f"ucharm interactive shell: {pes} PE" in out, d
    assert f"on PE 0 of {pes}" in out, d
    assert "group sum" in out and "True" in out.split("group sum", 1)[1].splitlines()[0], d
    assert f"last element on PE {pes - 1}" in out, d
    assert "ZeroDivisionError: division by zero" in p.stderr and "after the error" in out, d
    assert "array results " + str([2 * i for i in range(2 * pes)]) in out, d
    assert "remote triple 15" in out and "loop 0" in out and "loop 1" in out, d
    assert "session done" in out and "never" not in out, d


def test_end_of_input_ends_the_job():
    p = session(2, "x = 41\nprint('x is', x + 1)\n")
    assert p.returncode == 0 and "x is 42" in p.stdout, p.stdout + p.stderr


CHARM4PY = os.environ.get("CHARM4PY_SRC")


@pytest.mark.skipif(not CHARM4PY, reason="CHARM4PY_SRC (a charm4py checkout) is not set")
def test_charm4py_test1_session(tmp_path):
    src = pathlib.Path(CHARM4PY) / "tests" / "interactive"
    (tmp_path / "tests" / "interactive").mkdir(parents=True)
    lib = (src / "mylib.py").read_text().replace("from charm4py import", "from ucharm import")
    (tmp_path / "tests" / "interactive" / "mylib.py").write_text(lib)
    p = session(2, (src / "test1.in").read_text(), cwd=tmp_path)
    assert p.returncode == 0 and "interactive session says bye" in p.stdout, p.stdout + p.stderr
