"""Ray's core API over ucharm (charm4py's `charm4py.ray`): remote functions (tasks), actors,
object references, get/put/wait.

Objects. Every object reference (ObjectRef) has a home: the PE whose `.remote()` or
`ray.put()` made it. A task's or an actor method's result is sent to the home of its
reference as soon as it is computed; `ray.get` on the home reads it there, on another PE
it asks the home once and keeps the copy while a reference to it is alive there. The
home keeps an object while the reference it handed out is alive; a reference that was
sent to another PE (an argument of a task, inside a result) keeps its object at the home
until the end of the run (there is no distributed reference counting).

Tasks (`@ray.remote` functions) go to the PEs in turn, each starting from the PE after
the caller's; they run as coroutines, so a task may wait (`ray.get` of its own subtasks)
while its PE runs other tasks. Actors (`@ray.remote` classes) are singleton chares
placed on the PEs in turn; an actor runs its method calls one at a time, in the order
each caller made them (a call waits for the references among its arguments before it
runs, and later calls wait behind it). References given as arguments, directly or as
keyword arguments, are replaced by their values before the call (Ray's rule: references
inside lists or other objects are passed as they are).
"""
import itertools
import sys
import traceback
import types

from greenlet import getcurrent

from .. import _core, coroutines, futures, timers
from .. import chare as _chare

# ---- this PE's object store -----------------------------------------------------------------
_values = {}    # id -> value (home: the result; elsewhere: a fetched copy)
_waiters = {}   # id -> [_Waiter] waiting for the value here
_wants = {}     # (home) id -> PEs that asked for the value before it arrived
_requested = set()  # (not home) ids asked of their home and not arrived yet
_live = {}      # id -> number of ObjectRef objects alive on this PE
_pinned = set()  # (home) ids whose reference left this PE: kept until the end
_seq = itertools.count()
_next_pe = None  # where the next task goes (round robin)
_next_actor_pe = 0
_initialized = False


class GetTimeoutError(TimeoutError):
    """ray.get(..., timeout=) ran out before the values were there (Ray's exception)."""


def _my_pe():
    return _core.my_pe()


class ObjectRef:
    """A reference to an object (a task's or actor method's result, or ray.put's): pass it
    to ray.get/ray.wait, or as an argument of other tasks and actor methods. Hashable."""
    __slots__ = ("id", "__weakref__")

    def __init__(self, oid):
        self.id = oid
        _live[oid] = _live.get(oid, 0) + 1

    def __eq__(self, other):
        return type(other) is ObjectRef and other.id == self.id

    def __hash__(self):
        return hash(self.id)

    def __repr__(self):
        return f"ObjectRef(home PE {self.id[0]}, {self.id[1]})"

    def __reduce__(self):
        if self.id[0] == _my_pe():
            _pinned.add(self.id)  # it leaves the home (the first time always does from here)
        return (ObjectRef, (self.id,))

    def __del__(self):
        oid = self.id
        n = _live.get(oid, 0) - 1
        if n > 0:
            _live[oid] = n
            return
        _live.pop(oid, None)
        if oid[0] != _my_pe():
            _values.pop(oid, None)  # a fetched copy nobody here refers to any more
        elif oid not in _pinned:
            _values.pop(oid, None)
            _wants.pop(oid, None)


def _new_ref():
    return ObjectRef((_my_pe(), next(_seq)))


class _Waiter:
    __slots__ = ("g", "fired")

    def __init__(self, g):
        self.g, self.fired = g, False

    def fire(self, value=None):
        if not self.fired:
            self.fired = True
            coroutines.resume(self.g, value)


_TIMEOUT = object()


def _store(oid, value):
    """The value of `oid` is here (computed here, or arrived from its producer or home)."""
    home = oid[0] == _my_pe()
    if home:
        if oid not in _live and oid not in _pinned:
            return  # nobody can ask for it any more
        _values[oid] = value
        for pe in _wants.pop(oid, ()):
            _send_value(pe, oid, value)
    else:
        _requested.discard(oid)
        if oid in _live:
            _values[oid] = value
    for w in _waiters.pop(oid, ()):
        w.fire()


def _send_value(pe, oid, value):
    # A message also to this PE: waiters are resumed from the scheduler, never from inside
    # the coroutine that computed the value.
    from ..charm import charm
    charm.thisProxy[pe]._ray_value(oid, value)


def _fetch(oid):
    """Asks the home for the value (once), unless it is here or on its way."""
    if oid in _values or oid[0] == _my_pe() or oid in _requested:
        return
    from ..charm import charm
    _requested.add(oid)
    charm.thisProxy[oid[0]]._ray_want(oid, _my_pe())


