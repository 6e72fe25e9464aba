# Plain proxy calls and Channel messages whose values take the fast wire format (None,
# bool, 64-bit int, float, bytes, str, tuples, lists and dicts of them) and those that
# fall back to pickle (big ints, subclasses, sets, NumPy arrays, keywords, lone surrogates,
# deep nesting, many arguments, a list met twice or containing itself, more than 32
# lists): every value arrives with its exact type and value, in order, and a list sent
# twice in one call arrives as one list.
# Also: a method redefined on the class after calls were cached runs in its new form; a
# @coro method and a @when method called with fast-format arguments; a call of a method
# that a subclass overrides goes to the subclass's.
import enum
import math
import sys

import numpy as np

from ucharm import charm, Chare, Array, Group, Channel, Future, coro, when


class Color(enum.IntEnum):
    RED = 1


class MyBytes(bytes):
    pass


def deep(n):
    t = ()
    for _ in range(n):
        t = (t,)
    return t


def samples():
    return [
        None, True, False, 0, 1, -1, 255, 256, 2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**200,
        0.0, -0.0, 1.5, float("inf"), float("-inf"), float("nan"), 1e-310,
        b"", b"\0", b"x" * 100_000, bytes(range(256)),
        "", "ascii", "h\u00e9llo \u2713 \U0001f600", "\ud800",  # the last: a lone surrogate (pickled)
        (), (1,), (1, (2.5, (b"3", ("4", (None, True))))), deep(7), deep(8), deep(30),
        Color.RED, MyBytes(b"sub"), [1, 2], {"a": 1}, {1, 2}, np.arange(5), np.float64(2.5),
        bytearray(b"ba"), complex(1, 2),
        [], {}, [b"x" * 8], {"k": [1, (2, "3")], 4: None, (5, 6): {"n": [None]}}, [[i] for i in range(40)],
        [[[[[[[[1]]]]]]]], [[[[[[[[[1]]]]]]]]], {"set": {1}}, [np.arange(3)],
    ]


def same(a, b):
    """Exactly the same value and type (recursively; NaN equals NaN, -0.0 differs from 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and (a == b).all()
    return a == b


class Receiver(Chare):
    def __init__(self):
        self.n = 0
        self.bad = []
        self.log = []
        self.turn = 0

    def one(self, i, v):
        self.n += 1
        if not same(v, samples()[i]):
            self.bad.append((i, repr(v)[:60], repr(samples()[i])[:60]))

    def many(self, *args):
        self.n += 1
        if not same(args, tuple(samples()[:len(args)])):
            self.bad.append(("many", len(args)))

    def shared(self, a, b, c):
        # a and b were one list at the sender: pickled, they arrive as one list; c contains
        # itself
        self.n += 1
        if not (a is b and a == [1, 2] and c[0] is c):
            self.bad.append(("shared", a, b))

    def kw(self, a, b=None, *, c=None):
        self.n += 1
        if not (same(a, 1) and same(b, b"2") and same(c, "3")):
            self.bad.append(("kw", a, b, c))

    def which(self, tag):
        self.log.append(("v1", tag))

    @coro
    def co(self, x, y):
        self.log.append(("co", x, y))

    @when("self.turn == t")
    def ordered(self, t, payload):
        self.log.append(("when", t, payload))
        self.turn += 1

    def redefine(self, done):
        # Every PE's class changes (a broadcast): later calls run the new method.
        def which(self, tag):
            self.log.append(("v2", tag))
        Receiver.which = which
        done.send(None)

    def report(self):
        return self.n, self.bad, self.log


class Sub(Receiver):
    def which(self, tag):
        self.log.append(("sub", tag))


class Peer(Chare):
    """Channel ends: element 0 sends every sample, element 1 echoes it back."""

    def __init__(self):
        self.ch = Channel(self, remote=self.thisProxy[1 - self.thisIndex[0]])

    @coro
    def run(self):
        s = samples()
        bad = []
        if self.thisIndex[0] == 0:
            for i, v in enumerate(s):
                self.ch.send(v)
                self.ch.send(i, v, "two")  # several objects: a tuple arrives
            for i, v in enumerate(s):
                back = self.ch.recv()
                if not same(back, v):
                    bad.append((i, repr(back)[:60]))
                back = self.ch.recv()
                if not same(back, (i, v, "two")):
                    bad.append(("tuple", i, repr(back)[:60]))
            got = self.ch.recv()
            if not same(got, ()):
                bad.append(("empty send", got))
        else:
            for _ in range(2 * len(s)):
                self.ch.send(self.ch.recv())
            self.ch.send()
        return bad


def main(args):
    s = samples()
    # Receivers on the last PE: a Receiver and one of the subclass (groups: the class
    # is redefined on every PE by a broadcast)
    pe = charm.numPes() - 1
    r = Group(Receiver)
    sub = Group(Sub)
    charm.awaitCreation(r, sub)
    p = r[pe]
    for i, v in enumerate(s):
        p.one(i, v)
    for k in range(len(s) + 1):
        p.many(*s[:k])
    lst = [1, 2]
    rec = []
    rec.append(rec)
    p.shared(lst, lst, rec)
    p.kw(1, b"2", c="3")
    p.kw(1, b=b"2", c="3")
    p.kw(*[1, b"2"], **{"c": "3"})
    for k in range(3):
        p.which(k)
    sub[pe].which(0)
    f = Future(charm.numPes())
    r.redefine(f)  # a broadcast
    f.get()
    for k in range(3, 5):
        p.which(k)
    sub[pe].which(1)  # the subclass's own method still wins
    p.co(1, "x")
    for t in (2, 1, 0):  # out of order: held until their turn
        p.ordered(t, (t, b"p"))
    n, bad, log = p.report(ret=True).get()
    _, bad_sub, log_sub = sub[pe].report(ret=True).get()
    expect_n = len(s) + len(s) + 1 + 1 + 3
    assert n == expect_n, (n, expect_n)
    assert not bad, bad
    assert log == [("v1", 0), ("v1", 1), ("v1", 2), ("v2", 3), ("v2", 4), ("co", 1, "x"),
                   ("when", 0, (0, b"p")), ("when", 1, (1, b"p")), ("when", 2, (2, b"p"))], log
    assert log_sub == [("sub", 0), ("sub", 1)], log_sub
    # Channels, between PEs 0 and the last
    peers = Array(Peer, 2)
    charm.awaitCreation(peers)
    f1 = peers[1].run(ret=True)
    bad = peers[0].run(ret=True).get()
    f1.get()
    assert not bad, bad
    print(f"fast wire: {len(s)} samples on {charm.numPes()} PEs (receiver on PE {pe})")
    print("ok")
    charm.exit(0)


charm.start(main)
