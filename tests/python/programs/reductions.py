# contribute() with every built-in reducer, over groups and 1-D/2-D arrays, with scalars,
# lists and NumPy arrays, to a Future, to one element's method and to a broadcast
# method; empty reductions; several reductions in flight; self.allreduce().
import numpy as np

from ucharm import charm, Chare, Group, Array, Reducer, Future, coro

NUMERIC = ["sum", "product", "max", "min"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]


def flat(idx, shape):
    """The element's position in index order (groups: the PE)."""
    if isinstance(idx, int):
        return idx
    if len(idx) == 1:
        return idx[0]
    return idx[0] * shape[1] + idx[1]


def scalar(red, k):
    if red in LOGICAL:
        return k % 2 == 1 if red != "logical_and" else k != 5
    if red == "product":
        return k % 3 + 1
    if red == "gather":
        return ("v", k)
    return (k * 7) % 5 - 2  # negative and positive values: max/min are not trivial


def contribution(red, kind, k):
    x = scalar(red, k)
    if kind == "scalar":
        return x
    if red == "gather":
        return np.arange(k, k + 3) if kind == "numpy" else [k, "x"]
    if red in LOGICAL:
        vals = [x, not x, True]
        return vals if kind == "list" else np.array(vals, dtype=bool)
    vals = [x, x + 1, -x]
    return vals if kind == "list" else np.array(vals, dtype=np.int64)


def expected(red, kind, count):
    cs = [contribution(red, kind, k) for k in range(count)]
    if red == "gather":
        return cs
    ops = {"sum": lambda a, b: a + b, "product": lambda a, b: a * b, "max": max, "min": min,
           "logical_and": lambda a, b: bool(a and b), "logical_or": lambda a, b: bool(a or b),
           "logical_xor": lambda a, b: bool(a) != bool(b)}
    op = ops[red]
    if kind == "scalar":
        r = cs[0]
        for c in cs[1:]:
            r = op(r, c)
        return r
    cols = [[c[j] for c in cs] for j in range(len(cs[0]))]
    out = []
    for col in cols:
        r = col[0]
        for c in col[1:]:
            r = op(r, c)
        out.append(r)
    return out if kind == "list" else np.array(out)


def same(got, want):
    if isinstance(want, np.ndarray):
        return (isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype == want.dtype
                and bool(np.all(got == want)))
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(same(g, w) for g, w in zip(got, want))
    if isinstance(want, bool):
        return isinstance(got, (bool, np.bool_)) and bool(got) == want
    return type(got) is type(want) and got == want


class Worker(Chare):
    def __init__(self, shape):
        self.shape = shape
        self.res = None

    def k(self):
        return flat(self.thisIndex, self.shape)

    def run(self, red, kind, target, fut, first):
        data = None if red == "nop" else contribution(red, kind, self.k())
        reducer = getattr(Reducer, red)
        self.res = fut
        method = "got_nothing" if red == "nop" else "got"  # nop: the target takes no value
        if target == "future":
            self.contribute(data, reducer, fut)
        elif target == "element":
            self.contribute(data, reducer, getattr(first, method))
        else:
            self.contribute(data, reducer, getattr(self.thisProxy, method))

    def empty(self, target, fut, first):
        self.res = fut
        if target == "future":
            self.contribute(None, None, fut)
        elif target == "element":
            self.contribute(None, None, first.got_nothing)
        else:
            self.contribute(None, None, self.thisProxy.got_nothing)

    def got(self, value):
        self.res.send(value)

    def got_nothing(self):
        self.res.send("called")

    def reduce_form(self, fut):
        # charm4py's other spelling: reduce(target, data, reducer)
        self.reduce(fut, self.k(), Reducer.sum)

    def several(self, f1, f2, f3):
        # Three reductions in flight at once: rounds never mix.
        self.contribute(self.k(), Reducer.sum, f1)
        self.contribute([self.k()], Reducer.max, f2)
        self.contribute(self.k(), Reducer.gather, f3)

    @coro
    def allred(self):
        a = self.allreduce(self.k(), Reducer.sum).get()
        b = self.allreduce(np.full(3, self.k(), dtype=np.int64), Reducer.max).get()
        c = self.allreduce(self.k(), Reducer.gather).get()
        self.allreduce().get()  # a barrier
        return (a, b.tolist(), c)


def check_collection(name, proxy, count, bcast_count, first):
    for red in NUMERIC + LOGICAL + ["gather", "nop"]:
        for kind in (["scalar", "list", "numpy"] if red != "nop" else ["scalar", "numpy"]):
            for target in ["future", "element", "broadcast"]:
                n_vals = bcast_count if target == "broadcast" else 1
                f = Future(n_vals)
                proxy.run(red, kind, target, f, first)
                got = f.get()
                vals = got if n_vals > 1 else [got]
                if red == "nop":
                    want = None if target == "future" else "called"
                else:
                    want = expected(red, kind, count)
                for v in vals:
                    assert same(v, want), f"{name}: {red} of {kind} to {target}: got {v!r}, want {want!r}"
        for target in ["future", "element", "broadcast"]:
            n_vals = bcast_count if target == "broadcast" else 1
            f = Future(n_vals)
            proxy.empty(target, f, first)
            got = f.get()
            vals = got if n_vals > 1 else [got]
            want = None if target == "future" else "called"
            assert all(v == want for v in vals), f"{name}: empty reduction to {target}: {vals!r}"
    f = Future()
    proxy.reduce_form(f)
    assert f.get() == sum(range(count))
    f1, f2, f3 = Future(), Future(), Future()
    for _ in range(3):
        proxy.several(f1, f2, f3)
        assert f1.get() == sum(range(count)) and f2.get() == [count - 1], (name, f1.get(), f2.get())
        assert f3.get() == list(range(count)), (name, f3.get())
        f1, f2, f3 = Future(), Future(), Future()
    got = proxy.allred(ret=True).get()
    want = (sum(range(count)), [count - 1] * 3, list(range(count)))
    assert got == [want] * count, (name, got)


def main(args):
    n = charm.numPes()
    g = Group(Worker, args=[None])
    check_collection("group", g, n, n, g[0])
    a = Array(Worker, 2 * n + 1, args=[(2 * n + 1,)])
    check_collection("1-D array", a, 2 * n + 1, 2 * n + 1, a[0])
    b = Array(Worker, (n + 1, 2), args=[(n + 1, 2)])
    check_collection("2-D array", b, 2 * (n + 1), 2 * (n + 1), b[0, 0])
    print("ok")
    charm.exit()


charm.start(main)
