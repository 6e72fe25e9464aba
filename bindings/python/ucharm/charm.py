"""charm4py's programming model over the ucharm core.

How a call travels: `proxy[i].work(x)` pickles (entry name, arguments) with pickle
protocol 5, the contiguous buffers of NumPy arrays and other buffer-protocol objects out
of band; _core.send copies the pickle and the buffers once into a Converse message
addressed to the element's raw entry (the core routes it to the element's PE). There the
core hands the message to invoke(), which unpickles it, NumPy arrays aliasing the message,
and calls the method. Coroutines (@coro) are greenlets: a coroutine that waits on a future
or a channel switches back to the greenlet that resumed it, and the scheduler resumes it
when the value arrives.
"""
import array as _array
import inspect
import os
import re
import pickle
import sys
import traceback

from greenlet import greenlet, getcurrent

from . import _core

_P = pickle.HIGHEST_PROTOCOL if pickle.HIGHEST_PROTOCOL >= 5 else 5
_ZERO_COPY_MIN = 64 * 1024   # channel buffers this large travel zero-copy, not inside a message

# ---- message kinds (first field of every message head) ----------------------------------
_CALL, _CHANNEL = 0, 1


def _dumps(obj):
    """(pickle, out-of-band buffers) of obj; non-contiguous buffers stay in band."""
    bufs = []

    def oob(pb):
        try:
            bufs.append(pb.raw())
            return False
        except BufferError:
            return True
    return pickle.dumps(obj, _P, buffer_callback=oob), bufs


def _dumps_checked(obj, what):
    try:
        return _dumps(obj)
    except Exception as e:
        raise TypeError(f"{what}: an argument cannot be pickled: {e}") from e


# ---- coroutines -------------------------------------------------------------------------
def _suspend(what):
    """Suspends the running coroutine until _resume(it); returns what _resume passes."""
    g = getcurrent()
    if not getattr(g, "_ck_coro", False):
        raise RuntimeError(f"{what} would block outside a coroutine: call it from the main function or "
                           "from an entry method decorated with @coro")
    return g.parent.switch()


def _resume(g, value=None):
    g.parent = getcurrent()  # back here when it waits again or ends
    r = g.switch(value)
    # The coroutine ran on: its chare's state changed, so @when calls held for it and
    # Chare.wait conditions are checked again.
    obj = g._ck_obj
    if obj is not None and (obj._ck_when or obj._ck_waiting or obj._ck_when_by_value):
        _after_entry(obj)
    return r


def _spawn(fn, *args, obj=None):
    """Runs fn(*args) as a coroutine now, until it ends or first waits; `obj`: the chare
    it runs for."""
    g = greenlet(fn)
    g._ck_coro = True
    g._ck_obj = obj
    return g.switch(*args)


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
            names = list(fn._ck_sig.parameters)[1:]
            if param in names:
                fn._ck_when_eq = (attr, param, names.index(param))
        return fn
    return deco


def _when_key(fn, args, kwargs):
    _, param, pos = fn._ck_when_eq
    return args[pos] if pos < len(args) else kwargs[param]


# ---- futures --------------------------------------------------------------------------
class _RemoteException:
    def __init__(self, exc, where):
        self.exc = exc
        self.where = where


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
        _futures[self.fid] = self

    # -- producer side (any PE, through a pickled copy)
    def send(self, value=None):
        _send_future(self.pe, self.fid, value)

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
                _suspend("Future.get()")
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
                    for _, v in sorted(vals, key=lambda p: p[0])]
        return vals[0] if self._n == 1 else list(vals)

    def _deliver(self, value):
        self._vals.append(value)
        if len(self._vals) == self._n:
            _futures.pop(self.fid, None)
            _core.release_future(self.fid)
        waiter = self._waiter
        if waiter is not None and self.ready():
            self._waiter = None
            _resume(waiter)

    def __reduce__(self):
        return (_future_at, (self.pe, self.fid, self._n))


class _FutureRef:
    """A future of another PE (or an already-read one): it can only be sent to."""

    def __init__(self, pe, fid, n):
        self.pe, self.fid, self._n = pe, fid, n

    def send(self, value=None):
        _send_future(self.pe, self.fid, value)

    __call__ = send

    def get(self):
        raise RuntimeError(f"Future.get on PE {_core.my_pe()}, but the future belongs to PE {self.pe}")

    def __reduce__(self):
        return (_future_at, (self.pe, self.fid, self._n))


def _future_at(pe, fid, n):
    if pe == _core.my_pe():
        f = _futures.get(fid)
        if f is not None:
            return f
    return _FutureRef(pe, fid, n)


def _send_future(pe, fid, value):
    head, bufs = _dumps_checked(value, "Future.send")
    _core.send_future(pe, fid, head, bufs)


_futures = {}  # fid -> Future or _Op, on this PE


class _Op:
    """A channel transfer in flight; its completion arrives as a core future value."""
    __slots__ = ("fid", "done", "waiter", "keep")

    def __init__(self, keep=None):
        self.fid = _core.new_future()
        self.done = False
        self.waiter = None
        self.keep = keep  # the buffer, alive until the transfer is done
        _futures[self.fid] = self

    def _deliver(self, value):
        self.done = True
        self.keep = None
        _futures.pop(self.fid, None)
        _core.release_future(self.fid)
        if self.waiter is not None:
            w, self.waiter = self.waiter, None
            _resume(w)

    def wait(self, what):
        while not self.done:
            self.waiter = getcurrent()
            try:
                _suspend(what)
            finally:
                self.waiter = None


# ---- reducers ---------------------------------------------------------------------------
def _elementwise(op, a, b):
    if isinstance(a, _array.array):
        if len(a) != len(b):
            raise ValueError(f"reduction: contributions of different lengths ({len(a)} and {len(b)})")
        return _array.array(a.typecode, (op(x, y) for x, y in zip(a, b)))
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            raise ValueError(f"reduction: contributions of different lengths ({len(a)} and {len(b)})")
        return type(a)(_elementwise(op, x, y) for x, y in zip(a, b))
    return op(a, b)


def _fold(op, contribs):
    r = contribs[0]
    for c in contribs[1:]:
        r = _elementwise(op, r, c)
    return r


def _np_or(npname, scalar):
    def op(a, b):
        if hasattr(a, "__array__") and not isinstance(a, (int, float, bool)):
            import numpy
            return getattr(numpy, npname)(a, b)
        return scalar(a, b)
    return op


def _sum(contribs):
    return _fold(lambda a, b: a + b, contribs)


