# The symmetric exchange: both ends send first, then receive. charm4py's Channel.send
# never waits for the receiver, so this works whatever the message size; here with
# NumPy arrays of >= 64 KiB, writable (copied) and read-only (zero-copy), in a 1-D
# ring of array elements.
import numpy as np

from ucharm import charm, Chare, Array, Channel, coro

ITERS = 3


class Node(Chare):
    def __init__(self, count, readonly):
        self.readonly = readonly
        i = self.thisIndex[0]
        self.left = Channel(self, remote=self.thisProxy[(i - 1) % count])
        self.right = Channel(self, remote=self.thisProxy[(i + 1) % count])
        self.count = count

    @coro
    def ring(self, size):
        i, n = self.thisIndex[0], self.count
        for it in range(ITERS):
            out_l = np.full(size, i * 1000 + it, dtype=np.int64)
            out_r = np.full(size, -(i * 1000 + it), dtype=np.int64)
            if self.readonly:  # zero-copy; writable arrays are copied into the message
                out_l.flags.writeable = False
                out_r.flags.writeable = False
            self.left.send(out_l)
            self.right.send(out_r)
            from_left = self.left.recv()     # what the left neighbour sent to its right
            from_right = self.right.recv()
            lft, rgt = (i - 1) % n, (i + 1) % n
            assert from_left.size == size and np.all(from_left == -(lft * 1000 + it)), (i, it)
            assert from_right.size == size and np.all(from_right == rgt * 1000 + it), (i, it)
        return True


def main(args):
    n = charm.numPes()
    count = max(3, n + 1)
    for readonly in (False, True):
        for size in (20_000, 200_000):   # 160 KB and 1.6 MB per message
            r = Array(Node, count, args=[count, readonly])
            assert r.ring(size, ret=True).get() == [True] * count
    print("ok")
    charm.exit()


charm.start(main)
