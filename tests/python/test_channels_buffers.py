"""Channel's buffer forms (isend/irecv Requests, recv_into/send_from, waitall): host
buffers of every kind, receives posted before the peer sends, 1000 transfers in order,
errors raised clearly and a too-small receive buffer ending the job naming both sizes."""
import pytest

from conftest import check_fails, check_ok, run


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("case", ["basic", "posted_ahead", "order", "kinds", "errors", "message_cai"])
def test_buffer_forms(case, pes):
    check_ok(run("channels_buffers.py", pes, args=[case]))


@pytest.mark.parametrize("pes", [1, 2])
def test_too_small_receive_buffer_ends_the_job(pes):
    check_fails(run("channels_buffers.py", pes, args=["truncate"]), "does not fit",
                "the receive buffer holds 50 bytes, the incoming data is 100 bytes")