def _product(contribs):
    return _fold(lambda a, b: a * b, contribs)


def _max(contribs):
    return _fold(_np_or("maximum", max), contribs)


def _min(contribs):
    return _fold(_np_or("minimum", min), contribs)


def _logical_and(contribs):
    return _fold(_np_or("logical_and", lambda a, b: bool(a and b)), contribs)


def _logical_or(contribs):
    return _fold(_np_or("logical_or", lambda a, b: bool(a or b)), contribs)


def _logical_xor(contribs):
    return _fold(_np_or("logical_xor", lambda a, b: bool(a) != bool(b)), contribs)


def _gather(contribs):  # combined specially: lists of (index, value)
    raise AssertionError("gather is combined by the runtime")


def _nop(contribs):
    return None


class Reducer:
    """charm4py's reducers. A reducer is a function taking a list of contributions and
    returning their combination; addReducer(f, pre=None, post=None) adds one (f must be a
    module-level function, as pickle needs)."""
    sum = staticmethod(_sum)
    product = staticmethod(_product)
    max = staticmethod(_max)
    min = staticmethod(_min)
    logical_and = staticmethod(_logical_and)
    logical_or = staticmethod(_logical_or)
    logical_xor = staticmethod(_logical_xor)
    gather = staticmethod(_gather)
    nop = staticmethod(_nop)
    _pre = {}
    _post = {}

    @staticmethod
    def addReducer(func, pre=None, post=None):
        setattr(Reducer, func.__name__, staticmethod(func))
        if pre is not None:
            Reducer._pre[func] = pre
        if post is not None:
            Reducer._post[func] = post


def _reducer_name(r):
    return getattr(r, "__name__", repr(r))


def _combine(a, b):
    ra, ta, pa = pickle.loads(a)
    rb, tb, pb = pickle.loads(b)
    if ra is not rb:
        raise ValueError(f"reduction: contributions with different reducers ({_reducer_name(ra).lstrip('_')} "
                         f"and {_reducer_name(rb).lstrip('_')}) in one round")
    if ra is _gather:
        p = pa + pb
    elif ra is None or ra is _nop:
        p = None
    else:
        p = ra([pa, pb])
    return pickle.dumps((ra, ta, p), _P)


def _finish(blob):
    """(target, value) of a complete reduction."""
    r, target, p = pickle.loads(blob)
    if r is _gather:
        value = [v for _, v in sorted(p, key=lambda q: q[0])]
    elif r is None or r is _nop:
        value = None
    else:
        post = Reducer._post.get(r)
        value = post(p) if post else p
    return target, value, (r is None or r is _nop)


# ---- proxies ----------------------------------------------------------------------------
_Method = _core.BoundEntry  # proxy.method


def _check_entry(cls, name):
    if cls is not None and not callable(getattr(cls, name, None)):
        raise AttributeError(f"chare class {cls.__name__} has no entry method {name!r}")


class Proxy:
    # No __slots__: an entry method, once looked up, is kept in the instance's __dict__,
    # so that the next `proxy.m` is a plain attribute read.

    def __getattr__(self, name):
        # Called only for names that are not attributes yet: entry methods.
        if name[:2] == "__" or name in _PROXY_SLOTS:
            raise AttributeError(name)
        _check_entry(self._cls, name)
        m = self.__dict__[name] = _Method(self, name)
        return m

    def __eq__(self, other):
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self):
        return hash(self._key())


class ElementProxy(Proxy):
    """One element: a singleton chare, a group member or an array element."""

    def __init__(self, cls, ref, idx):
        self._cls, self._ref, self._idx = cls, ref, idx  # idx: None, ("pe", n) or a tuple

    def _key(self):
        # The collection id, not the reference's bytes (their padding is not defined).
        return (_core.ref_id(self._ref), self._idx)

    def _ck_call(self, name, args, kwargs, want):
        fut = None
        if want:
            fut = Future()
            fut._only_done = want == 1
        head, bufs = _dumps_call((_CALL, name, args, kwargs or None, fut, False), self._cls, name)
        _core.send(self._ref, self._idx, head, bufs)
        return fut

    def ckLocal(self):
        return _local.get((_core.ref_id(self._ref), _norm(self._idx)))

    def __getitem__(self, idx):
        # A singleton chare's proxy indexed by its only index, as in charm4py.
        if self._idx is None and idx in (0, (0,)):
            return self
        raise TypeError(f"{self!r} is the proxy of one element: it cannot be indexed by {idx!r}")

    def __reduce__(self):
        return (ElementProxy, (self._cls, self._ref, self._idx))

    def __repr__(self):
        return f"<proxy to {_clsname(self._cls)} {self._idx}>"


class CollectionProxy(Proxy):
    """All elements of a group or array: calls are broadcasts."""
    def __init__(self, cls, ref, kind, shape=None, creation=None):
        self._cls, self._ref, self._kind, self._shape = cls, ref, kind, shape
        self._creation = creation
        self._elems = {}  # index -> ElementProxy (`self.thisProxy[i].m()` in a loop)

    def _key(self):
        return _core.ref_id(self._ref)

    def _count(self):
        if self._kind == "group":
            return _core.num_pes()
        if self._shape is None:
            raise ValueError("ret=True on a broadcast to an array filled by insertion: its size is not known")
        n = 1
        for d in self._shape:
            n *= d
        return n

    def _ck_call(self, name, args, kwargs, want):
        fut = None
        if want:
            fut = Future(self._count())
            fut._by_index = True
            fut._only_done = want == 1
        head, bufs = _dumps_call((_CALL, name, args, kwargs or None, fut, True), self._cls, name)
        _core.broadcast(self._ref, head, bufs)
        return fut

    def __getitem__(self, idx):
        if type(idx) is list:
            idx = tuple(idx)
        p = self._elems.get(idx)
        if p is None:
            p = self._element(idx)
            if len(self._elems) < 4096:
                self._elems[idx] = p
        return p

    def _element(self, idx):
        if self._kind == "group":
            if not isinstance(idx, int) or not 0 <= idx < _core.num_pes():
                raise IndexError(f"group element {idx!r} is out of range [0, {_core.num_pes()})")
            return ElementProxy(self._cls, self._ref, ("pe", idx))
        t = (idx,) if isinstance(idx, int) else tuple(idx)
        if not all(isinstance(x, int) for x in t):
            raise IndexError(f"chare array index {idx!r}: use ints or a tuple of ints")
        if self._shape is not None:
            if len(t) != len(self._shape) or any(not 0 <= x < n for x, n in zip(t, self._shape)):
                raise IndexError(f"index {idx!r} is outside the chare array's bounds {self._shape}")
        elif len(t) != self._ndims_dynamic():
            raise IndexError(f"index {idx!r} has {len(t)} dimensions; the array has {self._ndims_dynamic()}")
        return ElementProxy(self._cls, self._ref, t)

    def _ndims_dynamic(self):
        return self._kind[1] if isinstance(self._kind, tuple) else 1

    def ckLocalBranch(self):
        return _local.get((_core.ref_id(self._ref), _core.my_pe()))

    def ckInsert(self, index, args=None, onPE=-1):
        if self._shape is not None:
            raise ValueError("ckInsert: this array was created with a fixed size; create it with "
                             "Array(C, ndims=N) to insert elements")
        if onPE != -1:
            raise NotImplementedError("ckInsert(onPE=...) is not supported: elements go to the PE their "
                                      "index hashes to")
        t = (index,) if isinstance(index, int) else tuple(index)
        if len(t) != self._ndims_dynamic():
            raise IndexError(f"index {index!r} has {len(t)} dimensions; the array has {self._ndims_dynamic()}")
        _core.insert(self._ref, t, _blob(self._cls, args, self._kind, None))
        self._inserted = getattr(self, "_inserted", 0) + 1

    def ckDoneInserting(self):
        """Ends the insertions made through this proxy: reductions over the array count the
        elements inserted so far through it (insert all elements from one place)."""
        if self._shape is None:
            charm.thisProxy[0]._ck_inserted_total(_core.ref_id(self._ref), self._inserted)

    def __reduce__(self):
        return (CollectionProxy, (self._cls, self._ref, self._kind, self._shape, None))

    def __repr__(self):
        return f"<proxy to {self._kind} of {_clsname(self._cls)}>"


