# Reductions over an array filled by ckInsert, once ckDoneInserting() was called
# (charm4py supports them).
from ucharm import charm, Chare, Array, Future, Reducer


class Cell(Chare):
    def __init__(self, tag):
        self.tag = tag

    def total(self, fut):
        self.contribute(self.tag, Reducer.sum, fut)

    def collect(self, fut):
        self.contribute(self.tag, Reducer.gather, fut)


def main(args):
    n = charm.numPes()
    a = Array(Cell, ndims=2)
    idx2 = [(i, j) for i in range(n + 1) for j in range(2)]
    for i, j in idx2:
        a.ckInsert((i, j), args=[10 * i + j])
    a.ckDoneInserting()
    f = Future()
    a.total(f)
    assert f.get() == sum(10 * i + j for i, j in idx2)
    f = Future()
    a.collect(f)
    assert f.get() == [10 * i + j for i, j in sorted(idx2)], "gather is ordered by index"
    print("ok")
    charm.exit()


charm.start(main)
