# charm.iwait over channels (charm4py's channel example): yields each channel once it
# has a message to receive.
from ucharm import charm, Chare, Array, Channel, coro


class A(Chare):
    def __init__(self, count):
        i = self.thisIndex[0]
        self.channels = [Channel(self, remote=self.thisProxy[(i + 1) % count]),
                         Channel(self, remote=self.thisProxy[(i - 1) % count])]

    @coro
    def work(self, iters):
        i = self.thisIndex[0]
        total = 0
        for it in range(iters):
            for ch in self.channels:
                ch.send(i, it)
            seen = 0
            for ch in charm.iwait(self.channels):
                j, jt = ch.recv()
                assert jt == it
                total += j
                seen += 1
            assert seen == 2
        return total


def main(args):
    count = max(3, 2 * charm.numPes())
    a = Array(A, count, args=[count])
    got = a.work(3, ret=True).get()
    assert got == [3 * (((i + 1) % count) + ((i - 1) % count)) for i in range(count)], got
    print("ok")
    charm.exit()


charm.start(main)
