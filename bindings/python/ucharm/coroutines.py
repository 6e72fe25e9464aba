"""Coroutines (@coro, charm4py's @threaded) and @when.

Coroutines are greenlets: one that waits on a future or a channel switches back to the
greenlet that resumed it, and the scheduler resumes it when the value arrives.
"""
import inspect
import re

from greenlet import greenlet, getcurrent

from . import _core, _invoke


def suspend(what):
    """Suspends the running coroutine until resume(it); returns what resume passes."""
    g = getcurrent()
    if not getattr(g, "_ck_coro", False):
        raise RuntimeError(f"{what} would block outside a coroutine: call it from the main function or "
                           "from an entry method decorated with @coro")
    return g.parent.switch()


def resume(g, value=None):
    g.parent = getcurrent()  # back here when it waits again or ends
    r = g.switch(value)
    # The coroutine ran on: its chare's state changed, so @when calls held for it and
    # Chare.wait conditions are checked again.
    obj = g._ck_obj
    if obj is not None and (obj._ck_when or obj._ck_waiting or obj._ck_when_by_value):
        _invoke.after_entry(obj)
    return r


# Channel transfers complete in _core (Request), which suspends and resumes as suspend()
# and resume() do (in C), and calls _invoke.after_entry as resume() does.
_core.set_coroutines(lambda obj: _invoke.after_entry(obj))


def spawn(fn, *args, obj=None):
    """Runs fn(*args) as a coroutine now, until it ends or first waits; `obj`: the chare
    it runs for."""
    g = greenlet(fn)
    g._ck_coro = True
    g._ck_obj = obj
    r = g.switch(*args)
    if obj is not None and not g.dead:  # it waits: the object may not migrate meanwhile
        w = obj._ck_suspended
        if len(w) >= 64:
            w[:] = [x for x in w if not x.dead]
        w.append(g)
    return r


def coro(fn):
    """An entry method that may wait (Future.get, Channel.recv, charm.iwait...)."""
    fn._ck_coro = True
    return fn


threaded = coro


def when(cond):
    """Runs the entry method only once `cond` (a Python expression over self and the
    method's parameters) is true; calls that arrive earlier wait in order."""
    def deco(fn):
        fn._ck_when = compile(cond, f"<when {cond!r} of {fn.__qualname__}>", "eval")
        fn._ck_sig = inspect.signature(fn)
        # The common form `self.attr == param` (either way round) is kept by value: a held
        # call is found with one dict lookup, not by evaluating every held call's condition.
        fn._ck_when_eq = None
        m = (re.fullmatch(r"\s*self\.(\w+)\s*==\s*(\w+)\s*", cond) or
             re.fullmatch(r"\s*(\w+)\s*==\s*self\.(\w+)\s*", cond))
        if m:
            attr, param = m.groups() if cond.strip().startswith("self.") else m.groups()[::-1]
            params = list(fn._ck_sig.parameters.values())[1:]
            names = [q.name for q in params]
            if param in names:
                q = params[names.index(param)]
                default = q.default if q.default is not inspect.Parameter.empty else _NO_DEFAULT
                fn._ck_when_eq = (attr, param, names.index(param), default)
        return fn
    return deco


_NO_DEFAULT = object()


def when_key(fn, args, kwargs):
    """The value of the parameter that `self.attr == param` compares, as the call gives it
    (by position or name) or its default."""
    _, param, pos, default = fn._ck_when_eq
    if pos < len(args):
        return args[pos]
    value = kwargs.get(param, default)
    if value is _NO_DEFAULT:
        raise TypeError(f"{fn.__qualname__}() missing the argument {param!r} that its @when condition needs")
    return value