_PROXY_SLOTS = frozenset(("_cls", "_ref", "_idx", "_kind", "_shape", "_creation", "_elems"))


def _dumps_call(t, cls, name):
    """The pickle of a call and its out-of-band buffers."""
    bufs = []
    try:
        head = pickle.dumps(t, _P, buffer_callback=bufs.append)
    except Exception as e:
        raise TypeError(f"{_clsname(cls)}.{name}: an argument cannot be pickled: {e}") from e
    if bufs:
        try:
            bufs = [b.raw() for b in bufs]
        except BufferError:  # a non-contiguous buffer: in band
            head, bufs = _dumps(t)
    return head, bufs


def _clsname(cls):
    return cls.__name__ if cls is not None else "?"


def _norm(idx):
    if idx is None:
        return None
    if idx[0] == "pe":
        return idx[1]
    return idx


# ---- chares -----------------------------------------------------------------------------
_local = {}  # (collection id, index) -> element object on this PE


def _blob(cls, args, kind, creation):
    if not (isinstance(cls, type) and issubclass(cls, Chare)):
        raise TypeError(f"{cls!r} is not a subclass of Chare")
    args = list(args) if args is not None else []
    try:
        return pickle.dumps((cls, args, kind, creation), _P)
    except Exception as e:
        raise TypeError(f"creating {cls.__name__}: the class or an argument cannot be pickled ({e}); chare "
                        "classes must be defined at module level") from e


class Chare:
    """Base class of every chare. Chare(C, onPE=-1, args=[]) creates a singleton chare and
    returns its proxy (charm4py's form)."""

    def __new__(cls, *args, **kwargs):
        if cls is Chare and args and isinstance(args[0], type):
            return _create_chare(*args, **kwargs)
        return object.__new__(cls)

    def contribute(self, data, reducer, target):
        if reducer is None:
            reducer = _nop
        pre = Reducer._pre.get(reducer)
        if pre is not None:
            data = pre(data, self)  # charm4py: pre(contribution, contributor)
        if reducer is _gather:
            data = [(self.thisIndex, data)]
        root_pe, root_fid, tgt = 0, -1, None
        if isinstance(target, (Future, _FutureRef)):
            root_pe, root_fid = target.pe, target.fid
        elif isinstance(target, _Method):
            tgt = target
        elif target is not None:
            raise TypeError(f"contribute: the target must be a Future or a proxy method, not {target!r}")
        if self._ck_kind == "chare":  # the only contributor: the result is its own
            target_, value, empty = _finish(pickle.dumps((reducer, tgt, data), _P))
            if root_fid >= 0:
                _send_future(root_pe, root_fid, value)
            elif tgt is not None:
                tgt() if empty else tgt(value)
            return
        if self._ck_kind == "array" and self.thisProxy._shape is None:
            # An array filled by ckInsert: the core's reduction tree needs the element count
            # of every PE, which only ckDoneInserting's total gives; the contributions go to
            # PE 0's runtime element, which combines them once it has them all.
            rnd = self._ck_red_round
            self._ck_red_round += 1
            charm.thisProxy[0]._ck_inserted_contribution(
                _core.ref_id(self.thisProxy._ref), rnd, self.thisIndex,
                pickle.dumps((reducer, tgt, data), _P), (root_pe, root_fid))
            return
        _core.contribute(self._ck_ptr, pickle.dumps((reducer, tgt, data), _P), root_pe, root_fid)

    def reduce(self, target, data=None, reducer=None):
        self.contribute(data, reducer, target)

    def allreduce(self, data=None, reducer=None):
        """A future that every contributor gets the result in."""
        f = Future()
        self._ck_allreduce.append(f)
        self.contribute(data, reducer, _Method(self.thisProxy, "_ck_allreduce_done"))
        return f

    def _ck_allreduce_done(self, value=None):
        self._ck_allreduce.pop(0).send(value)

    def AtSync(self):
        """charm4py's load-balancing point. ucharm does not migrate chares yet: this is a
        barrier over the collection, then resumeFromSync() runs on every element."""
        self.contribute(None, None, _Method(self.thisProxy, "_ck_resume_from_sync"))

    def _ck_resume_from_sync(self):
        self.resumeFromSync()

    def resumeFromSync(self):
        pass

    def migrate(self, toPe):
        raise NotImplementedError("Chare.migrate: ucharm does not migrate chares yet")

    def wait(self, cond):
        """Waits (in a coroutine) until the expression `cond` over self is true; it is
        checked after each entry method of this chare."""
        code = compile(cond, "<wait>", "eval")
        scope = sys.modules[type(self).__module__].__dict__  # the program's globals, as for @when
        while not eval(code, scope, {"self": self}):
            self._ck_waiting.append(getcurrent())
            _suspend("Chare.wait()")

    def __getstate__(self):
        raise TypeError(f"a {type(self).__name__} chare cannot be pickled: pass its proxy (self.thisProxy)")


