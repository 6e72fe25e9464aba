# NumPy arrays as arguments of proxy calls (out-of-band buffers): they arrive intact,
# writable, and stay valid after the call; a broadcast gives every element its own copy.
import numpy as np

from ucharm import charm, Chare, Group, Array


def samples():
    rng = np.random.default_rng(7)
    return {
        "small_f64": rng.standard_normal(10),
        "int32_2d": np.arange(12, dtype=np.int32).reshape(3, 4),
        "large_f32": rng.standard_normal(300_000).astype(np.float32),   # 1.2 MB
        "complex": (np.arange(5) + 1j * np.arange(5)).astype(np.complex128),
        "bool": np.array([True, False, True]),
        "empty": np.zeros((0, 3)),
        "strided": np.arange(40, dtype=np.int64)[::3],                 # not contiguous
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "struct": np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")]),
    }


class Holder(Chare):
    def __init__(self):
        self.kept = {}

    def take(self, name, arr, checksum):
        assert isinstance(arr, np.ndarray), type(arr)
        self.kept[name] = arr
        ok = arr.tobytes() == checksum.tobytes() and arr.shape == checksum.shape and arr.dtype == checksum.dtype
        return ok

    def many(self, *arrays, **named):
        return [a.sum() for a in arrays] + [named[k].sum() for k in sorted(named)]

    def still_intact(self, name, expect):
        a = self.kept[name]
        return a.tobytes() == expect.tobytes()

    def echo(self, arr):
        return arr * 2

    def modify(self, arr):
        # The received array is writable and modifying it is only this element's business.
        arr += 1
        return arr

    def bcast_keep(self, arr):
        assert arr.flags.writeable
        arr += self.my_index()
        self.mine = arr

    def my_index(self):
        return self.thisIndex if isinstance(self.thisIndex, int) else self.thisIndex[0]

    def bcast_check(self):
        return (self.my_index(), self.mine.tolist())


def main(args):
    n = charm.numPes()
    g = Group(Holder)
    charm.awaitCreation(g)
    last = g[n - 1]
    data = samples()
    for name, arr in data.items():
        assert last.take(name, arr, arr.copy(), ret=True).get(), name
    # Still intact later (the element kept the arrays; their messages must stay alive).
    for name, arr in data.items():
        assert last.still_intact(name, arr.copy(), ret=True).get(), name
    sums = last.many(np.ones(3), np.arange(4), z=np.full(2, 5.0), a=np.arange(100_000), ret=True).get()
    assert sums == [3.0, 6, sum(range(100_000)), 10.0], sums

    # Returned arrays (ret=True) come back intact, also large ones.
    big = np.arange(200_000, dtype=np.float64)
    back = last.echo(big, ret=True).get()
    assert isinstance(back, np.ndarray) and np.array_equal(back, big * 2)
    src = np.arange(5)
    out = g[0].modify(src, ret=True).get()
    assert out.tolist() == [1, 2, 3, 4, 5] and src.tolist() == [0, 1, 2, 3, 4], "the caller's array is not touched"

    # A broadcast of one array: each element (several per PE) modifies its own copy.
    a = Array(Holder, 3 * n)
    charm.awaitCreation(a)
    for arr in (np.zeros(4, dtype=np.int64), np.zeros(20_000, dtype=np.int64)):
        a.bcast_keep(arr, awaitable=True).get()
        got = a.bcast_check(ret=True).get()
        for i, vals in got:
            assert vals == [i] * arr.size, (i, vals[:8])
        assert arr.sum() == 0, "the sender's array is not touched"
    g.bcast_keep(np.zeros(3), awaitable=True).get()
    assert g.bcast_check(ret=True).get() == [(pe, [float(pe)] * 3) for pe in range(n)]
    print("ok")
    charm.exit()


charm.start(main)
