"""charm.thisProxy.updateGlobals, charm.pool.map (also with is_ray=True: futures and ray
ObjectRefs as items), charm.awaitCreation."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_update_globals_pool_await_creation(pes):
    check_ok(run("globals_pool.py", pes))


@pytest.mark.parametrize("pes", [1, 2, 4])
def test_nested_pool_tasks(pes):
    check_ok(run("nested_pool.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_pool_is_ray_dependencies(pes):
    check_ok(run("pool_is_ray.py", pes))


@pytest.mark.parametrize("pes", [1, 2, 4, 8])
def test_readonlies(pes):
    check_ok(run("readonlies.py", pes))
