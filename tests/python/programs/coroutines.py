# @coro entry methods wait on futures, on other coroutines' results and on Chare.wait;
# several coroutines of one chare wait at the same time.
from ucharm import charm, Chare, Group, Array, Future, coro


class Leaf(Chare):
    def value(self, x):
        return x + 1


class Middle(Chare):
    def __init__(self, leaves):
        self.leaves = leaves
        self.tokens = {}
        self.count = 0

    @coro
    def chain(self, x):
        # Waits on a plain entry method of another PE's element.
        n = charm.numPes()
        v = self.leaves[(self.thisIndex[0] + 1) % n].value(x, ret=True).get()
        return v * 10

    @coro
    def sum_of_chains(self, xs):
        # Waits on other coroutines (this collection's), several at once.
        futs = [self.thisProxy[i % len(xs)].chain(x, ret=True) for i, x in enumerate(xs)]
        return sum(f.get() for f in futs)

    @coro
    def wait_token(self, key):
        # Parks a future; give_token (a plain entry method) fills it.
        f = Future()
        self.tokens[key] = f
        return ("got", key, f.get())

    def give_token(self, key, value):
        self.tokens.pop(key).send(value)

    def incr(self):
        self.count += 1

    @coro
    def wait_count(self, target):
        self.wait(f"self.count >= {target}")
        return self.count


def main(args):
    n = charm.numPes()
    leaves = Group(Leaf)
    mids = Array(Middle, 2 * n, args=[leaves])
    charm.awaitCreation(leaves, mids)
    last = 2 * n - 1
    assert mids[last].chain(4, ret=True).get() == 50
    xs = list(range(2 * n))
    assert mids[0].sum_of_chains(xs, ret=True).get() == sum((x + 1) * 10 for x in xs)
    assert mids.chain(1, ret=True).get() == [20] * (2 * n)

    # Two coroutines of one element wait at once; they are resumed in any order.
    f1 = mids[last].wait_token("a", ret=True)
    f2 = mids[last].wait_token("b", ret=True)
    mids[last].give_token("b", 2)
    assert f2.get() == ("got", "b", 2)
    mids[last].give_token("a", 1)
    assert f1.get() == ("got", "a", 1)

    # Chare.wait(condition) in a coroutine.
    fw = mids[1 % (2 * n)].wait_count(3, ret=True)
    for _ in range(3):
        mids[1 % (2 * n)].incr()
    assert fw.get() == 3

    # The main function itself waits on many coroutines at once.
    futs = [mids[i].chain(i, ret=True) for i in range(2 * n)]
    assert [f.get() for f in futs] == [(i + 1) * 10 for i in range(2 * n)]
    print("ok")
    charm.exit()


charm.start(main)
