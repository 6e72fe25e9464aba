# Nested use of charm.pool: a task that maps over the pool and waits, tasks waiting on
# Futures, Task(ret=True) and submit; prints "ok".
from ucharm import charm, Future


def leaf(x):
    return x * x


def inner(n):
    # A task that itself uses the pool and waits for its result.
    return sum(charm.pool.map(leaf, range(n)))


def waits(x):
    f = Future()
    f.send(x + 1)
    return f.get()


def main(args):
    got = charm.pool.map(inner, range(1, 6))
    assert got == [sum(i * i for i in range(n)) for n in range(1, 6)], got
    assert charm.pool.map(waits, range(5)) == [1, 2, 3, 4, 5]
    t = charm.pool.Task(inner, args=[4], ret=True)
    assert t.get() == 14
    r = charm.pool.submit([(inner, 3), (leaf, 7)])
    assert r == [5, 49], r
    print("ok")
    charm.exit()


charm.start(main)
