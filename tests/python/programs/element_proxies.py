# Inside elements: self.thisProxy of 1-D, 2-D and 3-D arrays and of groups, indexed by
# the element's neighbours' indices; broadcasts with ret=True from an element.
from ucharm import charm, Chare, Group, Array, coro


class Cell(Chare):
    def __init__(self, shape):
        self.shape = shape

    def ident(self):
        return self.thisIndex

    @coro
    def ask_next(self):
        # The next element in index order (wrapping), through this collection's proxy.
        idx = list(self.thisIndex)
        for d in reversed(range(len(idx))):
            idx[d] += 1
            if idx[d] < self.shape[d]:
                break
            idx[d] = 0
        key = idx[0] if len(idx) == 1 else tuple(idx)
        return self.thisProxy[key].ident(ret=True).get()

    @coro
    def ask_all(self):
        return self.thisProxy.ident(ret=True).get()


class Member(Chare):
    @coro
    def ask_next(self):
        return self.thisProxy[(self.thisIndex + 1) % charm.numPes()].where(ret=True).get()

    def where(self):
        return charm.myPe()

    @coro
    def ask_all(self):
        return self.thisProxy.where(ret=True).get()


def main(args):
    n = charm.numPes()
    for shape in [(n + 1,), (2, n), (2, 1, n + 1)]:
        a = Array(Cell, shape[0] if len(shape) == 1 else shape, args=[shape])
        idx = a.ident(ret=True).get()
        nxt = a.ask_next(ret=True).get()
        assert nxt == idx[1:] + idx[:1], (shape, nxt)
        last = idx[-1][0] if len(shape) == 1 else idx[-1]
        assert a[last].ask_all(ret=True).get() == idx, shape
    g = Group(Member)
    assert g.ask_next(ret=True).get() == [(pe + 1) % n for pe in range(n)]
    assert g[n - 1].ask_all(ret=True).get() == list(range(n))
    print("ok")
    charm.exit()


charm.start(main)
