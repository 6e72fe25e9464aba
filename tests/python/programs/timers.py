"""charm.scheduleCallableAfter (functions, Futures, proxy methods; deadline order) and
charm.sleep in the main function, in @coro and @threaded entry methods, while the PE
keeps running other work. Prints 'ok'."""
from ucharm import charm, coro, threaded, Chare, Group, Future

fired = []


def note(tag, t0, secs):
    assert charm.wallTime() - t0 >= secs - 1e-3, f"{tag} fired early"
    fired.append(tag)


class Worker(Chare):
    def __init__(self):
        self.pings = 0

    def ping(self):
        self.pings += 1

    def count(self):
        return self.pings

    @coro
    def nap(self, secs, peer):
        # Pings sent to this PE while it sleeps run meanwhile.
        before = self.pings
        peer.pinger(self.thisProxy[charm.myPe()], 5, awaitable=True)
        t0 = charm.wallTime()
        charm.sleep(secs)
        assert charm.wallTime() - t0 >= secs - 1e-3
        return self.pings - before

    @threaded
    def threaded_nap(self, secs):
        t0 = charm.wallTime()
        charm.sleep(secs)
        return charm.wallTime() - t0 >= secs - 1e-3

    def pinger(self, target, k):
        for _ in range(k):
            target.ping()

    def remote_timer(self, secs, fut):
        # A timer on another PE that sends to a future of PE 0.
        charm.scheduleCallableAfter(fut, secs, [charm.myPe()])

    def plain_sleep(self, secs):
        charm.sleep(secs)  # not a coroutine: time.sleep
        return True


def main(args):
    t0 = charm.wallTime()
    for tag, secs in (("c", 0.15), ("a", 0.05), ("b", 0.1), ("now", 0)):
        charm.scheduleCallableAfter(note, secs, [tag, t0, secs])
    charm.sleep(0.3)
    assert fired == ["now", "a", "b", "c"], fired

    f = Future()
    charm.scheduleCallableAfter(f, 0.05, ["value"])  # a Future as the callable
    assert f.get() == "value"

    g = Group(Worker)
    charm.awaitCreation(g)
    last = charm.numPes() - 1
    charm.scheduleCallableAfter(g[last].ping, 0.02)  # a proxy method
    charm.sleep(0.1)
    assert g[last].count(ret=True).get() >= 1

    # a coroutine sleeping on PE `last` while pings for it arrive from PE 0
    got = g[last].nap(0.2, g[0], ret=True).get()
    assert got == 5, got
    assert all(g.threaded_nap(0.05, ret=True).get())
    assert g[last].plain_sleep(0.01, ret=True).get()

    futs = [Future() for _ in range(charm.numPes())]
    for pe in range(charm.numPes()):
        g[pe].remote_timer(0.02 * pe, futs[pe])
    assert [fu.get() for fu in futs] == list(range(charm.numPes()))

    try:
        charm.scheduleCallableAfter(42, 0.1)
        raise AssertionError("a non-callable was accepted")
    except TypeError:
        pass
    print("ok")
    exit()


charm.start(main)
