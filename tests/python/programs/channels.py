# Channels between array elements: in-order streams of host objects, several objects per
# send, NumPy arrays small and large (read-only ones >= 64 KiB go zero-copy), a 1-D ring exchanging
# with both neighbours (small arrays).
import numpy as np

from ucharm import charm, Chare, Array, Channel, coro

ITERS = 4


class Peer(Chare):
    def __init__(self, count):
        self.count = count
        i = self.thisIndex[0]
        self.partner = (i + count // 2) % count   # on another PE when there are several

    @coro
    def stream(self, k):
        # Many sends, then many receives: everything arrives in order.
        ch = Channel(self, remote=self.thisProxy[self.partner])
        i = self.thisIndex[0]
        for m in range(k):
            ch.send({"from": i, "m": m, "pad": "x" * (m % 7)})
        got = [ch.recv() for _ in range(k)]
        assert got == [{"from": self.partner, "m": m, "pad": "x" * (m % 7)} for m in range(k)], got[:3]
        # Several objects in one send come back as a tuple; one object alone as itself.
        ch.send(1, "two", [3.0], None)
        a, b, c, d = ch.recv()
        assert (a, b, c, d) == (1, "two", [3.0], None)
        ch.send((5, 6))
        assert ch.recv() == (5, 6)
        return True

    @coro
    def arrays(self):
        ch = Channel(self, remote=self.thisProxy[self.partner], port=1)
        me, other = self.thisIndex[0], self.partner
        small = np.arange(100, dtype=np.float64) + me
        large = np.arange(300_000, dtype=np.int32) * (me + 1)        # 1.2 MB: zero-copy
        edge = np.full(64 * 1024, me, dtype=np.uint8)                 # exactly 64 KiB
        just_below = np.full(64 * 1024 - 1, me + 1, dtype=np.uint8)
        two_d = np.arange(128 * 130, dtype=np.float64).reshape(128, 130) - me
        # One side sends first, the other receives first (the symmetric exchange, both
        # sending first, is channels_exchange.py).
        if me < other:
            self.send_arrays(ch, small, large, edge, just_below, two_d)
            got = self.recv_arrays(ch)
        else:
            got = self.recv_arrays(ch)
            self.send_arrays(ch, small, large, edge, just_below, two_d)
        r1, r2, s, l, t, e, jb, td, st, ro, by, ro10 = got
        assert ro.dtype == np.int32 and np.array_equal(ro, np.arange(300_000, dtype=np.int32) * (other + 1))
        assert by == bytes(range(256)) * 512
        assert np.array_equal(ro10, ro[:10])
        assert np.array_equal(r1, np.arange(100, dtype=np.float64) + other)
        assert r2.dtype == np.int32 and np.array_equal(r2, np.arange(300_000, dtype=np.int32) * (other + 1))
        assert np.array_equal(s, r1) and np.array_equal(l, r2) and t == "text"
        assert e.size == 64 * 1024 and np.all(e == other)
        assert jb.size == 64 * 1024 - 1 and np.all(jb == other + 1)
        assert td.shape == (128, 130) and np.array_equal(td, np.arange(128 * 130.0).reshape(128, 130) - other)
        assert np.array_equal(st, (np.arange(300_000, dtype=np.int32) * (other + 1))[::2])
        # Received arrays are writable.
        r2 += 1
        return True

    @staticmethod
    def send_arrays(ch, small, large, edge, just_below, two_d):
        ch.send(small)
        ch.send(large)
        ch.send(small, large, "text", edge, just_below, two_d)
        ch.send(large[::2])                                         # not contiguous
        # Read-only buffers of >= 64 KiB go zero-copy (writable ones are copied): a
        # read-only array and bytes; the handle's get() says when they may be reused.
        ro = large.copy()
        ro.flags.writeable = False
        h = ch.send(ro, bytes(range(256)) * 512, ro[:10])
        h.get()

    @staticmethod
    def recv_arrays(ch):
        r1 = ch.recv()
        r2 = ch.recv()
        s, l, t, e, jb, td = ch.recv()
        st = ch.recv()
        ro, by, ro10 = ch.recv()
        return r1, r2, s, l, t, e, jb, td, st, ro, by, ro10

    @coro
    def ring(self, size):
        i, n = self.thisIndex[0], self.count
        # Both ends of a channel use the same port (here the default one).
        left = Channel(self, remote=self.thisProxy[(i - 1) % n])
        right = Channel(self, remote=self.thisProxy[(i + 1) % n]) if n > 2 else left
        for it in range(ITERS):
            payload = np.full(size, i * 100 + it, dtype=np.int64)
            left.send(("to-left", i, it), payload)
            right.send(("to-right", i, it), payload)
            if right is left:
                got = [left.recv(), left.recv()]
            else:
                got = [left.recv(), right.recv()]
            tags = sorted(t for t, _ in got)
            want = sorted([("to-right", (i - 1) % n, it), ("to-left", (i + 1) % n, it)])
            assert tags == want, (i, it, tags, want)
            for (kind, j, _), arr in got:
                assert arr.size == size and np.all(arr == j * 100 + it), (i, it, j)
        return True


def main(args):
    n = charm.numPes()
    count = 2 * n
    a = Array(Peer, count, args=[count])
    charm.awaitCreation(a)
    assert a.stream(40, ret=True).get() == [True] * count
    assert a.arrays(ret=True).get() == [True] * count
    # Small arrays (inside the messages) both ways in a ring; large ones: channels_exchange.py.
    r = Array(Peer, count + 1, args=[count + 1])
    assert r.ring(8, ret=True).get() == [True] * (count + 1)
    print("ok")
    charm.exit()


charm.start(main)
