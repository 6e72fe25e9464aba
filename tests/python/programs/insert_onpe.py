"""ArrayMap subclasses built with arguments (Group(Map, args=...)), ckInsert(onPE=) with
messages, broadcasts and a reduction over the inserted elements, charm.thisProxy.exec,
@register. Prints 'ok'."""
from ucharm import charm, Chare, Group, Array, ArrayMap, Reducer, register

MARK = 0


@register
class ShiftMap(ArrayMap):
    def __init__(self, shift, width):
        self.shift, self.width = shift, width

    def procNum(self, index):
        return (index[0] // self.width + self.shift) % charm.numPes()


class Elem(Chare):
    def __init__(self, expected_pe, tag):
        assert charm.myPe() == expected_pe, (self.thisIndex, charm.myPe(), expected_pe)
        self.tag = tag
        self.got = 0

    def where(self):
        return charm.myPe()

    def hit(self, k):
        self.got += k

    def report(self, fut):
        self.contribute(self.got + self.tag, Reducer.sum, fut)


def main(args):
    n = charm.numPes()
    m = Group(ShiftMap, args=[1, 2])
    # bulk array placed by the map (constructor checks its PE against the map's rule)
    b = Array(Checked, 8, map=m)
    charm.awaitCreation(b)
    assert b.where(ret=True).get() == [((i // 2 + 1) % n) for i in range(8)]

    # dynamic insertion: onPE= places each element; messages and broadcasts find them
    d = Array(Elem, ndims=2)
    k = 0
    for i in range(3):
        for j in range(2):
            pe = (i * 2 + j + 1) % n
            d.ckInsert((i, j), args=[pe, 10 * i + j], onPE=pe)
            k += 1
    d.ckDoneInserting()
    for i in range(3):
        for j in range(2):
            assert d[i, j].where(ret=True).get() == (i * 2 + j + 1) % n
            d[i, j].hit(1)
    d.hit(5)  # a broadcast
    f = charm.Future()
    d.report(f)
    assert f.get() == 6 * 6 + sum(10 * i + j for i in range(3) for j in range(2)), "reduction"

    # charm4py's exec: the remote form of rexec
    charm.thisProxy.exec("global MARK; MARK = 7262", __name__, awaitable=True).get()
    assert all(v == 7262 for v in charm.thisProxy.eval("MARK", __name__, ret=True).get())
    print("ok")
    exit()


class Checked(Chare):
    def __init__(self):
        i = self.thisIndex[0]
        assert charm.myPe() == (i // 2 + 1) % charm.numPes(), (i, charm.myPe())

    def where(self):
        return charm.myPe()


charm.start(main)