def _create_chare(cls, onPE=-1, args=None):
    _flush_readonlies()
    if onPE != -1 and not 0 <= onPE < _core.num_pes():
        raise ValueError(f"Chare({cls.__name__}, onPE={onPE}): PE out of range [0, {_core.num_pes()})")
    creation = _CreationFuture()
    ref = _core.create_chare(onPE, _blob(cls, args, "chare", creation))
    p = ElementProxy(cls, ref, None)
    creation.ref = ref
    _creations[ref] = creation
    return p


class _CallbackFuture(Future):
    """A future that calls `target()` when its value arrives (quiescence callbacks)."""

    def __init__(self, target):
        super().__init__()
        self.target = target

    def _deliver(self, value):
        super()._deliver(value)
        self.target()


class _CreationFuture(Future):
    """A singleton chare's creation: kept for charm.awaitCreation until it completes."""
    ref = None

    def _deliver(self, value):
        super()._deliver(value)
        if self.ready() and self._waiter is None:
            _creations.pop(self.ref, None)


def Group(cls, args=None):
    """One element of `cls` on every PE; returns the group's proxy."""
    _flush_readonlies()
    creation = Future(_core.num_pes())
    ref = _core.create_group(_blob(cls, args, "group", creation))
    return CollectionProxy(cls, ref, "group", None, creation)


def Array(cls, dims=None, ndims=-1, args=None, map=None):
    """A chare array: Array(C, n) or Array(C, (x, y[, z])) creates every element with
    `args`; Array(C, ndims=N) an empty one that grows with proxy.ckInsert(index)."""
    _flush_readonlies()
    map_id = 0
    if map is not None:
        mcls = map._cls if isinstance(map, Proxy) else map
        if not (isinstance(mcls, type) and issubclass(mcls, ArrayMap)) or mcls not in _map_ids:
            raise TypeError(f"Array(..., map={map!r}): give a Group of an ArrayMap subclass "
                            "defined at module level")
        map_id = _map_ids[mcls]
    if dims is None:
        nd = ndims if ndims > 0 else 1
        if nd > 3:
            raise ValueError(f"chare arrays have 1, 2 or 3 dimensions, not {nd}")
        ref = _core.create_empty_array(nd, map_id)
        return CollectionProxy(cls, ref, ("array", nd), None, None)  # ckInsert sends this kind
    shape = (dims,) if isinstance(dims, int) else tuple(dims)
    if not 1 <= len(shape) <= 3 or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError(f"Array({cls.__name__}, {dims!r}): give 1 to 3 non-negative extents")
    n = 1
    for d in shape:
        n *= d
    creation = Future(n) if n > 0 else None
    ref = _core.create_array(shape, _blob(cls, args, ("array", shape), creation), map_id)
    return CollectionProxy(cls, ref, "array", shape, creation)


class ArrayMap(Chare):
    """charm4py's base class for array maps: procNum(index) -> PE, for
    Array(C, dims, map=Group(MyMap)). Every PE places and finds elements with its own
    instance of the class, built with no arguments, so procNum must depend only on the
    index (and charm.numPes()), as the same answer is needed everywhere."""

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        # Numbered in definition order, the same on every PE (the same program runs there).
        _map_ids[cls] = len(_map_classes) + 1
        _map_classes.append(cls)

    def __init__(self):
        pass

    def procNum(self, index):
        raise NotImplementedError(f"{type(self).__name__}.procNum is not defined")


_map_ids = {}
_map_classes = []
_map_instances = {}


def _map_pe(map_id, index, npes):
    inst = _map_instances.get(map_id)
    if inst is None:
        cls = _map_classes[map_id - 1]
        inst = cls.__new__(cls)
        inst.__init__()
        _map_instances[map_id] = inst
    pe = inst.procNum(index)
    if not isinstance(pe, int) or not 0 <= pe < npes:
        raise ValueError(f"{type(inst).__name__}.procNum({index}) returned {pe!r}, not a PE in [0, {npes})")
    return pe


_creations = {}


def _construct_main(ptr, cls, argv):
    """The main chare class's object, bound to the C++ main chare."""
    return _construct(ptr, pickle.dumps((cls, [argv], "chare", None), _P))


def _construct(ptr, blob):
    cls, args, kind, creation = pickle.loads(blob)
    shape = None
    if isinstance(kind, tuple):  # ("array", shape) for bulk arrays, ("array", ndims) for insertion
        kind, extent = kind
        shape = extent if isinstance(extent, tuple) else None
        array_kind = "array" if shape is not None else ("array", extent)
    obj = cls.__new__(cls)
    ref = _core.chare_ref(ptr)
    idx = _core.chare_index(ptr)
    obj._ck_ptr = ptr
    obj._ck_kind = kind
    obj._ck_allreduce = []
    obj._ck_red_round = 0
    obj._ck_waiting = []
    obj._ck_when = None
    obj._ck_when_by_value = None  # (function, value) -> held calls, for `self.a == p` conditions
    obj._ck_when_eq_fns = set()
    obj._ck_busy = False
    obj._ck_channels = {}
    obj._ck_chan_count = {}
    obj._ck_early = {}
    if kind == "chare":
        obj.thisIndex = (0,)  # charm4py's singleton chares are one-element arrays
        obj.thisProxy = ElementProxy(cls, ref, None)
        key = None
    elif kind == "group":
        obj.thisIndex = _core.my_pe()
        obj.thisProxy = CollectionProxy(cls, ref, "group")
        key = obj.thisIndex
    else:
        obj.thisIndex = idx
        obj.thisProxy = CollectionProxy(cls, ref, array_kind, shape)
        key = idx
    obj._ck_self = ElementProxy(cls, ref, ("pe", key) if kind == "group" else key)
    _local[(_core.ref_id(ref), key)] = obj
    # Constructors run as coroutines: they may wait (charm.awaitCreation, Future.get), as
    # the main chare's and @coro ones do in charm4py.
    _spawn(_init_body, obj, args, creation, obj=obj)
    return obj


def _init_body(obj, args, creation):
    try:
        obj.__init__(*args)
    except SystemExit as e:
        _handle_exit(e)
        return
    except BaseException:
        _die(f"in the constructor of {type(obj).__name__}")
    if creation is not None:
        creation.send(None)
    _after_entry(obj)


# ---- invocation -------------------------------------------------------------------------
_entry_kind = {}  # function -> 0 plain, 1 coroutine or @when (the slow path)