# Entry points of the runtime's group (charm.py's CharmRemote calls these).
def on_value(oid, value):
    _store(oid, value)


def on_want(oid, pe):
    if oid in _values:
        _send_value(pe, oid, _values[oid])
    else:
        _wants.setdefault(oid, []).append(pe)


def _wait_for(oids, count, timeout, what):
    """Waits (in a coroutine) until `count` of `oids` have their values here; False when
    the timeout (seconds, or None) ran out first."""
    for oid in oids:
        _fetch(oid)
    if sum(1 for o in oids if o in _values) >= count:
        return True
    if timeout is not None and timeout <= 0:
        return False
    g = getcurrent()
    if not getattr(g, "_ck_coro", False):
        raise RuntimeError(f"{what} would block outside a coroutine: call it from the main function, a "
                           "remote function or actor method, or an entry method decorated with @coro")
    deadline = None if timeout is None else _core.wall_time() + timeout
    while sum(1 for o in oids if o in _values) < count:
        w = _Waiter(g)
        for oid in oids:
            if oid not in _values:
                _waiters.setdefault(oid, []).append(w)
        if deadline is not None:
            left = deadline - _core.wall_time()
            if left <= 0:
                return False
            timers.schedule(w.fire, left, (_TIMEOUT,))
        if coroutines.suspend(what) is _TIMEOUT:
            return sum(1 for o in oids if o in _values) >= count
    return True


def _value(oid):
    v = _values[oid]
    if isinstance(v, futures._RemoteException):
        raise v.exc
    return v


# ---- the API ------------------------------------------------------------------------------------
def init(*args, **kwargs):
    """Ray's ray.init(): nothing to start (the runtime is running); accepted for Ray
    programs, arguments included (address=, num_cpus= and the like are ignored)."""
    global _initialized
    _initialized = True


def is_initialized():
    return _initialized


def shutdown():
    global _initialized
    _initialized = False


def get(refs, timeout=None):
    """The value of an ObjectRef, or the list of values of a list of them; waits for them
    (in a coroutine). A task's exception is raised here. timeout= (seconds): raises
    GetTimeoutError when not all values are there by then."""
    single = isinstance(refs, ObjectRef)
    lst = [refs] if single else refs
    if not isinstance(lst, (list, tuple)) or not all(isinstance(r, ObjectRef) for r in lst):
        raise TypeError(f"ray.get: give an ObjectRef or a list of them, not {refs!r}")
    oids = [r.id for r in lst]
    if not _wait_for(oids, len(set(oids)), timeout, "ray.get()"):
        raise GetTimeoutError(f"ray.get: the values were not ready within {timeout} s")
    values = [_value(o) for o in oids]
    return values[0] if single else values


def wait(refs, num_returns=1, timeout=None, fetch_local=True):
    """(ready, not_ready): waits until `num_returns` of the references have their values
    here (or the timeout, in seconds, ran out); both lists keep the order of `refs`."""
    refs = list(refs)
    if not all(isinstance(r, ObjectRef) for r in refs):
        raise TypeError("ray.wait: give a list of ObjectRefs")
    if len(set(refs)) != len(refs):
        raise ValueError("ray.wait: the list repeats an ObjectRef")
    if not 0 <= num_returns <= len(refs):
        raise ValueError(f"ray.wait: num_returns={num_returns} is not in [0, {len(refs)}]")
    _wait_for([r.id for r in refs], num_returns, timeout, "ray.wait()")
    ready, not_ready = [], []
    for r in refs:
        (ready if r.id in _values and len(ready) < num_returns else not_ready).append(r)
    return ready, not_ready


def put(value):
    """Stores `value` in this PE's object store; returns its ObjectRef."""
    if isinstance(value, ObjectRef):
        raise TypeError("ray.put: the value is an ObjectRef already")
    ref = _new_ref()
    _values[ref.id] = value
    return ref


def _resolve(args, kwargs):
    """The arguments with their ObjectRefs (top level, and keyword values) replaced by
    their values, waiting for those not here yet."""
    oids = [a.id for a in args if isinstance(a, ObjectRef)]
    oids += [v.id for v in kwargs.values() if isinstance(v, ObjectRef)]
    if not oids:
        return args, kwargs
    _wait_for(oids, len(set(oids)), None, "resolving ObjectRef arguments")
    args = tuple(_value(a.id) if isinstance(a, ObjectRef) else a for a in args)
    kwargs = {k: (_value(v.id) if isinstance(v, ObjectRef) else v) for k, v in kwargs.items()}
    return args, kwargs


