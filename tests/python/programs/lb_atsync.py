# AtSync load balancing (charm4py's useAtSync=True, self.AtSync(), resumeFromSync()): the
# elements that start on PE 0 spin 4 times longer than the others; every STEP iterations
# each element calls AtSync and the balancer (+balancer NAME) may move it. Checks that every
# element finishes every iteration once, resumeFromSync runs once per AtSync, state
# survives the moves, and odd elements pinned with setMigratable(False) never move.
# argv[1] == "pin": pin the odd elements.
import sys
import time

from ucharm import charm, Chare, Array, Future

ITERS = 12
STEP = 3
SPIN = 0.004


class Work(Chare):
    def __init__(self, heavy, done, pin):
        self.heavy = self.thisIndex[0] in heavy
        self.done = done
        self.it = 0
        self.syncs = self.resumes = 0
        self.home = charm.myPe()
        self.pes = {charm.myPe()}
        self.pinned = pin and self.thisIndex[0] % 2 == 1
        if self.pinned:
            self.setMigratable(False)

    def step(self):
        end = time.perf_counter() + SPIN * (4 if self.heavy else 1)
        while time.perf_counter() < end:
            pass
        self.it += 1
        if self.it == ITERS:
            self.contribute((self.syncs, self.resumes, len(self.pes), self.pinned), Reducer_gather(), self.done)
        elif self.it % STEP == 0:
            self.syncs += 1
            self.AtSync()
        else:
            self.thisProxy[self.thisIndex].step()

    def resumeFromSync(self):
        self.resumes += 1
        self.pes.add(charm.myPe())
        if self.pinned and charm.myPe() != self.home:
            charm.abort(f"pinned element {self.thisIndex} moved from PE {self.home} to {charm.myPe()}")
        self.thisProxy[self.thisIndex].step()


def Reducer_gather():
    from ucharm import Reducer
    return Reducer.gather


def main(args):
    pin = len(args) > 1 and args[1] == "pin"
    n = 4 * charm.numPes()
    per = n // charm.numPes()
    heavy = list(range(per))  # block map: elements 0..per-1 start on PE 0
    done = Future()
    a = Array(Work, n, args=[heavy, done, pin], useAtSync=True)
    t0 = time.time()
    a.step()
    res = done.get()
    assert len(res) == n
    for syncs, resumes, npes, pinned in res:
        assert syncs == resumes == ITERS // STEP - (1 if ITERS % STEP == 0 else 0), (syncs, resumes)
        assert not pinned or npes == 1
    moved = sum(1 for r in res if r[2] > 1)
    print(f"{moved} of {n} elements ran on more than one PE; {time.time() - t0:.2f} s")
    print("ok")
    charm.exit()


charm.start(main)
