# Migrations that must fail with a clear message (argv[1] names the case).
import sys

from ucharm import charm, Chare, Array, Group, Future, coro


class E(Chare):
    def __init__(self):
        self.f = None

    def pinned(self):
        self.setMigratable(False)
        self.migrate(1)

    def bad_pe(self):
        self.migrate(charm.numPes() + 5)

    @coro
    def waiting(self):
        self.f = Future()
        self.migrate(1)
        self.f.get()  # still waiting when the move comes

    def unpicklable(self):
        self.lock = __import__("threading").Lock()
        self.migrate(1)


class G(Chare):
    def move(self):
        self.migrate(1)


def main(args):
    case = args[1]
    if case == "group":
        Group(G).move()
    else:
        a = Array(E, 1)
        charm.awaitCreation(a)
        getattr(a[0], case)()


charm.start(main)
