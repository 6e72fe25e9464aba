# charm4py's `wait` module (`from ucharm import wait`, parse_cond_str and the three kinds
# of @when condition) and a chare's _numthreads (its coroutine entry methods running or
# waiting), read inside and outside coroutines, with coroutines waiting on several PEs.
import ucharm
from ucharm import charm, Chare, Group, Future, coro, wait

LIMIT = 3


class Worker(Chare):
    def __init__(self):
        self.held = []
        self.x, self.y = 1, 2

    @coro
    def block(self, started):
        f = Future()
        self.held.append(f)
        started.send(self._numthreads)  # this coroutine counts itself
        return f.get() + self._numthreads

    def count(self):
        return self._numthreads  # a plain entry method is not a thread

    @coro
    def count_coro(self):
        return self._numthreads

    def release(self, v):
        f = self.held.pop(0)
        f.send(v)

    def conditions(self):
        kinds = {}
        for cond, args in (("self.x == x", {"x": 0}), ("y == self.y", {"x": 0, "y": 1}),
                           ("self.x < x + y", {"x": 0, "y": 1}), ("self.x + self.y > LIMIT", {"x": 0})):
            c = wait.parse_cond_str(cond, __name__, args)
            kinds[cond] = (type(c).__name__, c.evaluateWhen(self, (1, 2)))
        return kinds


def main(args):
    assert ucharm.wait is wait and "wait" in ucharm.__all__
    n = charm.numPes()
    g = Group(Worker)
    charm.awaitCreation(g)
    for pe in range(n):
        w = g[pe]
        assert w.count(ret=True).get() == 0
        assert w.count_coro(ret=True).get() == 1
        s1, s2 = Future(), Future()
        r1 = w.block(s1, ret=True)
        assert s1.get() == 1
        r2 = w.block(s2, ret=True)
        assert s2.get() == 2
        assert w.count(ret=True).get() == 2   # both wait
        assert w.count_coro(ret=True).get() == 3
        w.release(10)
        assert r1.get() == 10 + 2  # the other one still waits
        w.release(20)
        assert r2.get() == 20 + 1
        assert w.count(ret=True).get() == 0
    kinds = g[n - 1].conditions(ret=True).get()
    assert kinds == {"self.x == x": ("MsgTagCond", True), "y == self.y": ("MsgTagCond", True),
                     "self.x < x + y": ("ChareStateMsgCond", True),
                     "self.x + self.y > LIMIT": ("ChareStateCond", False)}, kinds
    print("ok")
    charm.exit()


charm.start(main)
