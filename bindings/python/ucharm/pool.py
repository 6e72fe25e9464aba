"""charm.pool: charm4py's task pool over the runtime's group (CharmRemote's _pool_run and
_pool_task entry methods do the work on the worker PEs).
"""
import traceback

from . import _core, coroutines, futures
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

    def map(self, func, iterable, chunksize=1, ncores=-1, allow_nested=False, is_ray=False):
        return self.map_async(func, iterable, chunksize, ncores, is_ray=is_ray).get()

    def map_async(self, func, iterable, chunksize=1, ncores=-1, multi_future=False, allow_nested=False,
                  is_ray=False):
        """is_ray=True (charm4py's name): items that are futures of this PE (another map_async's
        results) or ucharm.ray ObjectRefs stand for their values; a task runs once they are
        there. Otherwise items go to the tasks as they are (a future stays a future)."""
        items = list(iterable)
        workers = self._workers(ncores)
        step = max(1, chunksize)
        starts = range(0, len(items), step)
        futs = [futures.Future() for _ in items] if multi_future else None
        fut = None if multi_future else _PoolFuture(len(starts))
        for k, i in enumerate(starts):
            chunk = items[i:i + step]
            args = (func, k, chunk, fut, futs[i:i + step] if multi_future else None)
            pe = workers[k % len(workers)]
            if is_ray and any(_is_ref(x) for x in chunk):
                coroutines.spawn(_run_resolved, pe, args)
            else:
                runtime.charm.thisProxy[pe]._pool_run(*args)
        return futs if multi_future else fut

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


def _is_ref(x):
    from .ray.api import ObjectRef
    return isinstance(x, (futures.Future, futures._FutureRef, ObjectRef))


def _resolved(x):
    if isinstance(x, futures.Future):
        return x.get()  # one of this PE's: a coroutine waits for it
    if isinstance(x, futures._FutureRef):
        raise ValueError(f"charm.pool (is_ray=True): a future of PE {x.pe} stands for a task's argument, but only "
                         f"futures of the calling PE ({_core.my_pe()}) and ray ObjectRefs can be waited for here")
    if _is_ref(x):
        from .ray import api
        return api.get(x)
    return x


def _run_resolved(pe, args):
    """A coroutine on the calling PE: waits for the chunk's futures, then sends it to its
    worker; a failed dependency becomes the result of the tasks that needed it."""
    func, k, chunk, fut, futs = args
    try:
        chunk = [_resolved(x) for x in chunk]
    except Exception as e:
        err = futures._RemoteException(e, traceback.format_exc())
        if futs is not None:
            for f in futs:
                f.send(err)
        else:
            fut.send((k, err))
        return
    runtime.charm.thisProxy[pe]._pool_run(func, k, chunk, fut, futs)
