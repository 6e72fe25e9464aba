# charm.waitQD(): returns once no message is in flight anywhere, i.e. after every hop of
# message chains that nobody waits for.
from ucharm import charm, Chare, Array

HOPS = 60


class Hopper(Chare):
    def __init__(self, count):
        self.count = count
        self.seen = 0

    def hop(self, left, salt):
        self.seen += 1
        if left > 0:
            nxt = (self.thisIndex[0] * 7 + salt + left) % self.count
            self.thisProxy[nxt].hop(left - 1, salt)

    def seen_so_far(self):
        return self.seen


def main(args):
    n = charm.numPes()
    count = 3 * n + 1
    a = Array(Hopper, count, args=[count])
    charm.awaitCreation(a)
    total = 0
    for rnd in range(3):
        for chain in range(4):
            a[chain % count].hop(HOPS, chain + rnd)
        charm.waitQD()
        total += 4 * (HOPS + 1)
        seen = sum(a.seen_so_far(ret=True).get())
        assert seen == total, (rnd, seen, total)
    charm.waitQD()  # already quiet: returns too
    print("ok")
    charm.exit()


charm.start(main)
