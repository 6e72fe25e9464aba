# Numba-jitted kernels in entry methods, in charm.pool tasks and in a coroutine: an array
# of blocks of particles each computes its Lennard-Jones-like pair energy and forces with
# @numba.njit (cache=True: the cache lands next to this file's copy), the energies are
# summed by a reduction and checked against plain NumPy on PE 0; a jitted function is a
# pool task too.
import numba
import numpy as np

from ucharm import charm, Chare, Array, Future, Reducer, coro

BLOCKS = 6
PER_BLOCK = 40


@numba.njit(cache=True)
def pair_energy(pos, forces):
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
            inv6 = 1.0 / (r2 * r2 * r2)
            e += inv6 * inv6 - inv6
            f = (12.0 * inv6 * inv6 - 6.0 * inv6) / r2
            forces[i] += f * d
            forces[j] -= f * d
    return e


def reference(pos):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = (d * d).sum(-1)
    iu = np.triu_indices(len(pos), 1)
    inv6 = 1.0 / r2[iu] ** 3
    return float((inv6 * inv6 - inv6).sum())


def positions(block):
    rng = np.random.default_rng(block)
    grid = np.stack(np.meshgrid(*[np.arange(4)] * 3), -1).reshape(-1, 3)[:PER_BLOCK].astype(float)
    return grid * 1.5 + rng.uniform(-0.1, 0.1, (PER_BLOCK, 3))


@numba.njit
def square_sum(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


class Block(Chare):
    def __init__(self):
        self.pos = positions(self.thisIndex[0])

    def energy(self, fut):
        forces = np.zeros_like(self.pos)
        e = pair_energy(self.pos, forces)
        assert abs(forces.sum(0)).max() < 1e-6 * abs(forces).max()  # Newton's third law
        self.contribute(e, Reducer.sum, fut)

    @coro
    def jitted_in_coro(self, other):
        return pair_energy(positions(other), np.zeros((PER_BLOCK, 3))) + self.thisProxy[other].one(ret=True).get()

    def one(self):
        return 1.0


def main(args):
    blocks = Array(Block, BLOCKS)
    f = Future()
    blocks.energy(f)
    want = sum(reference(positions(b)) for b in range(BLOCKS))
    got = f.get()
    assert abs(got - want) <= 1e-9 * abs(want), (got, want)
    v = blocks[BLOCKS - 1].jitted_in_coro(0, ret=True).get()
    assert abs(v - 1.0 - reference(positions(0))) <= 1e-9 * abs(v)
    assert charm.pool.map(square_sum, [10, 100, 1000]) == [sum(i * i for i in range(n)) for n in (10, 100, 1000)]
    print("ok")
    charm.exit()


charm.start(main)
