"""charm.scheduleCallableAfter and charm.sleep; hosts and topology-aware trees
(charm.myHost & co.; the two-host form is tests/multihost's python_topology)."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_timers(pes):
    check_ok(run("timers.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_topology_one_host(pes):
    r = check_ok(run("topology.py", pes, args=[1]))
    assert f"hosts 1: {list(range(pes))}" in r.out, r.describe()
