"""Futures: values sent from any PE to a future of this PE, read with get() in a
coroutine (channel transfers complete without them: _core.Request). Each is a core future with a handler (_core.new_future); its values arrive as
raw messages that charm.py's hook unpickles and hands to deliver().
"""
import pickle

from greenlet import getcurrent

from . import _core, _wire, coroutines


class RemoteError(Exception):
    """Raised by get() in place of an exception of another PE that could not travel (it
    could not be pickled there or unpickled here): its type, text and traceback."""

    def __init__(self, type_name, text, where):
        super().__init__(f"{type_name}: {text}\n(raised on another PE, which could not send it as it is; "
                         f"its traceback:)\n{where}")
        self.type_name, self.text, self.where = type_name, text, where

    def __reduce__(self):
        return (RemoteError, (self.type_name, self.text, self.where))


class _RemoteException:
    """An exception raised where a future's value was computed, sent in its place. It
    travels as its own pickle inside this one, so that an exception that cannot be
    unpickled here (or pickled there) arrives as a RemoteError instead of ending the job."""

    def __init__(self, exc, where):
        self.exc = exc
        self.where = where

    def __reduce__(self):
        try:
            blob = pickle.dumps(self.exc, _wire.PROTOCOL)
        except Exception:
            blob = None
        return (_remote_exception, (blob, type(self.exc).__qualname__, str(self.exc), self.where))


def _remote_exception(blob, type_name, text, where):
    exc = None
    if blob is not None:
        try:
            exc = pickle.loads(blob)
        except Exception:
            exc = None
    if exc is None:
        exc = RemoteError(type_name, text, where)
    return _RemoteException(exc, where)


registry = {}  # fid -> Future or Op, on this PE


class Future:
    """A value (or num_vals values) sent from anywhere, read here with get()."""

    def __init__(self, num_vals=1):
        self.pe = _core.my_pe()
        self.fid = _core.new_future()
        self._n = num_vals
        self._vals = []
        self._waiter = None
        self._by_index = False  # values are (index, value): get() sorts them (broadcast ret)
        self._only_done = False  # awaitable=True: get() says when, with None
        registry[self.fid] = self

    # -- producer side (any PE, through a pickled copy)
    def send(self, value=None):
        send_future(self.pe, self.fid, value)

    __call__ = send

    # -- owner side
    def ready(self):
        return len(self._vals) >= self._n

    def get(self):
        if self.pe != _core.my_pe():
            raise RuntimeError(f"Future.get on PE {_core.my_pe()}, but the future belongs to PE {self.pe}")
        while not self.ready():
            self._waiter = getcurrent()
            try:
                coroutines.suspend("Future.get()")
            finally:
                self._waiter = None
        vals = self._vals
        for v in vals:
            if isinstance(v, _RemoteException):
                raise v.exc
            if self._by_index and self._only_done and isinstance(v[1], _RemoteException):
                raise v[1].exc
        if self._only_done:
            return None
        if self._by_index:
            # A broadcast's ret=True list holds the exception of each element that raised one
            # (charm4py's behaviour).
            return [v.exc if isinstance(v, _RemoteException) else v
                    for _, v in sorted(vals, key=_index_order)]
        return vals[0] if self._n == 1 else list(vals)

    def _deliver(self, value):
        self._vals.append(value)
        if len(self._vals) == self._n:
            registry.pop(self.fid, None)
            _core.release_future(self.fid)
        waiter = self._waiter
        if waiter is not None and self.ready():
            self._waiter = None
            coroutines.resume(waiter)

    def __reduce__(self):
        return (_future_at, (self.pe, self.fid, self._n))


def _index_order(p):
    # Index order; a section combined from groups and arrays mixes PEs and tuples: PEs first.
    return (isinstance(p[0], tuple), p[0])


class _FutureRef:
    """A future of another PE (or an already-read one): it can only be sent to."""

    def __init__(self, pe, fid, n):
        self.pe, self.fid, self._n = pe, fid, n

    def send(self, value=None):
        send_future(self.pe, self.fid, value)

    __call__ = send

    def get(self):
        raise RuntimeError(f"Future.get on PE {_core.my_pe()}, but the future belongs to PE {self.pe}")

    def __reduce__(self):
        return (_future_at, (self.pe, self.fid, self._n))


def _future_at(pe, fid, n):
    if pe == _core.my_pe():
        f = registry.get(fid)
        if f is not None:
            return f
    return _FutureRef(pe, fid, n)


def send_future(pe, fid, value):
    head, bufs = _wire.dumps_checked(value, "Future.send")
    _core.send_future(pe, fid, head, bufs)


class CallbackFuture(Future):
    """A future that calls `target()` when its value arrives (quiescence callbacks)."""

    def __init__(self, target):
        super().__init__()
        self.target = target

    def _deliver(self, value):
        super()._deliver(value)
        self.target()