def _invoke_slow(obj, msg, t, bufs):
    """Entry messages _core's fast path leaves: futures, broadcasts, coroutines, @when,
    channel data, first calls of a method."""
    if t[0] != _CALL:
        _channel_message(obj, t, msg)
        return
    _, name, args, kwargs, fut, bcast = t
    # A broadcast's message is shared by this PE's elements: each gets its own buffers.
    if bcast and bufs:
        head, bufs = _core.parse(msg, True)
        t = pickle.loads(head, buffers=bufs)
        args, kwargs = t[2], t[3]
    fn = getattr(type(obj), name, None)
    if fn not in _entry_kind:
        if fn is None or not callable(fn):
            raise AttributeError(f"chare class {type(obj).__name__} has no entry method {name!r}")
        _entry_kind[fn] = 1 if (getattr(fn, "_ck_coro", False) or getattr(fn, "_ck_when", None)) else 0
    _call(obj, fn, args, kwargs or {}, fut, bcast)


def _call(obj, fn, args, kwargs, fut, bcast):
    cond = getattr(fn, "_ck_when", None)
    if cond is not None:
        eq = fn._ck_when_eq
        if eq is not None:
            key = _when_key(fn, args, kwargs)
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
    _after_entry(obj)


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


def _after_entry(obj):
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
                    _resume(g)
                # A waiter whose condition is still false queued itself again.
                progress = len(obj._ck_waiting) < len(waiting)
    finally:
        obj._ck_busy = False


def _reply(fut, obj, value, bcast):
    if fut is not None:
        fut.send((obj.thisIndex, value) if bcast else value)


def _run(obj, fn, args, kwargs, fut, bcast):
    if getattr(fn, "_ck_coro", False):
        _spawn(_run_body, obj, fn, args, kwargs, fut, bcast, obj=obj)
    else:
        _run_body(obj, fn, args, kwargs, fut, bcast)


def _run_body(obj, fn, args, kwargs, fut, bcast):
    try:
        value = fn(obj, *args, **kwargs)
    except SystemExit as e:
        _handle_exit(e)
        return
    except BaseException as e:
        if fut is None:
            _die(f"in entry method {type(obj).__name__}.{fn.__name__}")
        sys.stderr.write(f"ucharm: PE {_core.my_pe()}: {type(obj).__name__}.{fn.__name__} raised "
                         f"{type(e).__name__}: {e} (passed to the caller's future)\n")
        value = _RemoteException(e, traceback.format_exc())
    _reply(fut, obj, value, bcast)
    if getattr(fn, "_ck_coro", False):
        _after_entry(obj)


def _die(where):
    sys.stdout.flush()
    sys.stderr.write(f"ucharm: PE {_core.my_pe()}: Python exception {where}:\n{traceback.format_exc()}")
    sys.stderr.flush()
    _core.abort("a Python exception ended the job (traceback above)")


def _handle_exit(e):
    """SystemExit (sys.exit(), exit()) in an entry method ends the whole job."""
    if not isinstance(e, SystemExit):
        return False
    code = e.code
    if code is None:
        code = 0
    elif not isinstance(code, int):
        sys.stderr.write(f"{code}\n")
        code = 1
    charm.exit(code)
    return True


# ---- channels ---------------------------------------------------------------------------
_cupy_ndarray = None  # cupy.ndarray once CuPy is imported (its attributes are cheaper than the CAI)


def _device_info(obj):
    """(ptr, nbytes, shape, dtype str, stream) of a device array, or None for host objects."""
    global _cupy_ndarray
    if _cupy_ndarray is None and "cupy" in sys.modules:
        _cupy_ndarray = sys.modules["cupy"].ndarray
    if type(obj) is _cupy_ndarray:
        if not obj.flags.c_contiguous:
            raise ValueError("Channel: device arrays must be C-contiguous")
        # Transfers wait for the work queued on CuPy's current stream (0: the legacy one,
        # which the transfer's own synchronisation covers).
        return obj.data.ptr, obj.nbytes, obj.shape, obj.dtype.str, sys.modules["cupy"].cuda.get_current_stream().ptr
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        return None
    import numpy
    shape = tuple(cai["shape"])
    dt = numpy.dtype(cai["typestr"])
    n = dt.itemsize
    for d in shape:
        n *= d
    strides = cai.get("strides")
    if strides is not None:
        expect, ok = dt.itemsize, True
        for d, s in zip(reversed(shape), reversed(strides)):
            if d > 1 and s != expect:
                ok = False
            expect *= d
        if not ok:
            raise ValueError("Channel.send: device arrays must be C-contiguous")
    stream = cai.get("stream") or 0
    if stream in (1, 2):  # the legacy / per-thread default streams: nothing to wait for
        stream = 0
    return cai["data"][0], n, shape, dt.str, stream


class _SendHandle:
    """What Channel.send returns: get() waits (in a coroutine) until the device arrays and
    zero-copy buffers of that send may be reused."""
    __slots__ = ("ops",)

    def __init__(self, ops):
        self.ops = ops

    def ready(self):
        return all(op.done for op in self.ops)

    def get(self):
        for op in self.ops:
            op.wait("waiting for a Channel.send")


_NO_OPS = _SendHandle([])


