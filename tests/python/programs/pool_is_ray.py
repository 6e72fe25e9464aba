# charm.pool with is_ray=True (charm4py's examples/pool/pool_simple.py with it): items that
# are futures of the caller (another map_async's results) or ray ObjectRefs stand for their
# values; a failed dependency fails the tasks that need it. Without is_ray a future item
# stays a future (a task may send to it).
from ucharm import charm, Future, ray


def square(x):
    return x ** 2


def twice(x):
    return 2 * x


def fail_on_three(x):
    if x == 3:
        raise KeyError("three")
    return x


def send_seven(f):
    f.send(7)
    return 1


def main(args):
    ray.init()
    results = charm.pool.map_async(square, range(6), chunksize=1, multi_future=True)
    twice_f = charm.pool.map_async(twice, results, chunksize=2, multi_future=True, is_ray=True)
    assert [f.get() for f in twice_f] == [2 * i * i for i in range(6)]
    assert charm.pool.map(twice, results, chunksize=4, is_ray=True) == [2 * i * i for i in range(6)]
    assert charm.pool.map(twice, [ray.put(i) for i in range(5)], is_ray=True) == [0, 2, 4, 6, 8]
    mixed = [1, results[2], ray.put(10)]
    assert charm.pool.map_async(twice, mixed, is_ray=True).get() == [2, 8, 20]

    deps = charm.pool.map_async(fail_on_three, range(5), multi_future=True)
    out = charm.pool.map_async(twice, deps, multi_future=True, is_ray=True)
    for i, f in enumerate(out):
        if i == 3:
            try:
                f.get()
                raise AssertionError("the failed dependency did not reach its task's future")
            except KeyError as e:
                assert "three" in str(e)
        else:
            assert f.get() == 2 * i

    futs = [Future() for _ in range(3)]
    assert charm.pool.map(send_seven, futs) == [1, 1, 1]
    assert [f.get() for f in futs] == [7, 7, 7]
    print("ok")
    charm.exit()


charm.start(main)
