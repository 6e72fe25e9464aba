"""Futures, charm.iwait, coroutines (@coro), @when ordering."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_futures(pes):
    check_ok(run("futures.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_coroutines(pes):
    check_ok(run("coroutines.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_when_orders_early_messages(pes):
    check_ok(run("when.py", pes))