def _deliver(oids, value, num_returns, where):
    """Sends a call's result (or its exception) to the homes of its references."""
    if isinstance(value, futures._RemoteException) or num_returns == 1:
        parts = [value] * len(oids)
    else:
        try:
            parts = list(value)
        except TypeError:
            parts = None
        if parts is None or len(parts) != num_returns:
            e = ValueError(f"{where} has num_returns={num_returns} but returned {value!r}")
            parts = [futures._RemoteException(e, "")] * len(oids)
    for oid, v in zip(oids, parts):
        _send_value(oid[0], oid, v)


def _run_call(fn, args, kwargs, oids, num_returns, where):
    try:
        args, kwargs = _resolve(args, kwargs)
        value = fn(*args, **kwargs)
    except SystemExit:
        raise
    except BaseException as e:
        sys.stderr.write(f"ucharm: PE {_my_pe()}: {where} raised {type(e).__name__}: {e} "
                         "(ray.get of its result raises it)\n")
        value = futures._RemoteException(e, traceback.format_exc())
    _deliver(oids, value, num_returns, where)


def _refs(num_returns):
    refs = [_new_ref() for _ in range(num_returns)]
    return refs, [r.id for r in refs]


def _check_num_returns(n):
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"num_returns must be an int >= 1, not {n!r}")
    return n


# ---- remote functions ---------------------------------------------------------------------------
def on_task(fn_ref, args, kwargs, oids, num_returns):
    """(A coroutine of the runtime's group, on the PE that runs the task.)"""
    rf = fn_ref
    _run_call(rf._function, args, kwargs, oids, num_returns, f"remote function {rf._name}")


class RemoteFunction:
    """A function decorated with @ray.remote: f.remote(*args) runs it as a task on some PE
    and returns an ObjectRef of its result (a list of num_returns of them)."""

    def __init__(self, function, num_returns=1):
        self._function = function
        self._name = function.__qualname__
        self._module = function.__module__
        self._num_returns = _check_num_returns(num_returns)
        self.__doc__ = function.__doc__
        self.__wrapped__ = function

    def __call__(self, *args, **kwargs):
        raise TypeError(f"remote function {self._name} cannot be called directly: use "
                        f"{self._name}.remote(...)")

    def options(self, num_returns=None, **ignored):
        """A copy with other options: num_returns= (resource options are ignored)."""
        f = RemoteFunction(self._function, self._num_returns if num_returns is None else num_returns)
        f._module, f._name = self._module, self._name
        f._origin = self
        return f

    def remote(self, *args, **kwargs):
        global _next_pe
        from ..charm import charm
        n = _core.num_pes()
        if _next_pe is None:
            _next_pe = (_my_pe() + 1) % n
        pe = _next_pe
        _next_pe = (pe + 1) % n
        refs, oids = _refs(self._num_returns)
        charm.thisProxy[pe]._ray_task(self, args, kwargs, oids, self._num_returns)
        return refs[0] if self._num_returns == 1 else refs

    def __reduce__(self):
        # By name: the module's attribute is this object (the decorator replaced the
        # function), found again on the PE that runs the task.
        origin = getattr(self, "_origin", self)
        return (_remote_function_named, (origin._module, origin._name, self._num_returns))


def _remote_function_named(module, qualname, num_returns):
    obj = _lookup(module, qualname, "remote function")
    if not isinstance(obj, RemoteFunction):
        raise TypeError(f"{module}.{qualname} is not a @ray.remote function on PE {_my_pe()}")
    return obj if obj._num_returns == num_returns else obj.options(num_returns=num_returns)


def _lookup(module, qualname, what):
    obj = sys.modules.get(module)
    try:
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        obj = None
    if obj is None:
        raise TypeError(f"the {what} {module}.{qualname} is not defined on PE {_my_pe()}: define "
                        "@ray.remote functions and classes at module level")
    return obj


# ---- actors ---------------------------------------------------------------------------------------
class _ActorBase(_chare.Chare):
    """What an actor's chare class adds to the user's class: the queue of method calls."""

    def _ray_call(self, name, args, kwargs, oids, num_returns):
        self._ray_queue.append((name, args, kwargs, oids, num_returns))
        if not self._ray_running:
            coroutines.spawn(self._ray_drain, obj=self)

    def _ray_drain(self):
        # One call at a time, in arrival order (a caller's calls arrive in its order).
        self._ray_running = True
        try:
            while self._ray_queue:
                name, args, kwargs, oids, num_returns = self._ray_queue.pop(0)
                _run_call(getattr(self, name), args, kwargs, oids, num_returns,
                          f"actor method {type(self).__name__}.{name}")
        finally:
            self._ray_running = False


