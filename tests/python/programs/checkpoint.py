"""Checkpoint and restart: checkpoint.py DIR STEPS [options] [+restart DIR]

A lock-step computation over four arrays (1-D, 2-D and 6-D, and a 2-D one filled by
ckInsert; NumPy state), a section of the 1-D one, a group and a
singleton chare: each step the main chare broadcasts go(s) to every array; each element
updates its data, sends a value to the next element of its array and contributes a sum
once both arrived; a group counts the steps on every PE, a singleton chare keeps a hash of
the step sums. Every --every K steps the main chare writes a checkpoint
(charm.checkpoint(DIR, resume=self.thisProxy.resume).get()). A run with +restart DIR goes
on in resume() (only its --stop-after counts: the other options are the saved ones). The result line ("result TOTAL HASH") is the same for every PE count,
interrupted or not; the last line is "ok". Options:
  --every K        checkpoint every K steps (default 3)
  --stop-after S   end the job (exit 0) right after the checkpoint of step S
  --crash-at S     in the first attempt (UCHARM_RESTART_ATTEMPT unset or 0) PE 1 (or the
                   only PE) kills itself with SIGKILL at step S
  --no-resume      checkpoint without resume= (a restart must then fail clearly)
  --unpicklable    the singleton chare holds an open file (the checkpoint must fail)
  --busy           an element has a coroutine waiting when the checkpoint is written
  --main-function  the same computation driven by a main function (resume: a
                   functools.partial of a module-level function); the checkpoint is asked
                   for by an element on the last PE
"""
import functools
import os
import signal
import sys

import numpy as np

from ucharm import Array, Chare, Future, Group, Reducer, charm, coro, readonlies as ro

SHAPES = [(7,), (2, 3), (2, 1, 2, 1, 1, 2)]
INSERTED = (1, 5)  # the shape of the array filled by ckInsert
M = 1000000007


def linear(idx, shape):
    n = 0
    for i, d in zip(idx, shape):
        n = n * d + i
    return n


def unlinear(n, shape):
    out = []
    for d in reversed(shape):
        out.append(n % d)
        n //= d
    return tuple(reversed(out))


class Cell(Chare):
    def __init__(self, shape):
        self.shape = shape
        self.size = int(np.prod(shape))
        self.lin = linear(self.thisIndex, shape)
        self.data = np.arange(64 + self.lin, dtype=np.int64) * 7 + self.lin
        self.counter = 0
        self.arrivals = 0
        self.fut = None

    def go(self, s, fut):
        if ro.tag != f"tag-{ro.ncells}":
            raise RuntimeError(f"readonly lost on PE {charm.myPe()}: {ro.tag!r}")
        self.fut = fut
        self.data = (self.data * 31 + s + np.arange(self.data.size, dtype=np.int64)) % 1000003
        nxt = unlinear((self.lin + 1) % self.size, self.shape)
        self.thisProxy[nxt].take(s, int(self.data[0]) + self.lin)
        self.arrived()

    def take(self, s, v):
        self.counter = (self.counter + v * (s + 1)) % M
        self.arrived()

    def arrived(self):
        self.arrivals += 1
        if self.arrivals < 2:
            return
        self.arrivals = 0
        self.contribute(int(self.counter + self.data.sum()), Reducer.sum, self.fut)

    def ping(self, s, fut, sec):  # a reduction over a section of the 1-D array
        self.contribute(s * 1000 + self.lin, Reducer.sum, fut, sec)

    @coro
    def checkpoint_here(self, d, resume):  # --main-function: the checkpoint is asked for on another PE
        charm.checkpoint(d, resume=resume).get()
        return charm.myPe()

    @coro
    def hang(self):  # --busy: a coroutine that waits across the checkpoint
        self.never = Future()
        self.never.get()


class Ticker(Chare):  # a group: one branch per PE counts the steps
    def __init__(self):
        self.ticks = 0

    def tick(self, s):
        self.ticks += 1
        if self.ticks != s + 1 or self.thisIndex != charm.myPe():
            raise RuntimeError(f"PE {charm.myPe()}: branch {self.thisIndex} at {self.ticks} on step {s}")

    def check(self, steps, fut):
        self.contribute(1 if self.ticks == steps else 0, Reducer.min, fut)

    def crash(self):
        if charm.myPe() == (1 if charm.numPes() > 1 else 0):
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)


class Acc(Chare):  # a singleton chare: a hash of the step sums
    def __init__(self, unpicklable):
        self.hash = 1469598103934665603
        self.count = 0
        if unpicklable:
            self.log = open(os.devnull, "w")

    def add(self, v):
        self.hash = ((self.hash ^ v) * 1099511628211) % (1 << 64)
        self.count += 1

    def report(self):
        return self.hash, self.count