class Channel:
    """A two-way, in-order stream of objects between two chares: both create it,
    Channel(self, remote=proxy_of_the_other); send(*objs) and recv() (in a coroutine).
    CuPy arrays (anything with __cuda_array_interface__) among the objects go GPU to GPU
    over the Channel API; large host buffers go zero-copy the same way."""

    def __init__(self, chare, remote, port=0):
        if not isinstance(remote, ElementProxy):
            raise TypeError("Channel(self, remote=...): remote must be the proxy of one element")
        self._chare = chare
        self._remote = remote
        self.remote = remote  # charm4py's public name
        my_key = chare._ck_self._idx
        peer_base = (_core.ref_id(remote._ref), _norm(remote._idx), port)
        # Several channels between the same two chares pair up in creation order: the n-th
        # one each side opens is one channel (sub-id n, counted per port).
        nth = chare._ck_chan_count.get(peer_base, 0)
        chare._ck_chan_count[peer_base] = nth + 1
        sub = port * 1024 + nth
        if nth >= 1024:
            raise ValueError(f"more than 1024 channels to {remote!r} on port {port}")
        self._port = sub
        self._key = (_core.ref_id(chare.thisProxy._ref), _norm(my_key), sub)  # how the peer names us
        peer_key = (peer_base[0], peer_base[1], sub)
        self._ch = _core.channel_open(chare._ck_ptr, remote._ref, remote._idx, sub)
        self._send_seq = 0
        self._recv_seq = 0
        self._inbox = {}
        self._waiter = None
        chare._ck_channels[peer_key] = self
        for seq, item in chare._ck_early.pop(peer_key, {}).items():
            self._inbox[seq] = item

    def send(self, *objs, stream=None):
        dev = None
        for o in objs:
            if hasattr(o, "__cuda_array_interface__"):
                dev = []
                break
        host = objs
        if dev is not None:
            host = []
            for i, o in enumerate(objs):
                info = _device_info(o)
                if info is None:
                    host.append(o)
                else:
                    dev.append((i,) + info)
                    host.append(None)
            host = tuple(host)
        pbs = []
        try:
            payload = pickle.dumps(host, _P, buffer_callback=pbs.append)
        except Exception as e:
            raise TypeError(f"Channel.send: an object cannot be pickled: {e}") from e
        inline, zc, layout = [], [], None
        if pbs:
            try:
                raws = [pb.raw() for pb in pbs]
            except BufferError:  # a non-contiguous buffer: everything in band
                payload, raws = pickle.dumps(host, _P), []
            # Per out-of-band buffer: -1 inside the message, else its size (over the channel).
            # Large read-only buffers (read-only arrays) travel zero-copy: nobody can change
            # them before the transfer is done. Writable ones are copied into the message,
            # so the caller may reuse them as soon as send() returns.
            layout = []
            for m in raws:
                if m.nbytes >= _ZERO_COPY_MIN and m.readonly:
                    zc.append(m)
                    layout.append(m.nbytes)
                else:
                    inline.append(m)
                    layout.append(-1)
        descs = [(i, n, shape, dt) for (i, _, n, shape, dt, _) in dev] if dev else None
        head = pickle.dumps((_CHANNEL, self._key, self._send_seq, layout, descs, len(objs)), _P)
        self._send_seq += 1
        inline.insert(0, payload)
        _core.send(self._remote._ref, self._remote._idx, head, inline)
        if not dev and not zc:
            return _NO_OPS
        dev = dev or ()
        ops = []
        sptr = stream.ptr if stream is not None and hasattr(stream, "ptr") else (stream or 0)
        for (i, ptr, n, shape, dt, s) in dev:
            op = _Op(keep=objs[i])
            _core.channel_send(self._ch, ptr, n, op.fid, sptr or s)
            ops.append(op)
        for m in zc:
            op = _Op(keep=m)
            addr, n = _core.buffer_address(m, False)
            _core.channel_send(self._ch, addr, n, op.fid, 0)
            ops.append(op)
        # The transfers keep their buffers alive until done. A device array must not be
        # changed before its transfer is done: the result, a Future-like handle, says when
        # (get() in a coroutine), as does any later message from the receiver.
        return _SendHandle(ops)

    def recv(self, *bufs, stream=None):
        sptr = stream.ptr if stream is not None and hasattr(stream, "ptr") else (stream or 0)
        # Device buffers given: their receives are posted now, before the message that
        # describes the arrays arrives (the channel's counters match them to the sends in
        # order), so the data moves as soon as it is sent. The description is checked after.
        posted = []
        for k, b in enumerate(bufs):
            info = _device_info(b)
            if info is None:
                raise TypeError(f"Channel.recv: buffer {k} is not a device array (no __cuda_array_interface__)")
            op = _Op(keep=b)
            _core.channel_recv(self._ch, info[0], info[1], op.fid, sptr or info[4])
            posted.append((info, op))
        seq = self._recv_seq
        while seq not in self._inbox:
            self._waiter = getcurrent()
            try:
                _suspend("Channel.recv()")
            finally:
                self._waiter = None
        t, msg = self._inbox.pop(seq)
        self._recv_seq += 1
        _, _, _, layout, descs, nobjs = t
        head, parts = _core.parse(msg, False)
        payload = parts[0]
        if layout is None and descs is None:  # host objects only, all inside the message
            if bufs:
                raise ValueError(f"Channel.recv: {len(bufs)} device buffer(s) given, but the message holds "
                                 "no device array")
            objs = pickle.loads(payload)
            return objs[0] if nobjs == 1 else tuple(objs)
        inline = parts[1:]
        layout = layout or ()
        descs = descs or ()
        if bufs and len(bufs) != len(descs):
            raise ValueError(f"Channel.recv: {len(bufs)} device buffer(s) given, but the message holds "
                             f"{len(descs)} device array(s)")
        ops, out_dev = [op for _, op in posted], {}
        for k, (i, n, shape, dt) in enumerate(descs):
            if bufs:
                b, info = bufs[k], posted[k][0]
                if info[1] != n or info[3] != dt:
                    import numpy
                    raise ValueError(f"Channel.recv: buffer {k} holds {info[1]} bytes of {numpy.dtype(info[3])}, "
                                     f"but the array sent has {n} bytes of {numpy.dtype(dt)} (shape {shape})")
            else:
                import cupy
                b = cupy.empty(shape, dtype=dt)
                op = _Op(keep=None)
                _core.channel_recv(self._ch, b.data.ptr, n, op.fid, sptr)
                ops.append(op)
            out_dev[i] = b
        bufs_all, it = [], iter(inline)
        for size in layout:  # host buffers over the channel come after the device arrays
            if size < 0:
                bufs_all.append(next(it))
                continue
            b = bytearray(size)
            addr, _ = _core.buffer_address(b, True)
            op = _Op(keep=None)
            _core.channel_recv(self._ch, addr, size, op.fid, 0)
            ops.append(op)
            bufs_all.append(b)
        for op in ops:
            op.wait("Channel.recv")
        host = pickle.loads(payload, buffers=bufs_all)
        objs = list(host)
        for i, b in out_dev.items():
            objs[i] = b
        return objs[0] if nobjs == 1 else tuple(objs)

    def ready(self):
        """A message is here: recv() will not wait (charm.iwait works on channels)."""
        return self._recv_seq in self._inbox

    def _arrived(self, t, msg):
        self._inbox[t[2]] = (t, msg)
        if self._waiter is not None:
            w, self._waiter = self._waiter, None
            _resume(w)


def _channel_message(obj, t, msg):
    key = t[1]  # the sender's (collection, index, port): our name for the channel
    ch = obj._ck_channels.get(key)
    if ch is None:
        obj._ck_early.setdefault(key, {})[t[2]] = (t, msg)
        return
    ch._arrived(t, msg)


