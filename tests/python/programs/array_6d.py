# Arrays of 4 to 6 dimensions: creation, element calls by index, broadcast, reduction,
# a slice section, and migration of an element with a 6-D index.
from ucharm import charm, Chare, Array, Reducer, Future


class E(Chare):
    def __init__(self):
        self.hits = 0

    def hit(self):
        self.hits += 1

    def idx(self):
        return self.thisIndex

    def total(self, f):
        self.contribute(self.hits, Reducer.sum, f)

    def move(self):
        self.migrate((charm.myPe() + 1) % charm.numPes())


def main(args):
    for shape in [(2, 2, 1, 2), (1, 2, 2, 1, 2), (2, 1, 2, 1, 2, 2)]:
        a = Array(E, shape)
        charm.awaitCreation(a)
        n = 1
        for d in shape:
            n *= d
        last = tuple(d - 1 for d in shape)
        assert a[last].idx(ret=True).get() == last
        a.hit()
        a[last].hit()
        a[last].move()
        a[last].hit()
        sec = a[(slice(0, 1),) + (slice(None),) * (len(shape) - 1)]  # first plane
        sec.hit()
        charm.waitQD()
        f = Future()
        a.total(f)
        assert f.get() == n + 2 + len(sec), (shape, f)
    print("ok")
    charm.exit()


charm.start(main)
