"""charm.start with a main function and with a main chare; the three ways to launch."""
import shutil

import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_main_function_gets_argv_and_pes(pes):
    r = check_ok(run("start_function.py", pes, args=["alpha", "42"]))
    assert f"pes {pes}" in r.lines


@pytest.mark.parametrize("pes", PES)
def test_main_chare_gets_argv(pes):
    r = check_ok(run("start_mainchare.py", pes, args=["beta"]))
    assert f"pes {pes}" in r.lines


def test_python_alone_is_one_pe():
    r = check_ok(run("start_function.py", args=["alpha", "42"], launcher="none"))
    assert "pes 1" in r.lines
    check_ok(run("reductions.py", launcher="none"))


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
@pytest.mark.parametrize("pes", [1, 2])
def test_mpirun(pes):
    # OpenMPI's mpirun is a PMIx server: the PEs find each other through it.
    r = check_ok(run("start_function.py", pes, args=["alpha", "42"], launcher="mpirun"))
    assert f"pes {pes}" in r.lines


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun")
def test_mpirun_runs_a_real_program():
    check_ok(run("reductions.py", 3, launcher="mpirun"))


@pytest.mark.parametrize("pes", [1, 2])
def test_main_chare_constructor_may_wait(pes):
    # charm4py: the entry point (main function or main chare constructor) is threaded.
    check_ok(run("mainchare_blocking.py", pes))


@pytest.mark.parametrize("pes", [1, 2])
def test_coro_constructor_may_wait(pes):
    check_ok(run("ctor_coro.py", pes))
