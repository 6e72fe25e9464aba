# The buffer forms of Channel: isend/irecv (Requests with wait/test), recv_into/send_from,
# receives posted before the peer sends, waitall, charm.iwait over Requests, 1000 transfers
# in order, every host buffer kind (NumPy, bytearray, memoryview, bytes, DLPack, and
# __cuda_array_interface__ read over host memory), and the
# errors a program can catch. argv[1] picks the case; `truncate` must end the job clearly.
import numpy as np

from ucharm import charm, Chare, Array, Channel, Future, Request, coro, waitall


class DLOnly:
    """An array seen only through DLPack (as a PyTorch CPU tensor is)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class CAIOnly:
    """An array seen only through __cuda_array_interface__ (as a Numba device array is),
    here over host memory: the interface is read the same way, UCX finds host memory."""

    def __init__(self, a, readonly=False):
        self.a = a
        self.readonly = readonly

    @property
    def __cuda_array_interface__(self):
        a = self.a
        strides = None if a.flags.c_contiguous else a.strides
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, self.readonly),
                "strides": strides, "version": 3, "stream": None}


def expect(exc_type, text, fn, *args):
    try:
        fn(*args)
    except exc_type as e:
        assert text in str(e), f"{exc_type.__name__} without {text!r}: {e}"
        return
    raise AssertionError(f"{fn} did not raise {exc_type.__name__} ({text})")


class End(Chare):
    def __init__(self):
        self.peer = self.thisProxy[1 - self.thisIndex[0]]
        self.ch = Channel(self, remote=self.peer)
        self.go = Future()  # element 0, case posted_ahead: element 1's receives are posted

    def start(self):  # the receiver's receives are posted: the sender may go
        self.go.send(None)

    @coro
    def run(self, case):
        me = self.thisIndex[0]
        return getattr(self, "case_" + case)(me)

    # -- transfers of several sizes both ways, into buffers given
    def case_basic(self, me):
        for n in (1, 8, 4096, 65536, 1 << 20):
            out = np.arange(n, dtype=np.uint8) + me
            got = np.zeros(n, dtype=np.uint8)
            r = self.ch.irecv(got)
            assert isinstance(r, Request)
            s = self.ch.isend(out)
            assert s.wait() == n and s.test() and s.done
            assert r.wait() == n and r.test()
            assert np.array_equal(got, np.arange(n, dtype=np.uint8) + (1 - me)), n
        return "ok"

    # -- the receiver posts every receive first, then lets the sender go
    def case_posted_ahead(self, me):
        n, k = 16, 256 * 1024
        if me == 1:
            bufs = [np.zeros(k, dtype=np.int32) for _ in range(n)]
            reqs = [self.ch.irecv(b) for b in bufs]
            assert not any(r.test() for r in reqs), "a receive completed before anything was sent"
            self.peer.start()
            waitall(reqs)
            for i, b in enumerate(bufs):
                assert b[0] == i and b[-1] == i, (i, b[0], b[-1])
            return "ok"
        self.go.get()
        srcs = [np.full(k, i, dtype=np.int32) for i in range(n)]
        waitall([self.ch.isend(s) for s in srcs])
        return "ok"

    # -- 1000 transfers in order, received in windows, with send/recv messages between
    def case_order(self, me):
        total, win = 1000, 100
        if me == 0:
            reqs = []
            for i in range(total):
                reqs.append(self.ch.isend(np.array([i, -i], dtype=np.int64)))
                if i % 250 == 0:
                    self.ch.send(("marker", i))  # the message path: a stream of its own
            waitall(reqs)
            return "ok"
        seen = 0
        markers = []
        for base in range(0, total, win):
            bufs = [np.zeros(2, dtype=np.int64) for _ in range(win)]
            reqs = [self.ch.irecv(b) for b in bufs]
            for r in charm.iwait(reqs):  # completion order: any; data: in order
                assert r.test()
            for j, b in enumerate(bufs):
                assert b[0] == base + j and b[1] == -(base + j), (base + j, b)
                seen += 1
        for _ in range(4):
            markers.append(self.ch.recv())
        assert seen == total and markers == [("marker", i) for i in (0, 250, 500, 750)], markers
        return "ok"

    # -- every host buffer kind, blocking forms, Channel.waitall
    def case_kinds(self, me):
        if me == 0:
            self.ch.send_from(b"bytes-16-bytes!!")
            self.ch.send_from(bytearray(b"x" * 32))
            self.ch.send_from(memoryview(np.arange(10, dtype=np.float64)))
            self.ch.isend(DLOnly(np.arange(6, dtype=np.int16).reshape(2, 3)))
            self.ch.isend(np.arange(12, dtype=np.int32).reshape(3, 4)[1])  # a contiguous row
            self.ch.isend(CAIOnly(np.arange(7, dtype=np.float32).reshape(7, 1)))
            self.ch.waitall()
            return "ok"
        a = bytearray(16)
        assert self.ch.recv_into(a) is a and bytes(a) == b"bytes-16-bytes!!"
        b = np.zeros(32, dtype=np.uint8)
        self.ch.recv_into(b)
        assert bytes(b) == b"x" * 32
        c = np.zeros(10)
        self.ch.recv_into(memoryview(c))
        assert np.array_equal(c, np.arange(10, dtype=np.float64))
        d = np.zeros((2, 3), dtype=np.int16)
        self.ch.recv_into(DLOnly(d))
        assert np.array_equal(d, np.arange(6, dtype=np.int16).reshape(2, 3))
        e = np.zeros(8, dtype=np.int32)  # larger than the data: it lands at the start
        self.ch.irecv(e)
        self.ch.waitall()
        assert list(e[:4]) == [4, 5, 6, 7] and not e[4:].any(), e
        f = np.zeros((7, 1), dtype=np.float32)
        self.ch.recv_into(CAIOnly(f))
        assert np.array_equal(f.ravel(), np.arange(7, dtype=np.float32)), f
        return "ok"

    # -- errors a program catches; the channel stays usable after each
    def case_errors(self, me):
        if me == 0:
            ch = self.ch
            expect(TypeError, "not a buffer", ch.isend, 42)
            expect(TypeError, "not a buffer", ch.irecv, [1, 2, 3])
            expect(ValueError, "read-only", ch.irecv, b"abc")
            ro = np.zeros(4)
            ro.flags.writeable = False
            expect(ValueError, "read-only", ch.irecv, ro)
            expect(ValueError, "not contiguous", ch.isend, np.zeros((4, 4))[:, 1])
            expect(ValueError, "C-contiguous", ch.isend, DLOnly(np.zeros((4, 4))[:, 1]))
            expect(ValueError, "C-contiguous", ch.isend, CAIOnly(np.zeros((4, 4))[:, 1]))
            expect(ValueError, "read-only", ch.irecv, CAIOnly(np.zeros(4), readonly=True))
            # nothing was posted by the failed calls: the next transfer pairs as usual
            got = np.zeros(3, dtype=np.int64)
            r = ch.irecv(got)
            ch.isend(np.array([7, 8, 9], dtype=np.int64)).wait()
            r.wait()
            assert list(got) == [4, 5, 6], got
            # waiting outside a coroutine
            msg = self.thisProxy[0].wait_outside(ret=True).get()
            assert "outside a coroutine" in msg, msg
            # a closed channel
            ch2 = Channel(self, remote=self.peer, port=1)
            ch2.close()
            expect(RuntimeError, "closed channel", ch2.isend, np.zeros(1))
            expect(RuntimeError, "closed channel", ch2.irecv, np.zeros(1))
            ch3 = Channel(self, remote=self.peer, port=2)
            ch3.isend(np.zeros(1)).wait()
            ch3.close()
            expect(RuntimeError, "closed channel", ch3.isend, np.zeros(1))
            self.peer.finish_errors()
            return "ok"
        got = np.zeros(3, dtype=np.int64)
        r = self.ch.irecv(got)
        self.ch.isend(np.array([4, 5, 6], dtype=np.int64)).wait()
        r.wait()
        assert list(got) == [7, 8, 9], got
        self.ch2 = Channel(self, remote=self.peer, port=1)
        self.ch3 = Channel(self, remote=self.peer, port=2)
        self.ch3.recv_into(np.zeros(1))
        return "ok"

    def wait_outside(self):  # not a coroutine: waiting raises
        ch = Channel(self, remote=self.peer, port=3)
        r = ch.irecv(np.zeros(1))
        try:
            r.wait()
        except RuntimeError as e:
            return str(e)
        return "no error"

    def finish_errors(self):
        Channel(self, remote=self.peer, port=3).isend(np.zeros(1))  # completes wait_outside's receive

    # -- send/recv's device path (a message with the description, the data over the core's
    # channel, completed by Requests), run on host memory through __cuda_array_interface__
    def case_message_cai(self, me):
        n = 100_000
        if me == 0:
            h = self.ch.send("head", CAIOnly(np.arange(n, dtype=np.float64)), 5)
            h.get()
            self.ch.send(CAIOnly(np.full(3, 9, dtype=np.int16)))
            return "ok"
        b = np.zeros(n, dtype=np.float64)
        view = CAIOnly(b)
        head, got, five = self.ch.recv(view)
        assert head == "head" and got is view and five == 5
        assert np.array_equal(b, np.arange(n, dtype=np.float64))
        c = np.zeros(3, dtype=np.int16)
        self.ch.recv(CAIOnly(c))
        assert list(c) == [9, 9, 9], c
        return "ok"

    # -- a receive buffer smaller than the data: the job ends naming both sizes
    def case_truncate(self, me):
        if me == 0:
            self.ch.isend(np.zeros(100, dtype=np.uint8)).wait()
            return "ok"
        self.ch.recv_into(np.zeros(50, dtype=np.uint8))
        return "should have failed"


def main(args):
    case = args[1]
    pair = Array(End, 2)
    charm.awaitCreation(pair)
    got = pair.run(case, ret=True).get()
    assert got == ["ok", "ok"], got
    print("ok")
    charm.exit()


charm.start(main)