# ---- the runtime object -----------------------------------------------------------------
class CharmRemote(Chare):
    """The runtime's group (charm.thisProxy): one element per PE."""

    def __init__(self):
        pass

    def updateGlobals(self, values, module_name="__main__"):
        sys.modules[module_name].__dict__.update(values)

    @coro
    def _pool_run(self, func, chunk, items, fut, futs):
        # A coroutine: tasks may themselves wait (nested charm.pool.map, futures).
        if futs is not None:  # one future per item
            for x, f in zip(items, futs):
                try:
                    f.send(func(x))
                except Exception as e:
                    f.send(_RemoteException(e, traceback.format_exc()))
            return
        try:
            fut.send((chunk, [func(x) for x in items]))
        except Exception as e:
            fut.send((chunk, _RemoteException(e, traceback.format_exc())))

    @coro
    def _pool_task(self, func, args, fut):
        try:
            value = func(*args)
        except Exception as e:
            if fut is None:
                raise
            value = _RemoteException(e, traceback.format_exc())
        if fut is not None:
            fut.send(value)

    def _ck_readonlies(self, values, version):
        global _ro_version
        if _core.my_pe() != 0 and version > _ro_version:
            _ro_version = version
            readonlies.__dict__.update(values)

    # Reductions over arrays filled by ckInsert (on PE 0): (collection, round) -> parts.
    def _ck_inserted_total(self, coll, total):
        self._ck_totals = getattr(self, "_ck_totals", {})
        self._ck_totals[coll] = total
        for (c, rnd) in list(getattr(self, "_ck_parts", {})):
            if c == coll:
                self._ck_try_reduce(coll, rnd)

    def _ck_inserted_contribution(self, coll, rnd, index, blob, root):
        self._ck_parts = getattr(self, "_ck_parts", {})
        self._ck_parts.setdefault((coll, rnd), []).append((index, blob, root))
        self._ck_try_reduce(coll, rnd)

    def _ck_try_reduce(self, coll, rnd):
        total = getattr(self, "_ck_totals", {}).get(coll)
        parts = self._ck_parts.get((coll, rnd), [])
        if total is None or len(parts) < total:
            return
        if len(parts) > total:
            raise RuntimeError(f"a reduction over an inserted array got {len(parts)} contributions, but "
                               f"ckDoneInserting counted {total} elements")
        del self._ck_parts[(coll, rnd)]
        parts.sort(key=lambda p: p[0])
        blob = parts[0][1]
        for _, b, _ in parts[1:]:
            blob = _combine(blob, b)
        target, value, empty = _finish(blob)
        root_pe, root_fid = parts[0][2]
        if root_fid >= 0:
            _send_future(root_pe, root_fid, value)
        elif target is not None:
            if empty:
                target()
            else:
                target(value)

    def exit(self, exit_code=0):
        charm.exit(exit_code)

    def myPe(self):
        return _core.my_pe()

    def addReducer(self, func):
        Reducer.addReducer(func)

    def createArray(self, cls, dims=None, ndims=-1, args=None, map=None, useAtSync=False, cb=None):
        proxy = Array(cls, dims, ndims, args if args is not None else [], map)
        if cb is not None:
            cb(proxy)
        return proxy

    def createGroup(self, cls, args=None, cb=None):
        proxy = Group(cls, args)
        if cb is not None:
            cb(proxy)
        return proxy

    def rexec(self, code, module_name="__main__"):
        exec(code, sys.modules[module_name].__dict__)

    def eval(self, expression, module_name="__main__"):
        return eval(expression, sys.modules[module_name].__dict__)

    def printStats(self):
        pass


class _Pool:
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
            futs = [Future() for _ in items]
            for k, i in enumerate(starts):
                charm.thisProxy[workers[k % len(workers)]]._pool_run(func, k, items[i:i + step], None,
                                                                     futs[i:i + step])
            return futs
        fut = _PoolFuture(len(starts))
        for k, i in enumerate(starts):
            charm.thisProxy[workers[k % len(workers)]]._pool_run(func, k, items[i:i + step], fut, None)
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
        fut = Future() if (ret or awaitable) else None
        charm.thisProxy[pe]._pool_task(func, list(args), fut)
        return fut


class _PoolFuture(Future):
    """The chunks' results, in order, as one list; a task's exception is raised by get()."""

    def get(self):
        if self._n == 0:
            return []
        parts = super().get() if self._n != 1 else [super().get()]
        out = []
        for _, res in sorted(parts, key=lambda p: p[0]):
            if isinstance(res, _RemoteException):
                raise res.exc
            out.extend(res)
        return out


def _apply_pair(task):
    func, arg = task
    return func(arg)


class _Readonlies:
    """charm4py's readonlies (`from ucharm import readonlies as ro`): attributes set on PE 0
    in the main function before chares are created; every PE has them before its first
    chare of a collection created after that is constructed."""

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if _core.my_pe() == 0:
            _ro_dirty.add(name)
            _core.set_readonlies_pending()


readonlies = _Readonlies()
_ro_dirty = set()


_in_start = False  # PE 0's start hook is running: the readonly values go with the core's


def _flush_readonlies():
    # Called before anything leaves PE 0 while values set after start-up are pending (the
    # ones set before travel with the core's readonly values). They go to every PE twice:
    # point to point (links keep order, so a message PE 0 sends next arrives after them)
    # and along the broadcast tree (so does a broadcast PE 0 sends next); a version number
    # makes the second copy a no-op.
    global _ro_version
    if _ro_dirty and _core.my_pe() == 0 and charm._remote is not None and not _in_start:
        values = {k: readonlies.__dict__[k] for k in _ro_dirty}
        _ro_dirty.clear()
        _ro_version += 1
        for pe in range(_core.num_pes()):
            charm._remote[pe]._ck_readonlies(values, _ro_version)
        charm._remote._ck_readonlies(values, _ro_version)


_ro_version = 0  # PE 0: updates sent; other PEs: the newest applied


class Options:
    """charm4py's options (`from ucharm import Options`; also charm.options). ucharm reads
    none of them yet; setting them is harmless (profiling, local message optimisations and
    the like have no ucharm counterpart)."""
    PROFILING = False
    PICKLE_PROTOCOL = -1
    LOCAL_MSG_OPTIM = True
    LOCAL_MSG_BUF_SIZE = 50
    AUTO_FLUSH_WHEN = True
    QUIET = False
    remote_exec = False
    profiling = False
    pickle_protocol = -1
    local_msg_optim = True
    local_msg_buf_size = 50
    auto_flush_wait_queues = True
    quiet = False
    interactive = type("InteractiveOptions", (), {"verbose": 1, "broadcast_imports": True})


