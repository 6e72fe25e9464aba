"""How an entry method runs: the calls _core's fast path leaves (futures, broadcasts,
coroutines, @when), held @when calls and Chare.wait, replies, and what an exception or
sys.exit in user code does.
"""
import pickle
import sys
import traceback

from . import _core, _wire, channel, coroutines, futures
from . import charm as runtime  # cycle: used at call time


entry_kind = {}  # function -> 0 plain, 1 coroutine or @when (the slow path)


def invoke_slow(obj, msg, t, bufs):
    """Entry messages _core's fast path leaves: futures, broadcasts, coroutines, @when,
    channel data, first calls of a method."""
    if t[0] != _wire.CALL:
        channel.channel_message(obj, t, bufs if bufs is not None else _core.parse(msg, False)[1])
        return
    _, name, args, kwargs, fut, bcast = t
    # A broadcast's message is shared by this PE's elements: each gets its own buffers.
    if bcast and bufs:
        head, bufs = _core.parse(msg, True)
        t = pickle.loads(head, buffers=bufs)
        args, kwargs = t[2], t[3]
    if "_ck_held" in obj.__dict__ and "_ck_pending_init" in obj.__dict__:  # ckInsert(onPE=): chare.py
        obj._ck_held.append((name, args, kwargs or {}, fut, bcast))
        return
    fn = getattr(type(obj), name, None)
    if fn not in entry_kind:
        if fn is None or not callable(fn):
            raise AttributeError(f"chare class {type(obj).__name__} has no entry method {name!r}")
        entry_kind[fn] = 1 if (getattr(fn, "_ck_coro", False) or getattr(fn, "_ck_when", None)) else 0
    _call(obj, fn, args, kwargs or {}, fut, bcast)


def _call(obj, fn, args, kwargs, fut, bcast):
    cond = getattr(fn, "_ck_when", None)
    if cond is not None:
        eq = fn._ck_when_eq
        if eq is not None:
            key = coroutines.when_key(fn, args, kwargs)
            if getattr(obj, eq[0]) != key:
                if obj._ck_when_by_value is None:
                    obj._ck_when_by_value = {}
                obj._ck_when_by_value.setdefault((fn, key), []).append((args, kwargs, fut, bcast))
                obj._ck_when_eq_fns.add(fn)
                return
        elif not _when_true(obj, fn, args, kwargs):
            if obj._ck_when is None:
                obj._ck_when = []
            obj._ck_when.append((fn.__name__, args, kwargs, fut, bcast))
            return
    _run(obj, fn, args, kwargs, fut, bcast)
    after_entry(obj)


def _when_true(obj, fn, args, kwargs):
    ns = fn._ck_sig.bind(obj, *args, **kwargs).arguments
    return eval(fn._ck_when, sys.modules[type(obj).__module__].__dict__, ns)


def _next_released(obj):
    """The first held @when call whose condition is now true, taken off its list:
    (fn, args, kwargs, fut, bcast), or None."""
    if obj._ck_when_by_value:
        for fn in obj._ck_when_eq_fns:
            key = (fn, getattr(obj, fn._ck_when_eq[0]))
            held = obj._ck_when_by_value.get(key)
            if held:
                args, kwargs, fut, bcast = held.pop(0)
                if not held:
                    del obj._ck_when_by_value[key]
                return fn, args, kwargs, fut, bcast
    if obj._ck_when:
        for i, (name, args, kwargs, fut, bcast) in enumerate(obj._ck_when):
            fn = getattr(type(obj), name)
            if _when_true(obj, fn, args, kwargs):
                del obj._ck_when[i]
                return fn, args, kwargs, fut, bcast
    return None


def after_entry(obj):
    """Runs what a change of the chare's state may have released: held @when calls (in
    arrival order) and coroutines in Chare.wait. Not re-entered for one chare: what runs
    here changes the state again, and this loop looks again until nothing moves."""
    if obj._ck_busy:
        return
    obj._ck_busy = True
    try:
        progress = True
        while progress:
            progress = False
            held = _next_released(obj)
            if held is not None:
                _run(obj, *held)
                progress = True
                continue
            if obj._ck_waiting:
                waiting, obj._ck_waiting = obj._ck_waiting, []
                for g in waiting:
                    coroutines.resume(g)
                # A waiter whose condition is still false queued itself again.
                progress = len(obj._ck_waiting) < len(waiting)
    finally:
        obj._ck_busy = False


def _reply(fut, obj, value, bcast):
    if fut is not None:
        fut.send((obj.thisIndex, value) if bcast else value)


def _run(obj, fn, args, kwargs, fut, bcast):
    if getattr(fn, "_ck_coro", False):
        coroutines.spawn(_run_body, obj, fn, args, kwargs, fut, bcast, obj=obj)
    else:
        _run_body(obj, fn, args, kwargs, fut, bcast)


def _run_body(obj, fn, args, kwargs, fut, bcast):
    try:
        value = fn(obj, *args, **kwargs)
    except SystemExit as e:
        handle_exit(e)
        return
    except BaseException as e:
        if fut is None:
            die(f"in entry method {type(obj).__name__}.{fn.__name__}")
        sys.stderr.write(f"ucharm: PE {_core.my_pe()}: {type(obj).__name__}.{fn.__name__} raised "
                         f"{type(e).__name__}: {e} (passed to the caller's future)\n")
        value = futures._RemoteException(e, traceback.format_exc())
    _reply(fut, obj, value, bcast)
    if getattr(fn, "_ck_coro", False):
        after_entry(obj)


def die(where):
    sys.stdout.flush()
    sys.stderr.write(f"ucharm: PE {_core.my_pe()}: Python exception {where}:\n{traceback.format_exc()}")
    sys.stderr.flush()
    _core.abort("a Python exception ended the job (traceback above)")


def handle_exit(e):
    """SystemExit (sys.exit(), exit()) in an entry method ends the whole job."""
    if not isinstance(e, SystemExit):
        return False
    code = e.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    runtime.charm.exit(code)
    return True
