"""Defects found by using the package as a user would: @when with a default argument,
remote exceptions that cannot be unpickled (or pickled), calls from another thread, a
buffer that cannot be sent (no leak), and charm.exit running atexit handlers and flushing
open files on every PE."""
import pathlib

import pytest

from conftest import check_fails, check_ok, run


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("case", ["when_default", "undecodable", "unpicklable", "thread_call", "bad_buffer"])
def test_case(case, pes):
    check_ok(run("robustness.py", pes, args=[case]))


@pytest.mark.parametrize("pes", [1, 2, 4])
def test_exit_runs_atexit_and_flushes_files(pes, tmp_path):
    r = run("robustness.py", pes, args=["exit_flush", str(tmp_path)])
    assert r.rc == 0, r.describe()
    for pe in range(pes):
        f = pathlib.Path(tmp_path, f"pe{pe}.txt")
        assert f.exists() and f.read_text() == f"written on PE {pe}\n", \
            f"PE {pe}: the file it left open lost its buffered output\n" + r.describe()
        assert pathlib.Path(tmp_path, f"atexit{pe}.txt").exists(), \
            f"PE {pe}: its atexit handler did not run\n" + r.describe()


@pytest.mark.parametrize("pes", [1, 2])
def test_abort_runs_no_atexit_handler(pes, tmp_path):
    check_fails(run("robustness.py", pes, args=["abort", str(tmp_path)]), "aborting on purpose")
    for pe in range(pes):
        assert not pathlib.Path(tmp_path, f"atexit{pe}.txt").exists(), f"PE {pe} ran an atexit handler after abort"
