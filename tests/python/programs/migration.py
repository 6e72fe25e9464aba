# Array elements that migrate while others send to them (charm4py's self.migrate, migrated,
# setMigratable). Targets move themselves to the next PE every few messages they get, and
# are also told to move by the main function (proxy[i].migrate(pe), as charm4py programs
# do); senders send numbered messages in bursts meanwhile. Every message must arrive
# exactly once and, per sender, in order; the state (NumPy arrays, a reference to the
# element itself, a class with __getstate__/__setstate__) must survive every move, the
# constructor must not run again, and migrated() must run once per move, on the new PE.
import sys

import numpy as np

from ucharm import charm, Chare, Array, Future

SENDERS = 6
MSGS = 300       # per sender per target
BURST = 25
MOVE_EVERY = 37  # a target moves itself after this many messages
constructed = 0  # per process: constructors run here


class Target(Chare):
    def __init__(self):
        global constructed
        constructed += 1
        self.next = {}
        self.count = 0
        self.requested = 0   # moves asked for (to another PE)
        self.moves = 0       # migrated() calls
        self.dest = charm.myPe()
        self.data = np.zeros(4096)            # out of band
        self.tags = np.arange(10, dtype=np.int32)[::2]  # not contiguous: in band
        self.me = self                        # a reference to itself
        self.history = [charm.myPe()]

    def recv(self, sender, seq, payload):
        assert self.me is self
        expected = self.next.get(sender, 0)
        if seq != expected:
            charm.abort(f"target {self.thisIndex}: sender {sender} sent {seq}, expected {expected}")
        self.next[sender] = seq + 1
        self.count += 1
        self.data[seq % 4096] += payload.sum()
        if self.count % MOVE_EVERY == self.thisIndex[0]:
            self.go((charm.myPe() + 1) % charm.numPes())

    def go(self, pe):
        # Requests made before the element has left: the last one wins (one move).
        if pe != charm.myPe() and pe != self.dest:
            if self.dest == charm.myPe():
                self.requested += 1
            self.dest = pe
            self.migrate(pe)

    def move_to(self, pe):  # the main function's request
        self.go(pe)

    def migrated(self):
        self.moves += 1
        self.history.append(charm.myPe())
        assert self.me is self
        assert self.data.flags.writeable and self.data.shape == (4096,)
        assert list(self.tags) == [0, 2, 4, 6, 8]
        if charm.myPe() != self.dest:
            charm.abort(f"target {self.thisIndex} arrived on PE {charm.myPe()}, not {self.dest}")

    def report(self):
        return (self.count, dict(self.next), self.requested, self.moves, charm.myPe(), float(self.data.sum()))


class Custom(Chare):
    """Chooses what travels: __getstate__ leaves `scratch` behind."""
    def __init__(self):
        self.value = self.thisIndex[0] * 10
        self.scratch = object()  # not picklable
        self.arrivals = 0

    def __getstate__(self):
        return {"value": self.value, "arrivals": self.arrivals}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.scratch = None

    def hop(self, n):
        if n > 0:
            self.value += 1
            self.migrate((charm.myPe() + 1) % charm.numPes())
            self.thisProxy[self.thisIndex].hop(n - 1)

    def migrated(self):
        self.arrivals += 1
        assert self.scratch is None

    def report(self):
        return (self.value, self.arrivals, self.migratable)


class Sender(Chare):
    def __init__(self, targets, ntargets, done):
        self.targets, self.ntargets, self.done = targets, ntargets, done
        self.seq = 0

    def burst(self):
        me = self.thisIndex[0]
        for _ in range(BURST):
            for t in range(self.ntargets):
                self.targets[t].recv(me, self.seq, np.full(8, 1.0))
            self.seq += 1
        if self.seq < MSGS:
            self.thisProxy[self.thisIndex].burst()
        else:
            self.contribute(None, None, self.done)


def main(args):
    n = charm.numPes()
    ntargets = 3
    targets = Array(Target, ntargets)
    done = Future()
    senders = Array(Sender, SENDERS, args=[targets, ntargets, done])
    charm.awaitCreation(targets, senders)
    senders.burst()
    for k in range(10):
        targets[k % ntargets].move_to((k * 7 + 1) % n)
    done.get()
    charm.waitQD()
    for t in range(ntargets):
        count, nxt, requested, moves, pe, total = targets[t].report(ret=True).get()
        assert count == SENDERS * MSGS, (t, count)
        assert nxt == {s: MSGS for s in range(SENDERS)}, (t, nxt)
        assert moves == requested, (t, moves, requested)
        assert total == SENDERS * MSGS * 8.0, (t, total)
        if n > 1:
            assert moves >= (SENDERS * MSGS) // MOVE_EVERY // 2, (t, moves)
        print(f"target {t}: {count} messages, {moves} moves, now on PE {pe}")
    made = sum(charm.thisProxy.eval("constructed", "__main__", ret=True).get())
    assert made == ntargets, made  # Target constructors ran once per element, never on arrival
    custom = Array(Custom, 4)
    charm.awaitCreation(custom)
    custom.hop(5)
    charm.waitQD()
    for i in range(4):
        value, arrivals, migratable = custom[i].report(ret=True).get()
        assert value == i * 10 + 5 and migratable, (i, value, migratable)
        assert arrivals == (5 if n > 1 else 0), (i, arrivals)
    print("ok")
    charm.exit()


charm.start(main)
