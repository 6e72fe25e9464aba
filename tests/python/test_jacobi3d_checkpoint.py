"""The Python Jacobi3D (examples/jacobi3d/python) with --checkpoint-every: a run stopped
after a checkpoint and restarted with +restart DIR on the same or another PE count ends
with the residual and checksum of an uninterrupted run (which are the C++ Jacobi3D's too),
and --verify still finds every cell equal to the serial reference."""
import os
import pathlib

import pytest

from conftest import run_cmd, ucharmrun, PYTHON

PROG = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "jacobi3d" / "python" / "jacobi3d.py")
ARGS = ["--grid", "24", "--blocks", "8", "--iters", "12", "--warmup", "2"]


def job(pes, *args):
    return run_cmd([ucharmrun(), "-n", str(pes), "--timeout", "50", PYTHON, PROG, *args])


def final(r):
    assert r.rc == 0, r.describe()
    keep = [ln for ln in r.lines if ln.startswith(("residual:", "checksum:"))]
    assert len(keep) == 2, r.describe()
    return keep


@pytest.fixture(scope="module")
def reference():
    return final(job(2, *ARGS))


@pytest.mark.parametrize("before,after", [(2, 2), (2, 4), (4, 2)])
def test_restart_continues_to_the_same_result(tmp_path, reference, before, after):
    d = str(tmp_path / "ck")
    r = job(before, *ARGS, "--checkpoint-every", "4", "--checkpoint-dir", d, "--stop-after-checkpoint", "8")
    assert r.rc == 0 and "stopped after the checkpoint at iteration 8" in r.out, r.describe()
    assert "checkpoint at iteration 4" in r.out and "residual:" not in r.out, r.describe()
    r = job(after, "--verify", "+restart", d)  # the options come from the checkpoint
    assert f"restarted from {d} at iteration 8 (checkpoint of {before} PEs, now {after})" in r.out, r.describe()
    assert "checkpoint at iteration 12" in r.out and "verify: ok" not in r.out, r.describe()
    assert final(r) == reference, r.describe()


def test_checksum_equals_the_cpp_version(reference):
    exe = pathlib.Path(ucharmrun()).resolve().parents[2] / "examples" / "jacobi3d" / "jacobi3d"
    if not os.access(exe, os.X_OK):
        pytest.skip(f"the C++ Jacobi3D is not built ({exe})")
    r = run_cmd([ucharmrun(), "-n", "2", "--timeout", "50", str(exe), *ARGS, "--kernels", "cpu"])
    assert r.rc == 0, r.describe()
    assert reference[1] in r.lines, r.describe()


def test_bad_stop_is_an_error():
    r = job(1, *ARGS, "--checkpoint-every", "4", "--stop-after-checkpoint", "6")
    assert r.rc != 0 and "no checkpoint is written at that iteration" in r.err, r.describe()
