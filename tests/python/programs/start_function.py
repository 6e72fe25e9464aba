# charm.start(main) with a main function: main gets sys.argv, runs on PE 0 as a coroutine.
import sys

from ucharm import charm, Chare, Group


class Where(Chare):
    def __init__(self, tag):
        self.tag = tag

    def where(self):
        return (charm.myPe(), charm.numPes(), self.thisIndex, self.tag)


def main(args):
    assert args == sys.argv, (args, sys.argv)
    assert args[1:] == ["alpha", "42"], args
    assert charm.myPe() == 0
    n = charm.numPes()
    print("pes", n)
    g = Group(Where, args=["t"])
    got = g.where(ret=True).get()
    assert got == [(pe, n, pe, "t") for pe in range(n)], got
    # Element calls to each group member.
    for pe in range(n):
        assert g[pe].where(ret=True).get() == (pe, n, pe, "t")
    print("ok")
    charm.exit()


charm.start(main)
