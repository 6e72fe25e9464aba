"""Checkpoint and restart (charm.checkpoint, a run started with `+restart DIR`).

The core writes the checkpoint (runtime/core/checkpoint.cpp): it waits for quiescence,
then saves every chare (array elements, group branches, singleton chares, the main chare)
through its pup(), which for a Python chare is its pickle (migration.pack with
for_checkpoint=True), and the embedder's readonly string, which here holds what the
Python side needs again at restart: the runtime's group (charm.thisProxy), the readonlies
(`ro` attributes) and the pickled `resume` callable. A run started with `+restart DIR`
does not call the program's main: the core rebuilds every chare (classes found again by
module and qualified name, through pickle), the readonly hook (charm.py) restores the
readonlies, and once everything is back (quiescence) PE 0 calls `resume()` in a
coroutine.

Coroutines are not saved (a greenlet's stack cannot be pickled): a chare may be
checkpointed while its only waiting coroutine is the one waiting for the checkpoint's
future; any other waiting coroutine is an error that names the chare. What the program
needs to go on after a restart lives in the chares' attributes and in `resume`.
"""
import itertools
import pickle
import time

from . import _core, _wire, futures

_pending = []      # this PE's futures of checkpoints in progress (their waiters may be saved)
_resume = None     # restarting: the pickled resume callable of the checkpoint (every PE)


class RestartInfo:
    """charm.restartInfo(): how this run started. restarted: with +restart; old_num_pes:
    the PE count that wrote the checkpoint; dir: its directory."""

    def __init__(self, info):
        self.restarted = info is not None
        self.old_num_pes, self.dir = info if info is not None else (0, None)

    def __repr__(self):
        return (f"RestartInfo(restarted={self.restarted}, old_num_pes={self.old_num_pes}, "
                f"dir={self.dir!r})")


def checkpoint(directory, resume=None):
    """charm.checkpoint(dir, resume=None): see charm.py."""
    if not isinstance(directory, str) or not directory:
        raise TypeError(f"charm.checkpoint: give a directory (a non-empty str), not {directory!r}")
    if resume is not None and not callable(resume):
        raise TypeError(f"charm.checkpoint: resume must be a proxy method or a module-level function "
                        f"(called with no arguments after a restart), not {resume!r}")
    try:
        blob = pickle.dumps(resume, _wire.PROTOCOL)
    except Exception as e:
        raise TypeError(f"charm.checkpoint: resume={resume!r} cannot be pickled ({type(e).__name__}: {e}); "
                        "give a proxy method (self.thisProxy.resume) or a function defined at module level "
                        "(functools.partial of one, with picklable arguments, works too)") from e
    f = _CheckpointFuture()
    _pending.append(f)
    from .charm import charm  # (a cycle: used at call time)
    if _core.my_pe() == 0:
        begin(directory, blob, f)
    else:
        charm.thisProxy[0]._ck_checkpoint(directory, blob, f)
    return f


def begin(directory, resume_blob, fut):
    """PE 0: what the Python side restores goes into the core's embedder readonly value,
    which the checkpoint saves; then the core's checkpoint starts."""
    from .charm import charm
    from . import readonly
    value = (charm.thisProxy, dict(vars(readonly.readonlies)), resume_blob)
    _core.set_readonly(pickle.dumps(value, _wire.PROTOCOL))
    _core.start_checkpoint(directory, fut.pe, fut.fid)


class _CheckpointFuture(futures.Future):
    """Gets None once the checkpoint is on disk (never in a restarted run: futures are not
    saved)."""

    def _deliver(self, value):
        if self in _pending:
            _pending.remove(self)
        super()._deliver(value)


def check_can_save(obj):
    """Before a chare is pickled into a checkpoint: no coroutine of it waits, except on a
    checkpoint's future (it is lost; `resume` goes on after a restart)."""
    waiters = {f._waiter for f in _pending if f._waiter is not None}
    waiting = [g for g in obj._ck_suspended if not g.dead and g not in waiters]
    if waiting or obj._ck_waiting:
        from .migration import _name
        raise RuntimeError(f"{_name(obj)} cannot be checkpointed while {max(len(waiting), 1)} coroutine(s) of it "
                           "wait (Future.get, Channel.recv, Chare.wait...): a checkpoint saves attributes, not "
                           "coroutines; checkpoint where the only waiting coroutine is the one waiting for "
                           "charm.checkpoint's future")
    from . import channel
    held = channel.pinned(obj)
    if held:
        from .migration import _name
        raise RuntimeError(f"{_name(obj)} cannot be checkpointed: its channel to {held[0]._remote!r} has carried "
                           "device arrays or zero-copy host buffers (the core's channel end is not saved); "
                           "checkpoint programs whose channels carry host data (NumPy arrays)")


def restored(blob):
    """Every PE, restarting: the resume callable kept for PE 0's restarted(). Sections made
    from now on get ids no section of the checkpoint has (their counters were not saved):
    numbered from the time in ms times 2**20."""
    global _resume
    _resume = blob
    from . import sections
    sections._next_sid = itertools.count(int(time.time() * 1000) << 20)


def restarted():
    """PE 0, once every chare of the checkpoint is back: resume() in a coroutine."""
    from . import coroutines, _invoke
    info = _core.restart_info()
    where = info[1] if info else "?"
    if _resume is None:
        raise RuntimeError(f"+restart {where}: the checkpoint was written without its Python state")
    try:
        fn = pickle.loads(_resume)
    except Exception as e:
        raise RuntimeError(f"+restart {where}: the checkpoint's resume callable cannot be found again "
                           f"({type(e).__name__}: {e}): it must be defined by this program at module level") from e
    if fn is None:
        raise RuntimeError(f"+restart {where}: the checkpoint names nothing to resume: pass "
                           "charm.checkpoint(dir, resume=...) a proxy method or a module-level function that goes "
                           "on from the saved state")

    def body():
        try:
            fn()
        except SystemExit as e:
            _invoke.handle_exit(e)
        except BaseException:
            _invoke.die("in the resume callable after a restart")
    coroutines.spawn(body)
