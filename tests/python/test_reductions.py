"""contribute() with every reducer over groups and arrays, to futures and proxy methods;
custom reducers; allreduce."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_builtin_reducers(pes):
    check_ok(run("reductions.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_custom_reducers_with_pre_and_post(pes):
    check_ok(run("reductions_custom.py", pes))
