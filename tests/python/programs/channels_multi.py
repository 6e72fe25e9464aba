# charm4py: a chare may open several channels to the same remote (the ends pair up in
# creation order), and a coroutine may open a channel for one exchange and drop it.
from ucharm import charm, Chare, Array, Channel, coro


class Pair(Chare):
    @coro
    def two_channels(self):
        other = self.thisProxy[1 - self.thisIndex[0]]
        a = Channel(self, remote=other)
        b = Channel(self, remote=other)
        a.send("on a")
        b.send("on b")
        return (a.recv(), b.recv())

    @coro
    def one_shot(self, k):
        ch = Channel(self, remote=self.thisProxy[1 - self.thisIndex[0]])
        ch.send(k * 10 + self.thisIndex[0])
        return ch.recv()


def main(args):
    p = Array(Pair, 2)
    assert p.two_channels(ret=True).get() == [("on a", "on b")] * 2
    for k in range(3):
        assert p.one_shot(k, ret=True).get() == [k * 10 + 1, k * 10 + 0]
    print("ok")
    charm.exit()


charm.start(main)
