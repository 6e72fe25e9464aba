"""charm.pool: charm4py's task pool over the runtime's group (CharmRemote's _pool_run and
_pool_task entry methods do the work on the worker PEs).
"""
from . import _core, futures
from . import charm as runtime  # cycle: used at call time


class Pool:
    """charm.pool: tasks spread over PEs 1.. (PE 0 too when it is alone), run as
    coroutines (a task may itself use the pool or wait). A task's exception reaches the
    caller's get()."""

    def __init__(self):
        self._next = 0

    def _workers(self, ncores):
        n = _core.num_pes()
        workers = list(range(1, n)) if n > 1 else [0]
        return workers[:ncores] if ncores > 0 else workers

    def map(self, func, iterable, chunksize=1, ncores=-1, allow_nested=False):
        return self.map_async(func, iterable, chunksize, ncores).get()

    def map_async(self, func, iterable, chunksize=1, ncores=-1, multi_future=False, allow_nested=False):
        items = list(iterable)
        workers = self._workers(ncores)
        step = max(1, chunksize)
        starts = range(0, len(items), step)
        if multi_future:
            futs = [futures.Future() for _ in items]
            for k, i in enumerate(starts):
                runtime.charm.thisProxy[workers[k % len(workers)]]._pool_run(func, k, items[i:i + step], None,
                                                                     futs[i:i + step])
            return futs
        fut = _PoolFuture(len(starts))
        for k, i in enumerate(starts):
            runtime.charm.thisProxy[workers[k % len(workers)]]._pool_run(func, k, items[i:i + step], fut, None)
        return fut

    def submit(self, tasks, chunksize=1, ncores=-1, allow_nested=False):
        """tasks: (function, argument) pairs; the list of function(argument)."""
        return self.map(_apply_pair, tasks, chunksize, ncores)

    def submit_async(self, tasks, chunksize=1, ncores=-1, multi_future=False, allow_nested=False):
        return self.map_async(_apply_pair, tasks, chunksize, ncores, multi_future)

    def Task(self, func, args=(), ret=False, awaitable=False):
        """func(*args) on some PE; a Future of its result with ret=True (or awaitable=True)."""
        workers = self._workers(-1)
        pe = workers[self._next % len(workers)]
        self._next += 1
        fut = futures.Future() if (ret or awaitable) else None
        runtime.charm.thisProxy[pe]._pool_task(func, list(args), fut)
        return fut


class _PoolFuture(futures.Future):
    """The chunks' results, in order, as one list; a task's exception is raised by get()."""

    def get(self):
        if self._n == 0:
            return []
        parts = super().get() if self._n != 1 else [super().get()]
        out = []
        for _, res in sorted(parts, key=lambda p: p[0]):
            if isinstance(res, futures._RemoteException):
                raise res.exc
            out.extend(res)
        return out


def _apply_pair(task):
    func, arg = task
    return func(arg)
