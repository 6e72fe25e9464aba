# Chare(C, onPE=, args=), Group(C, args=), Array(C, n), Array(C, (x, y)),
# Array(C, (x, y, z)); element calls, broadcasts, ret=True, awaitable=True, awaitCreation.
import itertools

from ucharm import charm, Chare, Group, Array


class Single(Chare):
    def __init__(self, a, b):
        self.a, self.b = a, b
        self.calls = 0

    def info(self):
        return (charm.myPe(), self.a, self.b, self.thisIndex)

    def bump(self, k=1):
        self.calls += k

    def calls_so_far(self):
        return self.calls


class Elem(Chare):
    def __init__(self, base=0):
        self.base = base
        self.hits = []

    def info(self):
        return (self.thisIndex, charm.myPe(), self.base)

    def add(self, x, scale=1):
        return self.base + x * scale

    def hit(self, tag):
        self.hits.append(tag)

    def hits_so_far(self):
        return list(self.hits)


def main(args):
    n = charm.numPes()
    last = n - 1

    # Singleton chares, placed and anywhere.
    s = Chare(Single, onPE=last, args=[1, "two"])
    charm.awaitCreation(s)
    assert s.info(ret=True).get() == (last, 1, "two", (0,))  # a singleton is a one-element array (charm4py)
    anywhere = Chare(Single, args=[3, 4])
    pe, a, b, _ = anywhere.info(ret=True).get()
    assert (a, b) == (3, 4) and 0 <= pe < n
    for _ in range(10):
        s.bump()
    s.bump(k=5)
    assert s.calls_so_far(ret=True).get() == 15  # calls from one sender arrive in order
    f = s.bump(awaitable=True)
    f.get()
    assert s.calls_so_far(ret=True).get() == 16

    # Groups: one element per PE, thisIndex == its PE.
    g = Group(Elem, args=[100])
    charm.awaitCreation(g)
    assert g.info(ret=True).get() == [(pe, pe, 100) for pe in range(n)]
    assert g[last].add(2, scale=3, ret=True).get() == 106
    g.hit("x")
    g.hit("y")
    g.hit("z", awaitable=True).get()  # every element has run hit("z")
    assert g.hits_so_far(ret=True).get() == [["x", "y", "z"]] * n

    # Arrays of 1, 2 and 3 dimensions; broadcasts with ret=True answer in index order.
    for shape in [(2 * n + 1,), (3, 2), (2, 3, 2)]:
        dims = shape[0] if len(shape) == 1 else shape
        a = Array(Elem, dims, args=[7])
        charm.awaitCreation(a)
        indices = list(itertools.product(*[range(d) for d in shape]))
        infos = a.info(ret=True).get()
        assert [i for i, _, _ in infos] == indices, infos
        assert all(0 <= p < n and b == 7 for _, p, b in infos), infos
        if n > 1 and len(indices) >= n:
            assert len({p for _, p, _ in infos}) > 1, f"every element of {shape} is on one PE: {infos}"
        for idx in indices:
            key = idx[0] if len(idx) == 1 else idx
            assert a[key].add(1, ret=True).get() == 8
            a[key].hit(idx)
        assert a.add(2, scale=2, ret=True).get() == [11] * len(indices)
        a.hit("all", awaitable=True).get()
        assert a.hits_so_far(ret=True).get() == [[idx, "all"] for idx in indices]

    # Futures of several calls at once.
    futs = [g[pe].add(pe, ret=True) for pe in range(n)]
    assert [f.get() for f in futs] == [100 + pe for pe in range(n)]
    print("ok")
    charm.exit()


charm.start(main)
