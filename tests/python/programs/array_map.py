# ArrayMap: Array(C, dims, map=Group(MyMap)) places element `index` on
# MyMap.procNum(index); messages, broadcasts and reductions reach elements placed so;
# arrays filled by ckInsert follow the map too.
from ucharm import charm, Chare, Group, Array, ArrayMap, Reducer, Future


class Reverse(ArrayMap):
    def procNum(self, index):
        return (charm.numPes() - 1 - index[0]) % charm.numPes()


class ByColumn(ArrayMap):
    def procNum(self, index):
        return index[1] % charm.numPes()


class Cell(Chare):
    def where(self):
        return (self.thisIndex, charm.myPe())

    def total(self, fut):
        self.contribute(charm.myPe(), Reducer.sum, fut)


def main(args):
    n = charm.numPes()
    a = Array(Cell, 2 * n + 1, map=Group(Reverse))
    charm.awaitCreation(a)
    want = [((i,), (n - 1 - i) % n) for i in range(2 * n + 1)]
    assert a.where(ret=True).get() == want
    assert a[2 * n].where(ret=True).get() == want[2 * n]
    f = Future()
    a.total(f)
    assert f.get() == sum(pe for _, pe in want)

    b = Array(Cell, (2, n + 1), map=Group(ByColumn))
    assert b.where(ret=True).get() == [((i, j), j % n) for i in range(2) for j in range(n + 1)]

    c = Array(Cell, ndims=1, map=Group(Reverse))
    for i in range(n + 2):
        c.ckInsert(i)
    c.ckDoneInserting()
    for i in range(n + 2):
        assert c[i].where(ret=True).get() == ((i,), (n - 1 - i) % n)
    print("ok")
    charm.exit()


charm.start(main)
