"""Channels: in-order host objects, several objects per send, NumPy arrays small and
large (zero-copy), rings of array elements, several channels per pair, charm.iwait."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_channels(pes):
    check_ok(run("channels.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_symmetric_exchange_of_large_arrays(pes):
    # Both neighbours send first, then receive (a hang here: Channel.send waits for the
    # receiver).
    check_ok(run("channels_exchange.py", pes))


@pytest.mark.parametrize("pes", [1, 2])
def test_several_channels_to_one_remote(pes):
    check_ok(run("channels_multi.py", pes))


@pytest.mark.parametrize("pes", [1, 2])
def test_iwait_over_channels(pes):
    check_ok(run("channels_iwait.py", pes))
