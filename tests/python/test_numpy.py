"""NumPy arrays through proxy calls (out-of-band buffers) and broadcasts."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_numpy_arguments_and_broadcast_copies(pes):
    check_ok(run("numpy_calls.py", pes))
