# Sections (charm4py's API): charm.split with elems= and section_func=, proxy[slices],
# charm.combine, Group(C, onPEs=...); broadcasts reach each member once and no one else,
# reductions over a section sum its members only, also while members migrate.
from ucharm import charm, Chare, Array, Group, Reducer, Future


class A(Chare):
    def __init__(self):
        self.got = []

    def hit(self, tag):
        self.got.append(tag)

    def sum_into(self, sec, fut):
        self.contribute(self.thisIndex[0], Reducer.sum, fut, section=sec)

    def hop_and_sum(self, sec, fut, rounds):
        # contributes, then migrates, for several rounds
        for r in range(rounds):
            pass
        self.contribute(self.thisIndex[0], Reducer.sum, fut, section=sec)
        self.migrate((charm.myPe() + 1) % charm.numPes())

    def tags(self):
        return self.got


class G(Chare):
    def __init__(self, log):
        self.n = 0
        self.log = log

    def ping(self):
        self.n += 1
        self.contribute(charm.myPe(), Reducer.gather, self.log)


def mod3(obj):  # section_func: module level (it is pickled, as in charm4py)
    return obj.thisIndex[0] % 3


def main(args):
    npes = charm.numPes()
    a = Array(A, 16)
    charm.awaitCreation(a)
    evens, odds = charm.split(a, 2, elems=[list(range(0, 16, 2)), list(range(1, 16, 2))])
    evens.hit("even")
    odds.hit("odd")
    sl = a[4:10:3]  # 4, 7
    sl.hit("slice")
    thirds = charm.split(a, 3, section_func=mod3)
    thirds[1].hit("mod3=1")
    both = charm.combine(sl, thirds[2])
    both.hit("combined")
    charm.waitQD()
    for i in range(16):
        tags = a[i].tags(ret=True).get()
        want = ["even" if i % 2 == 0 else "odd"]
        want += ["slice"] if i in (4, 7) else []
        want += ["mod3=1"] if i % 3 == 1 else []
        want += ["combined"] if i in (4, 7) or i % 3 == 2 else []
        assert tags == want, (i, tags, want)
    # reductions over sections
    f = Future()
    evens.sum_into(evens, f)
    assert f.get() == sum(range(0, 16, 2)), "evens"
    # members migrate between rounds: each round's sum is still complete and exact
    for r in range(5):
        f = Future()
        odds.hop_and_sum(odds, f, 1)
        assert f.get() == sum(range(1, 16, 2)), ("odds after moves", r)
    # a group constructed on some PEs only: calls and reductions reach those PEs alone
    pes = list(range(0, npes, 2))
    log = Future()
    g = Group(G, args=[log], onPEs=pes)
    charm.awaitCreation(g)
    g.ping()
    assert sorted(log.get()) == pes, log
    print("ok")
    charm.exit()


charm.start(main)
