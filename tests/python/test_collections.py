"""Chare, Group and Array creation, element calls and broadcasts, ret/awaitable,
dynamic insertion."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_chares_groups_arrays(pes):
    check_ok(run("creation.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_dynamic_insertion_and_broadcast(pes):
    check_ok(run("dynamic_array.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_array_maps(pes):
    check_ok(run("array_map.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_element_proxies_inside_elements(pes):
    # self.thisProxy of a 2-D/3-D array indexed by tuples; ret=True broadcasts from an
    # element (the collection's size must be known there too).
    check_ok(run("element_proxies.py", pes))


@pytest.mark.parametrize("pes", [2, 8])
def test_broadcasts_reach_exactly_the_elements_inserted_before(pes):
    # At 8 PEs the broadcast is forwarded through other PEs, so an insertion sent after
    # it can arrive first.
    check_ok(run("dynamic_array_epochs.py", pes))