def parse(args):
    o = {"dir": args[0], "steps": int(args[1]), "every": 3, "stop_after": -1, "crash_at": -1, "no_resume": False,
         "unpicklable": False, "busy": False, "main_function": False}
    i = 2
    while i < len(args):
        a = args[i]
        if a in ("--every", "--stop-after", "--crash-at"):
            o[a[2:].replace("-", "_")] = int(args[i + 1])
            i += 2
            continue
        if a in ("--no-resume", "--unpicklable", "--busy", "--main-function"):
            o[a[2:].replace("-", "_")] = True
            i += 1
            continue
        raise SystemExit(f"unknown option {a}")
    return o


class Run:
    """The computation's state (the main chare's, or the main function's in --main-function)."""

    def setup(self, o):
        self.__dict__.update(o)
        self.step = 0
        self.total = 0
        ro.ncells = sum(int(np.prod(s)) for s in SHAPES)
        ro.tag = f"tag-{ro.ncells}"  # a readonly that must survive as written
        self.arrays = [Array(Cell, s, args=[s]) for s in SHAPES]
        grown = Array(Cell, ndims=2)  # an array filled by ckInsert
        for i in range(INSERTED[1]):
            grown.ckInsert((0, i), args=[INSERTED])
        grown.ckDoneInserting()
        self.arrays.append(grown)
        self.sec = self.arrays[0][1:6:2]  # a section: elements 1, 3, 5
        self.tickers = Group(Ticker)
        self.acc = Chare(Acc, onPE=charm.numPes() - 1, args=[o["unpicklable"]])
        charm.awaitCreation(*self.arrays[:3], self.tickers, self.acc)
        if o["busy"]:
            self.arrays[0][0].hang()

    def resumed(self):
        info = charm.restartInfo()
        # The saved state holds the first run's options; this run's --stop-after counts.
        args = sys.argv[1:]
        if "+restart" in args:
            i = args.index("+restart")
            del args[i:i + 2]
        self.stop_after = parse(args)["stop_after"]
        if ro.tag != f"tag-{ro.ncells}":
            raise RuntimeError(f"readonly lost: {ro.tag!r}")
        pes = charm.thisProxy.myPe(ret=True).get()
        if pes != list(range(charm.numPes())):
            raise RuntimeError(f"charm.thisProxy answers {pes}")
        print(f"restarted at step {self.step} (checkpoint of {info.old_num_pes} PEs, now {charm.numPes()})",
              flush=True)

    def loop(self, resume):
        while self.step < self.steps:
            s = self.step
            attempt = os.environ.get("UCHARM_RESTART_ATTEMPT", "0")
            if s == self.crash_at and attempt == "0":
                self.tickers.crash()
                return
            self.tickers.tick(s)
            futs = [Future() for _ in self.arrays]
            for a, f in zip(self.arrays, futs):
                a.go(s, f)
            fs = Future()
            self.sec.ping(s, fs, self.sec)
            total = sum(f.get() for f in futs) + fs.get()
            self.total = (self.total * 131 + total) % 1000000009
            self.acc.add(total)
            self.step += 1
            if self.every > 0 and self.step % self.every == 0 and self.step < self.steps:
                resume_ = None if self.no_resume else resume
                if self.main_function:  # asked for by the last element of the 1-D array (the last PE)
                    pe = self.arrays[0][6].checkpoint_here(self.dir, resume_, ret=True).get()
                    assert pe != 0 or charm.numPes() == 1, pe
                else:
                    charm.checkpoint(self.dir, resume=resume_).get()
                print(f"checkpoint at step {self.step}", flush=True)
                if self.step == self.stop_after:
                    print(f"stopped at step {self.step}", flush=True)
                    charm.exit(0)
                    return
        f = Future()
        self.tickers.check(self.steps, f)
        if f.get() != 1:
            raise RuntimeError("a ticker missed steps")
        h, count = self.acc.report(ret=True).get()
        if count != self.steps:
            raise RuntimeError(f"the accumulator saw {count} steps, not {self.steps}")
        print(f"result {self.total} {h}", flush=True)
        print("ok", flush=True)
        charm.exit(0)


class Main(Chare, Run):
    def __init__(self, args):
        self.setup(parse(args[1:]))
        self.loop(self.thisProxy.resume)

    @coro
    def resume(self):
        self.resumed()
        self.loop(self.thisProxy.resume)


# --main-function: the state lives in a Run object that resume= carries.
def main_function(args):
    run = Run()
    run.setup(parse(args[1:]))
    run.loop(functools.partial(resume_function, run))


def resume_function(run):
    run.resumed()
    run.loop(functools.partial(resume_function, run))


charm.start(main_function if "--main-function" in sys.argv else Main)
