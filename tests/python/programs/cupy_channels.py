# Device-direct channels: CuPy arrays (anything with __cuda_array_interface__) travel GPU
# to GPU over the Channel API. argv[1] picks the case: into_buffers, allocate, mixed,
# stream, wrong_size (must fail clearly), into_numpy (must fail clearly).
import cupy
import numpy as np

from ucharm import charm, Chare, Array, Channel, coro


def make(k, n, dtype=cupy.float32):
    return cupy.arange(n, dtype=dtype) * (k + 1)


class End(Chare):
    def __init__(self):
        self.ch = Channel(self, remote=self.thisProxy[1 - self.thisIndex[0]])

    @coro
    def run(self, case):
        me = self.thisIndex[0]
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
