# Channels between two array elements (on PEs 0 and 1, or both on PE 0): closed
# explicitly and when collected, more than 1,024 of them to one peer, errors in recv that
# leave the channel as it was, and zero-copy only where the data cannot change.
#   args: many_closed | many_collected | recv_errors | zero_copy_view
import gc
import sys
import weakref

import numpy as np

from ucharm import charm, Chare, Array, Channel, coro

N = 1100  # above the 1,024 channels to one peer that used to be the limit


class HostAsDevice:
    """A host array that claims to be a device array (__cuda_array_interface__): channels
    move it over the Channel API as they move device arrays (the machine layer sees host
    memory), so device-buffer paths run without a GPU."""

    def __init__(self, arr):
        self.arr = arr
        self.__cuda_array_interface__ = {"shape": arr.shape, "typestr": arr.dtype.str, "version": 3,
                                         "data": (arr.ctypes.data, False), "strides": None}


class Peer(Chare):
    def __init__(self):
        self.me = self.thisIndex[0]
        self.other = self.thisProxy[1 - self.me]

    @coro
    def many_closed(self):
        for i in range(N):
            ch = Channel(self, remote=self.other)
            ch.send(i, self.me)
            assert ch.recv() == (i, 1 - self.me)
            ch.close()
            ch.close()  # closing twice is harmless
        try:
            ch.send(1)
            raise AssertionError("send on a closed channel did not raise")
        except RuntimeError as e:
            assert "closed" in str(e), e
        return N

    @coro
    def many_collected(self):
        refs = []
        for i in range(N):
            ch = Channel(self, remote=self.other)
            ch.send(i)
            assert ch.recv() == i
            refs.append(weakref.ref(ch))
            del ch
        # One more exchange on another channel: the delivery that woke this coroutine (for
        # the last channel above) has returned by the time this one's message arrives.
        last = Channel(self, remote=self.other)
        last.send(-1)
        assert last.recv() == -1
        gc.collect()
        alive = sum(r() is not None for r in refs)
        assert alive == 0, f"{alive} of {N} channels are still alive after their last reference went"
        return N

    @coro
    def recv_errors(self):
        ch = Channel(self, remote=self.other)
        sent = np.arange(1000, dtype=np.float64)
        if self.me == 0:
            ch.send("host object")
            h = ch.send(HostAsDevice(sent))
            assert ch.recv() == "done"
            h.get()
            return True
        buf = np.zeros(1000)
        # 1. device buffers given, but the message holds no device array: an error that
        #    takes nothing and posts nothing; the message is still the next one.
        try:
            ch.recv(HostAsDevice(buf))
            raise AssertionError("recv with a device buffer for a host message did not raise")
        except ValueError as e:
            assert "no device array" in str(e), e
        assert ch.recv() == "host object"
        # 2. a buffer too small for the array sent: an error, not a truncated transfer.
        small = np.zeros(500)
        try:
            ch.recv(HostAsDevice(small))
            raise AssertionError("recv into a buffer too small did not raise")
        except ValueError as e:
            assert "4000 bytes" in str(e) and "8000 bytes" in str(e), e
        # 3. not a device buffer at all (after a good one): nothing posted either.
        try:
            ch.recv(HostAsDevice(buf), bytearray(8))
            raise AssertionError("recv with a host buffer did not raise")
        except TypeError as e:
            assert "buffer 1 is not a device array" in str(e), e
        ch.recv(HostAsDevice(buf))
        assert np.array_equal(buf, sent), "the array received is not the one sent"
        assert not small.any(), "the small buffer was written"
        ch.send("done")
        return True

    @coro
    def zero_copy_view(self):
        ch = Channel(self, remote=self.other)
        if self.me == 0:
            a = np.zeros(1 << 18)          # 2 MiB, writable
            view = a.view()
            view.flags.writeable = False   # a read-only view: `a` can still change it
            h = ch.send(view)
            a[:] = 1.0                     # allowed: send() has returned
            frozen = np.frombuffer(bytes(1 << 20), dtype=np.uint8)  # memory that cannot change
            h2 = ch.send(frozen)
            assert not h.ops and len(h2.ops) == 1, "zero-copy: the view was not copied or the bytes were"
            assert ch.recv() == "done"
            h.get()
            h2.get()
            return True
        x = ch.recv()
        assert x.shape == (1 << 18,) and not x.any(), "a read-only view changed after send() reached the peer"
        y = ch.recv()
        assert y.nbytes == 1 << 20 and not y.any()
        ch.send("done")
        return True


def main(args):
    case = args[1]
    peers = Array(Peer, 2)
    charm.awaitCreation(peers)
    f = [getattr(peers[i], case)(ret=True) for i in range(2)]
    print(case, [x.get() for x in f])
    print("ok")
    charm.exit()


charm.start(main)
