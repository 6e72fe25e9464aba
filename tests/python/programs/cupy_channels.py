# Device-direct channels: CuPy arrays (anything with __cuda_array_interface__) travel GPU
# to GPU over the Channel API. argv[1] picks the case: into_buffers, allocate, mixed,
# stream, wrong_size (must fail clearly), into_numpy (must fail clearly); the buffer forms
# (isend/irecv: only the bytes travel): buffers (receives posted before the sender goes,
# CuPy, DLPack-only and __cuda_array_interface__-only views, a stream), buffers_order
# (1000 transfers in order, window by window).
import cupy
import numpy as np

from ucharm import charm, Chare, Array, Channel, Future, coro, waitall


def make(k, n, dtype=cupy.float32):
    return cupy.arange(n, dtype=dtype) * (k + 1)


class DLOnly:
    """A device array seen only through DLPack."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class CAIOnly:
    """A device array seen only through __cuda_array_interface__ (as Numba's are)."""

    def __init__(self, a):
        self.__cuda_array_interface__ = a.__cuda_array_interface__
        self.a = a


class End(Chare):
    def __init__(self):
        self.peer = self.thisProxy[1 - self.thisIndex[0]]
        self.ch = Channel(self, remote=self.peer)
        self.go = Future()

    def start(self):
        self.go.send(None)

    def buffers(self, me):
        sizes = [2, 300_000]  # 8 B and 1.2 MB of float32
        if me == 1:  # the receiver posts everything, then lets the sender go
            bufs = [cupy.zeros(n, dtype=cupy.float32) for n in sizes]
            views = [cupy.zeros(n, dtype=cupy.float32) for n in sizes]
            s = cupy.cuda.Stream(non_blocking=True)
            last = cupy.zeros(1000, dtype=cupy.float32)
            reqs = [self.ch.irecv(b) for b in bufs]
            reqs += [self.ch.irecv(DLOnly(views[0])), self.ch.irecv(CAIOnly(views[1]))]
            reqs.append(self.ch.irecv(last, stream=s))
            assert not any(r.test() for r in reqs)
            self.peer.start()
            waitall(reqs)
            cupy.cuda.runtime.deviceSynchronize()
            for k, n in enumerate(sizes):
                assert bool(cupy.all(bufs[k] == make(k, n))), n
                assert bool(cupy.all(views[k] == make(k + 2, n))), n
            assert bool(cupy.all(last == make(5, 1000)))
            return "ok"
        self.go.get()
        reqs = [self.ch.isend(make(k, n)) for k, n in enumerate(sizes)]
        reqs += [self.ch.isend(DLOnly(make(2, sizes[0]))), self.ch.isend(CAIOnly(make(3, sizes[1])))]
        s = cupy.cuda.Stream(non_blocking=True)
        with s:
            a = make(5, 1000)  # queued on s: the send waits for it
        reqs.append(self.ch.isend(a, stream=s))
        waitall(reqs)
        return "sent"

    def buffers_order(self, me):
        total, win = 1000, 100
        if me == 0:
            src = [cupy.full(4, i, dtype=cupy.int32) for i in range(total)]
            cupy.cuda.runtime.deviceSynchronize()
            for base in range(0, total, win):
                waitall([self.ch.isend(src[base + j]) for j in range(win)])
            return "sent"
        out = cupy.zeros((total, 4), dtype=cupy.int32)
        for base in range(0, total, win):
            waitall([self.ch.irecv(out[base + j]) for j in range(win)])
        cupy.cuda.runtime.deviceSynchronize()
        assert bool(cupy.all(out == cupy.arange(total, dtype=cupy.int32)[:, None]))
        return "ok"

    @coro
    def run(self, case):
        me = self.thisIndex[0]
        if case.startswith("buffers"):
            r = getattr(self, case)(me)
            return "sent" if me == 0 else r
        sizes = [100, 300_000]   # 400 B and 1.2 MB
        if me == 0:  # the sender
            if case in ("into_buffers", "allocate", "wrong_size", "into_numpy"):
                for n in sizes:
                    self.ch.send(make(0, n))
            elif case == "mixed":
                self.ch.send("host", make(0, 10), np.arange(5), make(1, 70_000, cupy.float64), {"k": 1})
            elif case == "stream":
                s = cupy.cuda.Stream(non_blocking=True)
                with s:
                    a = make(0, 200_000)
                self.ch.send(a, stream=s)
            cupy.cuda.runtime.deviceSynchronize()
            return "sent"
        # the receiver
        if case == "into_buffers":
            for n in sizes:
                buf = cupy.zeros(n, dtype=cupy.float32)
                got = self.ch.recv(buf)
                cupy.cuda.runtime.deviceSynchronize()
                assert bool(cupy.all(buf == make(0, n))), n
            return "ok"
        if case == "allocate":
            for n in sizes:
                got = self.ch.recv()
                cupy.cuda.runtime.deviceSynchronize()
                assert isinstance(got, cupy.ndarray) and got.shape == (n,) and got.dtype == cupy.float32
                assert bool(cupy.all(got == make(0, n))), n
            return "ok"
        if case == "mixed":
            b1 = cupy.zeros(10, dtype=cupy.float32)
            b2 = cupy.zeros(70_000, dtype=cupy.float64)
            h, d1, arr, d2, dct = self.ch.recv(b1, b2)
            cupy.cuda.runtime.deviceSynchronize()
            assert h == "host" and dct == {"k": 1} and np.array_equal(arr, np.arange(5))
            assert d1 is b1 and d2 is b2
            assert bool(cupy.all(b1 == make(0, 10))) and bool(cupy.all(b2 == make(1, 70_000, cupy.float64)))
            return "ok"
        if case == "stream":
            s = cupy.cuda.Stream(non_blocking=True)
            buf = cupy.zeros(200_000, dtype=cupy.float32)
            self.ch.recv(buf, stream=s)
            s.synchronize()
            assert bool(cupy.all(buf == make(0, 200_000)))
            return "ok"
        if case == "wrong_size":
            self.ch.recv(cupy.zeros(99, dtype=cupy.float32))
            return "should have failed"
        if case == "into_numpy":
            self.ch.recv(np.zeros(100, dtype=np.float32))
            return "should have failed"
        raise ValueError(case)


def main(args):
    case = args[1]
    pair = Array(End, 2)
    charm.awaitCreation(pair)
    got = pair.run(case, ret=True).get()
    assert got == ["sent", "ok"], got
    print("ok")
    charm.exit()


charm.start(main)
