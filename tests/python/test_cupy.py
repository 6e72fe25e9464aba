"""Device-direct channels with CuPy arrays: send/recv and the buffer forms isend/irecv
(CuPy, DLPack-only and __cuda_array_interface__-only arrays, streams, 1000 in order).
Skipped without CuPy or without a GPU."""
import pytest

cupy = pytest.importorskip("cupy")

from conftest import check_fails, check_ok, run  # noqa: E402


def _gpus():
    try:
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no driver, no device
        return 0


if _gpus() == 0:
    pytest.skip("no GPU", allow_module_level=True)


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("case", ["into_buffers", "allocate", "mixed", "stream", "buffers", "buffers_order"])
def test_device_channel(case, pes):
    check_ok(run("cupy_channels.py", pes, args=[case]))


@pytest.mark.parametrize("pes", [1, 2])
def test_wrong_size_buffer_fails_clearly(pes):
    # A buffer too small for the array: the receive is posted before the array's description
    # arrives, so either the transport ("... does not fit: the receive buffer holds N bytes,
    # the incoming data is M bytes") or Channel.recv ("buffer 0 holds N bytes ...") says so.
    check_fails(run("cupy_channels.py", pes, args=["wrong_size"]), "holds", "bytes")


@pytest.mark.parametrize("pes", [1, 2])
def test_host_buffer_for_device_array_fails_clearly(pes):
    check_fails(run("cupy_channels.py", pes, args=["into_numpy"]), "Channel.recv", "not a device array")
