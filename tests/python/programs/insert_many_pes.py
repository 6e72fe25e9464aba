# ckDoneInserting after ckInsert calls made on every PE (through different proxies of one
# array), called from main or from another PE: reductions over the array then wait for
# exactly the elements inserted everywhere.
from ucharm import charm, Chare, Array, Group, Future, Reducer


class Elem(Chare):
    def __init__(self, origin):
        self.origin = origin

    def report(self, fut):
        self.contribute((1, self.thisIndex[0]), Reducer.sum, fut)


class Inserter(Chare):
    def insert(self, a, first, k):
        for i in range(first, first + k):
            a.ckInsert(i, args=[charm.myPe()])

    def done(self, a):
        a.ckDoneInserting()


def check(a, indices):
    f = Future()
    a.report(f)
    count, total = f.get()
    assert (count, total) == (len(indices), sum(indices)), ((count, total), len(indices), sum(indices))


def fill(a, g, n):
    """Every PE inserts pe + 1 elements, main 2 more; returns their indices."""
    futs, indices, first = [], [], 0
    for pe in range(n):
        futs.append(g[pe].insert(a, first, pe + 1, ret=True))
        indices += range(first, first + pe + 1)
        first += pe + 1
    for i in (first, first + 1):
        a.ckInsert(i, args=[-1])
        indices.append(i)
    for f in futs:
        f.get()
    return indices


def main(args):
    n = charm.numPes()
    g = Group(Inserter)
    charm.awaitCreation(g)
    a = Array(Elem, ndims=1)
    indices = fill(a, g, n)
    g[n - 1].done(a, ret=True).get()  # ckDoneInserting on the last PE, through its proxy
    for _ in range(3):
        check(a, indices)
    b = Array(Elem, ndims=1)
    indices = fill(b, g, n)
    b.ckDoneInserting()               # on PE 0, through main's proxy
    for _ in range(3):
        check(b, indices)
    print("ok")
    charm.exit()


charm.start(main)
