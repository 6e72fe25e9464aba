"""Channels: closed explicitly and when collected (no limit on how many one peer may
have), errors in recv that leave nothing posted and the message in place, and zero-copy
only for memory that cannot change (a read-only view of a writable array is copied)."""
import pytest

from conftest import check_ok, run

CASES = ["many_closed", "many_collected", "recv_errors", "zero_copy_view"]


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("case", CASES)
def test_channel_lifetime(case, pes):
    check_ok(run("channels_lifetime.py", pes, args=[case]))
