# Future(), Future(n), charm.createFuture, values sent from other PEs (f.send(v) and
# f(v)), futures passed through several hops, charm.iwait.
from ucharm import charm, Chare, Group, Array, Future


class Sender(Chare):
    def send_to(self, fut, value):
        fut.send((charm.myPe(), value))

    def call_to(self, fut, value):
        fut(value)  # a future is also callable

    def relay(self, fut, others, value):
        # Pass the future on: the last element in the list fills it.
        if others:
            self.thisProxy[others[0]].relay(fut, others[1:], value + [charm.myPe()])
        else:
            fut.send(value + [charm.myPe()])

    def send_many(self, futs, base):
        for k, f in enumerate(futs):
            f.send(base + k)

    def nothing(self, fut):
        fut.send()


def main(args):
    n = charm.numPes()
    g = Group(Sender)
    last = n - 1

    f = Future()
    g[last].send_to(f, "hello")
    assert f.get() == (last, "hello")
    assert f.get() == (last, "hello")  # get() may be called again

    f = charm.createFuture()
    g[last].call_to(f, {"k": [1, 2]})
    assert f.get() == {"k": [1, 2]}

    f = Future()
    g[last].nothing(f)
    assert f.get() is None

    # Future(n): n values, get() gives them as a list.
    f = Future(n)
    g.send_to(f, 7)
    vals = f.get()
    if n == 1:
        vals = [vals]  # Future(1) is a plain future: get() gives the value itself
    assert isinstance(vals, list) and len(vals) == n
    assert sorted(vals) == [(pe, 7) for pe in range(n)], vals
    f = charm.createFuture(3)
    for v in (1, 2, 3):
        g[v % n].call_to(f, v)
    assert sorted(f.get()) == [1, 2, 3]

    # Through every PE in turn.
    f = Future()
    g[0].relay(f, list(range(1, n)) + [0], [])
    assert f.get() == list(range(n)) + [0]

    # Many futures at once, filled from another PE, read with charm.iwait as they come.
    futs = [Future() for _ in range(12)]
    g[last].send_many(futs, 100)
    seen = []
    for fut in charm.iwait(futs):
        assert fut.ready() if hasattr(fut, "ready") else True
        seen.append(fut.get())
    assert sorted(seen) == list(range(100, 112)), seen
    # iwait over futures filled by different PEs, some already ready.
    a = Array(Sender, 3 * n)
    futs = [Future() for _ in range(3 * n)]
    for i in range(3 * n):
        a[i].call_to(futs[i], i)
    futs[0].get()
    got = [fut.get() for fut in charm.iwait(futs)]
    assert sorted(got) == list(range(3 * n))
    assert got[0] == 0, "a future that is already ready comes first"
    print("ok")
    charm.exit()


charm.start(main)
