# charm4py's readonlies: values set on PE 0 in main before it first waits are on every PE
# before any chare is built there; values set later reach a PE before the next message or
# broadcast PE 0 sends (also when the broadcast tree is slowed by a busy PE).
import time

from ucharm import charm, Chare, Group, Future, readonlies as ro


class G(Chare):
    def __init__(self):
        self.seen_at_start = (ro.size, ro.name)

    def start_values(self):
        return self.seen_at_start

    def spin(self, seconds):
        t = time.time()
        while time.time() - t < seconds:
            pass

    def check(self, fut):
        fut.send((charm.myPe(), getattr(ro, "later", None)))

    def check_bcast(self):
        return getattr(ro, "later2", None)


def main(args):
    ro.size = 17
    ro.name = "seventeen"
    g = Group(G)
    charm.awaitCreation(g)
    assert g.start_values(ret=True).get() == [(17, "seventeen")] * charm.numPes()
    n = charm.numPes()
    if n > 1:
        g[1].spin(1.0)  # PE 1 forwards broadcasts late
    ro.later = 42
    futs = []
    for pe in range(n):
        f = Future()
        g[pe].check(f)
        futs.append(f)
    got = [f.get() for f in futs]
    assert got == [(pe, 42) for pe in range(n)], got
    ro.later2 = "b"
    assert g.check_bcast(ret=True).get() == ["b"] * n
    print("ok")
    charm.exit()


charm.start(main)
