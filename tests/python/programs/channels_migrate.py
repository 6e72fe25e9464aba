# Channels that follow migration: a ring of array elements, each with a Channel to its
# left and right neighbours. In step k an element first receives the messages its
# neighbours sent in step k-1, then sends M messages (Python objects and NumPy arrays) on
# each channel and asks to move to another PE: messages are in flight or waiting in its
# receive queue while it (and its peers) move. Every message must arrive once, in order,
# intact; every element must have moved.
#   args: ring | pinned | atsync_zero_copy
#     pinned: after a zero-copy host send (read-only bytes-backed array), migrate() is a
#             clear error (the core's channel end stays at home)
#     atsync_zero_copy: in a useAtSync array the same send goes inside a message and the
#             balancer (+balancer GreedyLB) may move the element; data checked after
import sys

import numpy as np

from ucharm import charm, Chare, Array, Channel, Future, Reducer, coro

STEPS = 8
M = 3


def payload(src, step, j):
    return {"src": src, "step": step, "j": j}, np.arange(64, dtype=np.int64) * (step * M + j) + src


class Node(Chare):
    def __init__(self, n):
        me = self.thisIndex[0]
        self.n = n
        self.left = Channel(self, remote=self.thisProxy[(me - 1) % n])
        self.right = Channel(self, remote=self.thisProxy[(me + 1) % n])
        self.pes = {charm.myPe()}
        self.arrivals = 0

    def migrated(self):
        self.arrivals += 1
        self.pes.add(charm.myPe())

    def check(self, ch, src, step):
        for j in range(M):
            meta, arr = ch.recv()
            want_meta, want_arr = payload(src, step, j)
            if meta != want_meta or not np.array_equal(arr, want_arr):
                charm.abort(f"element {self.thisIndex}: got {meta} from the channel to {src}, "
                            f"expected {want_meta} (lost, duplicated or out of order)")

    @coro
    def step(self, k, done):
        me, n = self.thisIndex[0], self.n
        if k > 0:
            self.check(self.left, (me - 1) % n, k - 1)
            self.check(self.right, (me + 1) % n, k - 1)
        if k < STEPS:
            for j in range(M):
                self.left.send(*payload(me, k, j))
                self.right.send(*payload(me, k, j))
            if charm.numPes() > 1 and (me + k) % 2 == 0:
                self.migrate((charm.myPe() + 1 + (me + k) % (charm.numPes() - 1)) % charm.numPes())
        self.contribute((self.arrivals, len(self.pes)), Reducer.gather, done)

    @coro
    def zero_copy(self, done):
        frozen = np.frombuffer(bytes(1 << 17), dtype=np.uint8)  # eligible for zero-copy
        self.right.send(frozen)
        got = self.left.recv()
        ok = got.nbytes == 1 << 17 and not got.any()
        self.contribute(ok, Reducer.logical_and, done)

    @coro
    def then_migrate(self, done):
        if self.thisIndex[0] == 0:
            self.migrate((charm.myPe() + 1) % charm.numPes())
        self.contribute(None, None, done)


class Synced(Node):
    def __init__(self, n, done):
        super().__init__(n)
        self.done = done
        self.it = 0
        self.spin = 0.02 if self.thisIndex[0] < n // 2 else 0.0

    @coro
    def go(self):
        me = self.thisIndex[0]
        import time
        end = time.perf_counter() + self.spin
        while time.perf_counter() < end:
            pass
        frozen = np.frombuffer(bytes(1 << 17), dtype=np.uint8) if self.it == 0 else np.full(10, me)
        self.right.send(frozen)
        got = self.left.recv()
        want = np.zeros(1 << 17, np.uint8) if self.it == 0 else np.full(10, (me - 1) % self.n)
        if not np.array_equal(got, want):
            charm.abort(f"element {me}: wrong data in iteration {self.it}")
        self.it += 1
        if self.it == 4:
            self.contribute((self.arrivals, len(self.pes)), Reducer.gather, self.done)
            return
        self.AtSync()

    def resumeFromSync(self):
        self.thisProxy[self.thisIndex].go()


def main(args):
    mode = args[1] if len(args) > 1 else "ring"
    n = 2 * charm.numPes() + 2
    if mode == "atsync_zero_copy":
        done = Future()
        a = Array(Synced, n, args=[n, done], useAtSync=True)
        charm.awaitCreation(a)
        a.go()
        res = done.get()
        print(f"moves: {sum(r[0] for r in res)}")
        print("ok")
        charm.exit(0)
        return
    a = Array(Node, n, args=[n])
    charm.awaitCreation(a)
    if mode == "pinned":
        f = Future()
        a.zero_copy(f)
        assert f.get() is True
        f = Future()
        a.then_migrate(f)  # element 0: a clear error, the job ends
        f.get()
        print("migrated: not expected")
        charm.exit(0)
        return
    res = None
    for k in range(STEPS + 1):
        f = Future()
        a.step(k, f)
        res = f.get()
    moves = sum(r[0] for r in res)
    print(f"{n} elements, {STEPS} steps, {M} messages per channel per step: {moves} moves")
    if charm.numPes() > 1 and not all(r[0] > 0 and r[1] > 1 for r in res):
        charm.abort(f"an element never moved: {res}")
    print("ok")
    charm.exit(0)


charm.start(main)
