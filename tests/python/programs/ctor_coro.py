# A constructor decorated with @coro may wait (charm4py's threaded constructors).
from ucharm import charm, Chare, Group, Array, coro


class Value(Chare):
    def get(self):
        return 65824


class Waiter(Chare):
    @coro
    def __init__(self, values):
        self.x = values[charm.myPe()].get(ret=True).get()

    def value(self):
        return self.x


def main(args):
    values = Group(Value)
    charm.awaitCreation(values)
    a = Array(Waiter, 2 * charm.numPes(), args=[values])
    charm.awaitCreation(a)
    assert a.value(ret=True).get() == [65824] * (2 * charm.numPes())
    print("ok")
    charm.exit()


charm.start(main)
