# Array(C, ndims=N) grows with ckInsert(index, args=...); element calls and broadcasts
# reach the inserted elements.
from ucharm import charm, Chare, Array, Future, Reducer


class Cell(Chare):
    def __init__(self, tag, since=0):
        self.tag = tag
        self.since = since  # the first broadcast round meant for this element

    def where(self):
        return (self.thisIndex, self.tag, charm.myPe())

    def report(self, fut, k, round=0):
        # A broadcast that has not reached a PE yet also reaches elements inserted there
        # after it was sent (as in Charm++): those skip the rounds before their own.
        if round >= self.since:
            fut.send((self.thisIndex, self.tag * k))

    def total(self, fut):
        self.contribute(self.tag, Reducer.sum, fut)

    def collect(self, fut):
        self.contribute(self.tag, Reducer.gather, fut)


def main(args):
    n = charm.numPes()
    # 2-D, elements inserted from the main function.
    a = Array(Cell, ndims=2)
    idx2 = [(i, j) for i in range(n + 1) for j in range(2)]
    for i, j in idx2:
        a.ckInsert((i, j), args=[10 * i + j])
    a.ckDoneInserting()
    # A broadcast right after the insertions reaches every element.
    f = Future(len(idx2))
    a.report(f, 2)
    got = sorted(f.get())
    assert got == sorted(((i, j), 2 * (10 * i + j)) for i, j in idx2), got
    # Reductions over an array filled by ckInsert, after ckDoneInserting (charm4py has them).
    f = Future()
    a.total(f)
    assert f.get() == sum(10 * i + j for i, j in idx2)
    f = Future()
    a.collect(f)
    assert f.get() == [10 * i + j for i, j in sorted(idx2)], "gather is ordered by index"
    for i, j in idx2:
        assert a[i, j].where(ret=True).get()[:2] == ((i, j), 10 * i + j)
    pes = {a[i, j].where(ret=True).get()[2] for i, j in idx2}
    assert all(0 <= p < n for p in pes), pes
    # 1-D, inserted with int indices, then a second broadcast after more insertions.
    b = Array(Cell, ndims=1)
    for i in range(3):
        b.ckInsert(i, args=[i])
    f = Future(3)
    b.report(f, 1)
    assert sorted(f.get()) == [((i,), i) for i in range(3)]
    for i in range(3, 3 + 2 * n):
        b.ckInsert(i, args=[i, 1])
    b.ckDoneInserting()
    f = Future(3 + 2 * n)
    b.report(f, 1, round=1)
    assert sorted(f.get()) == [((i,), i) for i in range(3 + 2 * n)]

    # 3-D.
    c = Array(Cell, ndims=3)
    c.ckInsert((1, 2, 3), args=[5])
    c.ckInsert((0, 0, n), args=[6])
    c.ckDoneInserting()
    assert c[0, 0, n].where(ret=True).get()[:2] == ((0, 0, n), 6)
    f = Future(2)
    c.report(f, 3)
    assert sorted(f.get()) == [((0, 0, n), 18), ((1, 2, 3), 15)]
    print("ok")
    charm.exit()


charm.start(main)
