# charm.start(Main) with a main chare class: Main(args) is created on PE 0.
import sys

from ucharm import charm, Chare, Group


class Hello(Chare):
    def __init__(self, main):
        self.main = main

    def hello(self, word):
        assert charm.myPe() == self.thisIndex
        self.main.count(self.thisIndex, word)


class Main(Chare):
    def __init__(self, args):
        assert args == sys.argv, (args, sys.argv)
        assert args[1:] == ["beta"], args
        assert charm.myPe() == 0
        print("pes", charm.numPes())
        self.seen = []
        self.group = Group(Hello, args=[self.thisProxy])
        self.group.hello(args[1])

    def count(self, pe, word):
        assert word == "beta"
        self.seen.append(pe)
        if len(self.seen) == charm.numPes():
            assert sorted(self.seen) == list(range(charm.numPes())), self.seen
            # An empty reduction over the group back to this chare ends it.
            self.group_done = False
            Group(Contrib, args=[self.thisProxy])

    def done(self):
        print("ok")
        charm.exit()


class Contrib(Chare):
    def __init__(self, main):
        self.contribute(None, None, main.done)


charm.start(Main)
