# A message storm: every group element sends to every element (itself included) at
# once, with small NumPy payloads, while array elements exchange over the same PEs; then
# broadcasts with ret=True in a row. Counts and checksums must come out exact.
import numpy as np

from ucharm import charm, Chare, Group, Array, Reducer, Future

PER_PAIR = 20


class Node(Chare):
    def __init__(self):
        self.got = 0
        self.checksum = 0
        self.done = None

    def start(self, done):
        self.done = done
        n = charm.numPes()
        for k in range(PER_PAIR):
            for pe in range(n):
                self.thisProxy[pe].recv(self.thisIndex, np.full(4, k, dtype=np.int64))
        self.maybe_done()

    def recv(self, src, arr):
        self.got += 1
        self.checksum += int(arr.sum()) + src
        self.maybe_done()

    def maybe_done(self):
        n = charm.numPes()
        if self.done is not None and self.got == n * PER_PAIR:
            self.contribute([self.got, self.checksum], Reducer.sum, self.done)
            self.done = None

    def echo(self, x):
        return (self.thisIndex, x)


class Cell(Chare):
    def __init__(self, count):
        self.count = count
        self.seen = 0

    def poke(self, fut, hops):
        self.seen += 1
        if hops == 0:
            fut.send(self.thisIndex[0])
        else:
            self.thisProxy[(self.thisIndex[0] * 5 + hops) % self.count].poke(fut, hops - 1)


def main(args):
    n = charm.numPes()
    g = Group(Node)
    cells = Array(Cell, 4 * n, args=[4 * n])
    charm.awaitCreation(g, cells)
    f = Future()
    chains = Future(4 * n)
    g.start(f)
    for i in range(4 * n):
        cells[i].poke(chains, 10)
    got, checksum = f.get()
    assert got == n * n * PER_PAIR, got
    per_sender = sum(4 * k for k in range(PER_PAIR))
    assert checksum == n * n * per_sender + n * PER_PAIR * sum(range(n)), checksum
    assert len(chains.get()) == 4 * n
    for k in range(10):
        assert g.echo(k, ret=True).get() == [(pe, k) for pe in range(n)]
    print("ok")
    charm.exit()


charm.start(main)
