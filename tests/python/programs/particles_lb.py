# The shape of charm4py's particle example (examples/particle; written here, not copied): a
# 2-D array of cells with useAtSync=True, each with a Channel to its 8 neighbours (wrapping
# around); particles start crowded in four cells of the first two rows and drift (load imbalance
# under the block mapping on 2 or 4 PEs: a crowd split evenly over the PEs, as the middle cells
# are on 2 PEs, leaves the balancer nothing to move); each
# iteration a cell sends the particles that left it to their new cells and receives with
# charm.iwait. Every LB_EVERY iterations the cells call AtSync and leave their coroutine;
# resumeFromSync starts it again, maybe on another PE. Checks that no particle is lost or
# duplicated across the moves. args: [cells per side] [particles per middle cell]
import random

from ucharm import charm, Chare, Array, Future, Reducer, Channel, coro

ITERS = 12
LB_EVERY = 4


class Cell(Chare):
    def __init__(self, side, crowd, done):
        x, y = self.thisIndex
        self.side, self.done, self.it = side, done, 0
        self.rng = random.Random(x * 1000 + y)
        mid = x <= 1 and side // 2 - 1 <= y <= side // 2
        self.parts = [(x + self.rng.random(), y + self.rng.random()) for _ in range(crowd if mid else 1)]
        self.nbs = sorted({((x + dx) % side, (y + dy) % side) for dx in (-1, 0, 1) for dy in (-1, 0, 1)} - {(x, y)})
        self.chans = {nb: Channel(self, remote=self.thisProxy[nb]) for nb in self.nbs}

    @coro
    def run(self):
        side = self.side
        while self.it < ITERS:
            out = {nb: [] for nb in self.nbs}
            stay = []
            for (px, py) in self.parts:
                for _ in range(20):  # work per particle: the crowded cells are the heavy ones
                    px2 = (px + self.rng.uniform(-0.3, 0.3)) % side
                    py2 = (py + self.rng.uniform(-0.3, 0.3)) % side
                dest = (int(px2), int(py2))
                (stay if dest == self.thisIndex else out[dest]).append((px2, py2))
            self.parts = stay
            for nb, ch in self.chans.items():
                ch.send(out[nb])
            for ch in charm.iwait(list(self.chans.values())):
                self.parts += ch.recv()
            self.it += 1
            if self.it % LB_EVERY == 0 and self.it < ITERS:
                self.AtSync()
                return  # a waiting coroutine cannot travel: resumeFromSync starts a new one
        self.contribute(len(self.parts), Reducer.sum, self.done)

    def resumeFromSync(self):
        self.thisProxy[self.thisIndex].run()


def main(args):
    side = int(args[1]) if len(args) > 1 else 4
    crowd = int(args[2]) if len(args) > 2 else 200
    done = Future()
    cells = Array(Cell, (side, side), args=[side, crowd, done], useAtSync=True)
    total = 4 * crowd + side * side - 4
    cells.run()
    got = done.get()
    print(f"particles: {got} of {total}")
    if got != total:
        charm.abort(f"particles lost or duplicated: {got} at the end, {total} at the start")
    print("ok")
    charm.exit(0)


charm.start(main)
