"""Timers: charm.scheduleCallableAfter(callable, secs, args) and charm.sleep(secs).

Pending timers are a heap on this PE; _core runs run_due() from a scheduler poller once
the earliest deadline has passed (see _core.pyx, timers), between messages, so a
callable never interrupts an entry method and fires at the earliest `secs` later.
"""
import heapq
import itertools
import time

from greenlet import getcurrent

from . import _core, coroutines

_heap = []  # (deadline, sequence, callable, args)
_seq = itertools.count()


def schedule(fn, secs, args):
    if not callable(fn):
        raise TypeError(f"charm.scheduleCallableAfter: {fn!r} is not callable (give a function, a Future "
                        "or a proxy method)")
    secs = float(secs)
    if secs < 0:
        raise ValueError(f"charm.scheduleCallableAfter: secs must be >= 0, not {secs}")
    deadline = _core.wall_time() + secs
    heapq.heappush(_heap, (deadline, next(_seq), fn, tuple(args) if args is not None else ()))
    _core.set_timer(_heap[0][0], run_due)


def run_due():
    now = _core.wall_time()
    # What a callable schedules now waits for a later turn, even with secs=0: a callable
    # that reschedules itself cannot keep the PE from its messages.
    due = []
    while _heap and _heap[0][0] <= now:
        due.append(heapq.heappop(_heap))
    _core.set_timer(_heap[0][0] if _heap else -1.0, run_due)
    for _, _, fn, args in due:
        try:
            fn(*args)
        except SystemExit:
            raise
        except BaseException:
            from . import _invoke
            _invoke.die(f"in {getattr(fn, '__qualname__', fn)!r}, scheduled with charm.scheduleCallableAfter")


def sleep(secs):
    """In a coroutine: suspends it for at least `secs` seconds while the PE runs other
    work. Elsewhere (a plain entry method, outside the runtime): time.sleep."""
    g = getcurrent()
    if not getattr(g, "_ck_coro", False):
        time.sleep(secs)
        return
    schedule(coroutines.resume, secs, (g,))
    coroutines.suspend("charm.sleep()")
