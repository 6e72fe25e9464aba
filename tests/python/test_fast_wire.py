"""The fast wire format of plain calls and Channel messages (bindings/python/src/
core_fastwire.pxi): every kind of argument round-trips exactly, whether it takes the fast
format or falls back to pickle; cached entry methods follow a class redefined at run time."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_fast_wire_round_trips(pes):
    check_ok(run("fast_wire.py", pes))
