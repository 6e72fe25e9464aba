# More of charm4py's section API: slicing a group (g[::2]) and an array filled by ckInsert
# (explicit bounds), allreduce over a section while the whole group does its own,
# a section method as a reduction target (the result reaches every member), the section
# as contribute's 4th argument, `issec`/`section`, and charm.combine of a group and an
# array (calls, ret=True, reductions, and split(section_func=) of such a section).
from ucharm import charm, Chare, Array, Group, Reducer, Future, coro


class M(Chare):
    def __init__(self):
        self.seen = []
        self.sec = None

    def where(self):
        return self.thisIndex

    def tag(self, t):
        self.seen.append(t)

    def tags(self):
        return self.seen

    @coro
    def sums(self, rounds, sec, done):
        # allreduce over `sec` (None: the collection), `rounds` times; results in order
        for r in range(rounds):
            got = self.allreduce(r + 1, Reducer.sum, section=sec).get()
            n = len(sec) if sec is not None else charm.numPes()
            assert got == n * (r + 1), (self.thisIndex, r, got)
        if sec is None and self.thisIndex == 0 or sec is not None and self.thisIndex == min(sec._members):
            done()

    def to_members(self, sec):
        # positional section argument; the result is sent to every member's got_sum
        self.contribute(1, Reducer.sum, sec.got_sum, sec)

    def got_sum(self, value):
        self.seen.append(("sum", value))

    def join(self, sec, fut):
        self.contribute(1, Reducer.sum, fut, sec)


def kind_of(obj):  # section_func over a combined section: groups' members in 0, arrays' in 1
    return 0 if isinstance(obj.thisIndex, int) else 1


def main(args):
    npes = charm.numPes()
    g = Group(M)
    charm.awaitCreation(g)
    assert not g.issec and g[0].issec is False and not hasattr(g, "section")
    evens = g[::2]
    assert evens.issec and evens.section[1] == evens._sid and evens.section[0] == charm.myPe()
    assert evens.where(ret=True).get() == list(range(0, npes, 2))
    if npes > 1:
        assert g[1:].where(ret=True).get() == list(range(1, npes))
    # concurrent allreduces: the whole group and the even PEs (even PEs are in both)
    f = Future(2)
    g.sums(20, None, f)
    evens.sums(20, evens, f)
    f.get()
    # a section method as the target of a reduction over the section
    evens.to_members(evens)
    charm.waitQD()
    for pe in range(npes):
        want = [("sum", len(evens))] if pe % 2 == 0 else []
        assert g[pe].tags(ret=True).get() == want, (pe, g[pe].tags(ret=True).get())
    # an array filled by ckInsert, sliced with explicit bounds
    a = Array(M, ndims=1)
    for i in range(0, 12):
        a.ckInsert(i)
    a.ckDoneInserting()
    s = a[2:9:3]  # 2, 5, 8
    assert s.where(ret=True).get() == [(2,), (5,), (8,)]
    # a group and an array in one section
    b = Array(M, 5)
    charm.awaitCreation(b)
    both = charm.combine(g[0:1], b[1:4])
    assert both.issec and len(both) == 4
    assert both.where(ret=True).get() == [0, (1,), (2,), (3,)]
    fut = Future()
    both.join(both, fut)
    assert fut.get() == 4
    part_g, part_a = charm.split(both, 2, kind_of)
    assert part_g.where(ret=True).get() == [0]
    assert part_a.where(ret=True).get() == [(1,), (2,), (3,)]
    print("ok")
    charm.exit()


charm.start(main)
