# charm4py: "the application entry point is always threaded": a main chare's constructor
# may wait on futures.
from ucharm import charm, Chare, Group


class Worker(Chare):
    def square(self, x):
        return x * x


class Main(Chare):
    def __init__(self, args):
        g = Group(Worker)
        vals = g.square(3, ret=True).get()
        assert vals == [9] * charm.numPes(), vals
        assert g[charm.numPes() - 1].square(5, ret=True).get() == 25
        print("ok")
        charm.exit()


charm.start(Main)
