"""ucharm.ray: remote functions (nested, num_returns, keyword arguments, references as
arguments), actors (placement, call order behind an unresolved argument, handles passed
to tasks), ray.put/get/wait with timeouts, a task's exception. Prints 'ok'."""
import numpy as np

from ucharm import charm, ray


@ray.remote
def add(a, b):
    return a + b


@ray.remote
def fib(n):
    if n < 2:
        return n
    return ray.get(fib.remote(n - 1)) + ray.get(fib.remote(n - 2))


@ray.remote(num_returns=2)
def divmod_task(a, b):
    return a // b, a % b


@ray.remote
def where(x=None):
    return charm.myPe()


@ray.remote
def total(arr, scale=1):
    return int(arr.sum()) * scale


@ray.remote
def slow(value, secs):
    charm.sleep(secs)  # a coroutine: the PE runs other tasks meanwhile
    return value


@ray.remote
def fails(x):
    raise ValueError(f"bad input {x}")


@ray.remote
def nested_refs(lst):
    # References inside a list are passed as they are (Ray's rule).
    return ray.get(lst)


@ray.remote
def use_actor(counter, k):
    return ray.get(counter.incr.remote(k))


@ray.remote
class Counter:
    def __init__(self, start, log=None):
        self.value = start
        self.log = [] if log is None else list(log)

    def incr(self, k=1):
        self.value += k
        self.log.append(k)
        return self.value

    def pe(self):
        return charm.myPe()

    def history(self):
        return self.log

    @ray.method(num_returns=2)
    def both(self):
        return self.value, len(self.log)


def main(args):
    ray.init()
    n = charm.numPes()

    # tasks
    assert ray.get(add.remote(1, 2)) == 3
    assert ray.get([add.remote(i, i) for i in range(10)]) == [2 * i for i in range(10)]
    assert ray.get(fib.remote(10)) == 55
    q, r = divmod_task.remote(17, 5)
    assert ray.get([q, r]) == [3, 2]
    assert ray.get(add.options(num_returns=1).remote(2, 3)) == 5
    assert {ray.get(where.remote()) for _ in range(2 * n)} == set(range(n)), "tasks go to every PE"
    big = np.arange(1000, dtype=np.int64)
    big_ref = ray.put(big)
    assert ray.get(big_ref) is big  # the home keeps the object itself
    assert ray.get(total.remote(big_ref)) == int(big.sum())
    assert ray.get(total.remote(big_ref, scale=add.remote(1, 1))) == 2 * int(big.sum())  # a keyword ref
    chained = add.remote(add.remote(1, 2), add.remote(3, 4))  # references as arguments
    assert ray.get(chained) == 10
    inner = [add.remote(1, 1), add.remote(2, 2)]
    assert ray.get(nested_refs.remote(inner)) == [2, 4]

    # errors
    try:
        ray.get(fails.remote(7))
        raise AssertionError("ray.get of a failed task did not raise")
    except ValueError as e:
        assert "bad input 7" in str(e)
    try:
        add(1, 2)
        raise AssertionError("calling a remote function directly did not raise")
    except TypeError:
        pass

    # wait and timeouts
    s = slow.remote("late", 0.5)
    fast = [add.remote(i, 0) for i in range(3)]
    ready, not_ready = ray.wait([s] + fast, num_returns=3)
    assert ready == fast and not_ready == [s], (ready, not_ready)
    ready, not_ready = ray.wait([s], timeout=0.01)
    assert ready == [] and not_ready == [s]
    try:
        ray.get(s, timeout=0.01)
        raise AssertionError("ray.get did not time out")
    except ray.GetTimeoutError:
        pass
    assert ray.get(s, timeout=30) == "late"
    ready, not_ready = ray.wait([s], timeout=0)
    assert ready == [s] and not_ready == []

    # actors: placed on the PEs in turn
    counters = [Counter.remote(i) for i in range(n)]
    assert sorted(ray.get([c.pe.remote() for c in counters])) == list(range(n))
    c = Counter.remote(add.remote(5, 5), log=[0])  # a reference among the constructor's arguments
    # The first call waits for its argument; the next ones wait behind it.
    first = c.incr.remote(slow.remote(100, 0.3))
    second = c.incr.remote(1)
    third = c.incr.remote(k=2)
    assert ray.get([first, second, third]) == [110, 111, 113]
    assert ray.get(c.history.remote()) == [0, 100, 1, 2]
    v, count = c.both.remote()
    assert ray.get([v, count]) == [113, 4]
    assert ray.get(use_actor.remote(c, 7)) == 120  # a handle passed to a task
    try:
        c.incr(1)
        raise AssertionError("calling an actor method directly did not raise")
    except TypeError:
        pass
    print("ok")
    exit()


charm.start(main)
