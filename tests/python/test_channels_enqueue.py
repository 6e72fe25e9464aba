"""Stream-ordered channel transfers from Python (Channel.send_enqueue / recv_enqueue) on
host memory, in call order with isend/irecv; where the process cannot run stream
operations (no GPU) both raise RuntimeError naming the reason and post nothing; wrong
arguments raise TypeError/ValueError either way."""
import pytest

from conftest import check_ok, run


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("case", ["host", "errors"])
def test_stream_ordered(case, pes):
    check_ok(run("channels_enqueue.py", pes, args=[case]))
