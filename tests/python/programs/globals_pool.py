# charm.thisProxy.updateGlobals(...), charm.pool.map, charm.awaitCreation.
from ucharm import charm, Chare, Group, Array

SCALE = 1


class Reader(Chare):
    def __init__(self):
        self.ready = True

    def read(self, name):
        return globals().get(name, "missing")

    def is_ready(self):
        return self.ready


def square(x):
    return x * x * SCALE


def where(x):
    return (x, charm.myPe())


def main(args):
    n = charm.numPes()
    g = Group(Reader)
    a = Array(Reader, (n, 2))
    charm.awaitCreation(g, a)
    # Every element exists once awaitCreation returns: element calls reach them all.
    assert all(g[pe].is_ready(ret=True).get() for pe in range(n))

    assert g.read("G", ret=True).get() == ["missing"] * n
    charm.thisProxy.updateGlobals({"G": {"k": 42}, "SCALE": 3}, awaitable=True).get()
    assert g.read("G", ret=True).get() == [{"k": 42}] * n
    assert a.read("SCALE", ret=True).get() == [3] * (2 * n)
    # A later update replaces the value everywhere.
    charm.thisProxy.updateGlobals({"G": "second"}, awaitable=True).get()
    assert g.read("G", ret=True).get() == ["second"] * n

    # pool.map uses the updated global SCALE on every PE.
    assert charm.pool.map(square, range(20)) == [3 * x * x for x in range(20)]
    assert charm.pool.map(square, range(17), chunksize=4) == [3 * x * x for x in range(17)]
    assert charm.pool.map(square, []) == []
    placed = charm.pool.map(where, range(4 * n))
    assert [x for x, _ in placed] == list(range(4 * n))
    if n > 2:  # PE 0 runs the main function; the pool's workers are the others
        assert len({pe for _, pe in placed}) > 1, placed
    print("ok")
    charm.exit()


charm.start(main)