def _actor_init(self, args, kwargs):
    # The chare's constructor (a coroutine): the user's, once its arguments are there.
    # Calls that arrive meanwhile wait in the queue. Not _ActorBase.__init__: a user's
    # __init__ calling super().__init__() reaches object's through it.
    self._ray_queue = []
    self._ray_running = True
    try:
        args, kwargs = _resolve(tuple(args), kwargs)
        self._ray_cls.__init__(self, *args, **kwargs)
    finally:
        self._ray_running = False
    if self._ray_queue:
        coroutines.spawn(self._ray_drain, obj=self)


class ActorMethod:
    def __init__(self, handle, name, num_returns):
        self._handle, self._name, self._num_returns = handle, name, num_returns

    def __call__(self, *args, **kwargs):
        raise TypeError(f"actor method {self._name} cannot be called directly: use .{self._name}.remote(...)")

    def options(self, num_returns=None, **ignored):
        return ActorMethod(self._handle, self._name, self._num_returns if num_returns is None else
                           _check_num_returns(num_returns))

    def remote(self, *args, **kwargs):
        refs, oids = _refs(self._num_returns)
        self._handle._proxy._ray_call(self._name, args, kwargs, oids, self._num_returns)
        return refs[0] if self._num_returns == 1 else refs


class ActorHandle:
    """An actor: handle.method.remote(*args) returns an ObjectRef of the method's result.
    Handles may be passed to tasks and other actors."""

    def __init__(self, proxy, cls):
        self._proxy, self._cls = proxy, cls

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        fn = getattr(self._cls, name, None)
        if not callable(fn):
            raise AttributeError(f"actor class {self._cls.__name__} has no method {name!r}")
        return ActorMethod(self, name, getattr(fn, "_ray_num_returns", 1))

    def __reduce__(self):
        return (ActorHandle, (self._proxy, self._cls))

    def __repr__(self):
        return f"Actor({self._cls.__name__}, {self._proxy!r})"


class ActorClass:
    """A class decorated with @ray.remote: C.remote(*args) creates an actor (a chare on
    some PE) and returns its ActorHandle."""

    def __init__(self, cls):
        self._user_cls = cls
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__module__ = cls.__module__
        self.__doc__ = cls.__doc__
        # The chare class: the user's methods first, then the actor's queue and Chare. Its
        # qualified name leads to it through this object (pickle finds it by name).
        self._chare_cls = type(cls.__name__, (cls, _ActorBase),
                               {"__init__": _actor_init, "_ray_cls": cls,
                                "__module__": cls.__module__,
                                "__qualname__": cls.__qualname__ + "._chare_cls"})

    def __call__(self, *args, **kwargs):
        raise TypeError(f"actor class {self.__name__} cannot be instantiated directly: use "
                        f"{self.__name__}.remote(...)")

    def options(self, **ignored):
        return self

    def remote(self, *args, **kwargs):
        global _next_actor_pe
        pe = _next_actor_pe % _core.num_pes()
        _next_actor_pe += 1
        proxy = _chare.Chare(self._chare_cls, onPE=pe, args=[list(args), kwargs])
        return ActorHandle(proxy, self._chare_cls)


def remote(*args, **kwargs):
    """@ray.remote on a function (a remote function) or a class (an actor class); also
    @ray.remote(num_returns=N) (other options, resources and the like, are ignored)."""
    if len(args) == 1 and not kwargs and (isinstance(args[0], (types.FunctionType, type))):
        target = args[0]
        if isinstance(target, type):
            return ActorClass(target)
        return RemoteFunction(target)
    if args:
        raise TypeError("ray.remote: use @ray.remote or @ray.remote(num_returns=N, ...)")
    num_returns = kwargs.get("num_returns", 1)

    def deco(target):
        if isinstance(target, type):
            return ActorClass(target)
        if not isinstance(target, types.FunctionType):
            raise TypeError(f"ray.remote: {target!r} is not a function or a class")
        return RemoteFunction(target, num_returns)
    return deco


def method(num_returns=1, **ignored):
    """@ray.method(num_returns=N) on an actor class's method."""
    _check_num_returns(num_returns)

    def deco(fn):
        fn._ray_num_returns = num_returns
        return fn
    return deco