# Charm++'s load-balancing options, which charm4py programs pass: ucharm does not migrate
# chares yet, so they are taken off the command line (with a note) instead of being
# refused as unknown runtime options.
_LB_FLAGS = {"+LBOff", "+LBOn", "+LBCommOff", "+LBDebug", "+LBPrintSummary", "+LBTestPESpeed"}
_LB_WITH_VALUE = {"+LBPeriod", "+balancer", "+LBObjOnly"}


def _strip_lb_options(argv):
    out, dropped, i = [], [], 0
    while i < len(argv):
        a = argv[i]
        if a in _LB_FLAGS or a.startswith("+balancer="):
            dropped.append(a)
        elif a in _LB_WITH_VALUE:
            dropped += argv[i:i + 2]
            i += 1
        else:
            out.append(a)
        i += 1
    if dropped and os.environ.get("PMIX_RANK", "0") in ("0", ""):
        sys.stderr.write(f"ucharm: load balancing is not supported yet; ignoring {' '.join(dropped)}\n")
    return out


class _Charm:
    Future = Future  # charm.Future(), as in charm4py

    def __init__(self):
        self._entry = None
        self._remote = None
        self.pool = _Pool()
        self.options = Options

    # -- start and end
    def start(self, entry=None, classes=None, modules=None, interactive=False):
        if interactive:
            raise NotImplementedError("charm.start(interactive=True) is not supported")
        if entry is None:
            raise TypeError("charm.start(main): give the main function or the main chare class")
        self._entry = entry
        _core.set_python(_Hooks)
        _core.start(_strip_lb_options(list(sys.argv)))

    def exit(self, exit_code=0):
        sys.stdout.flush()
        sys.stderr.flush()
        _core.exit(int(exit_code))

    def abort(self, message):
        sys.stdout.flush()
        _core.abort(str(message))

    # -- where we are
    def myPe(self):
        return _core.my_pe()

    def numPes(self):
        return _core.num_pes()

    def numHosts(self):
        return 1

    def wallTime(self):
        return _core.wall_time()

    @property
    def thisProxy(self):
        if self._remote is None:
            raise RuntimeError("charm.thisProxy is known once charm.start() has started the runtime")
        return self._remote

    # -- waiting
    def awaitCreation(self, *proxies):
        for p in proxies:
            f = p._creation if isinstance(p, CollectionProxy) else _creations.pop(p._ref, None)
            if f is not None and f.pe == _core.my_pe():
                f.get()
                if isinstance(p, CollectionProxy):
                    p._creation = None

    def iwait(self, futures):
        pending = list(futures)
        while pending:
            ready = [f for f in pending if f.ready()]
            if not ready:
                g = getcurrent()
                for f in pending:
                    f._waiter = g
                try:
                    _suspend("charm.iwait()")
                finally:
                    for f in pending:
                        f._waiter = None
                continue
            for f in ready:
                pending.remove(f)
                yield f

    def iawait(self, futures):
        """As iwait: the futures as their values arrive."""
        return self.iwait(futures)

    def wait(self, futures):
        for f in futures:
            f.get()

    def startQD(self, callback):
        """Quiescence detection: `callback` (a Future, or a proxy method called with no
        arguments) fires once no message is queued or in flight anywhere."""
        if isinstance(callback, (Future, _FutureRef)):
            _core.start_qd(callback.pe, callback.fid)
        elif isinstance(callback, _Method) or callable(callback):
            f = _CallbackFuture(callback)
            _core.start_qd(f.pe, f.fid)
        else:
            raise TypeError(f"charm.startQD: give a Future or a proxy method, not {callback!r}")

    def printStats(self):
        print(f"ucharm: PE {_core.my_pe()}: no statistics are kept (charm.printStats)", flush=True)

    def LBTurnInstrumentOn(self):
        pass  # no load balancing yet: nothing to instrument

    def LBTurnInstrumentOff(self):
        pass

    def waitQD(self):
        f = Future()
        self.startQD(f)
        f.get()

    def createFuture(self, num_vals=1):
        return Future(num_vals)


charm = _charm = _Charm()


class _Hooks:
    """What _core calls."""
    construct = staticmethod(_construct)
    invoke_slow = staticmethod(_invoke_slow)
    after_entry = staticmethod(_after_entry)
    map_pe = staticmethod(_map_pe)
    flush_readonlies = staticmethod(lambda: _flush_readonlies())
    channel_message = staticmethod(_channel_message)
    entry_kind = _entry_kind
    combine = staticmethod(_combine)
    handle_exit = staticmethod(_handle_exit)

    @staticmethod
    def start(ptr, argv):
        # PE 0, once, inside the C++ main chare's constructor: the runtime's group, then the
        # program's main until it first waits. What the readonlies hold by then goes to
        # every PE with the core's readonly values, before any other message is handled.
        global _in_start
        remote = Group(CharmRemote)
        charm._remote = remote
        sys.argv[:] = argv
        entry = charm._entry
        _in_start = True
        obj = None
        try:
            if isinstance(entry, type) and issubclass(entry, Chare):
                obj = _construct_main(ptr, entry, argv)
            else:
                _spawn(_main_body, entry, argv)
        finally:
            _in_start = False
        _core.set_readonly(pickle.dumps((remote, dict(vars(readonlies))), _P))
        _ro_dirty.clear()
        return obj

    @staticmethod
    def readonly_arrived(blob):
        remote, values = pickle.loads(blob)
        charm._remote = remote
        readonlies.__dict__.update(values)

    @staticmethod
    def future_value(fid, msg):
        target = _futures.get(fid)
        if target is None:
            raise RuntimeError(f"a value arrived for future {fid} on PE {_core.my_pe()}, which is not waited for")
        if isinstance(target, _Op):
            target._deliver(None)
            return
        kind = _core.value_kind(msg)
        if kind == 1:
            _, value, _ = _finish(_core.reduction_value(msg))
        elif kind == 2:
            value = None
        else:
            head, bufs = _core.parse(msg, False)
            value = pickle.loads(head, buffers=bufs)
        target._deliver(value)

    @staticmethod
    def reduction_done(blob):
        target, value, empty = _finish(blob)
        if target is None:
            return
        if empty:
            target()
        else:
            target(value)


def _main_body(entry, argv):
    try:
        entry(argv)
    except SystemExit as e:
        _handle_exit(e)
    except BaseException:
        _die("in the main function")
