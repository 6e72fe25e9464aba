"""Chares, groups and arrays: the Chare base class, Group(), Array(), ArrayMap, and how an
element's Python object is built on its PE (construct(), called by the core through
charm.py's hooks).
"""
import pickle
import sys
import weakref

from greenlet import getcurrent

from . import _core, _wire, coroutines, futures, proxy, reduction, readonly
from . import _invoke, migration, charm as runtime  # cycles: used at call time


class _Sections:  # sections.py, imported on first use (it subclasses proxy.Proxy: a cycle)
    def __getattr__(self, name):
        from . import sections as m
        return getattr(m, name)


sections = _Sections()


_local = {}  # (collection id, index) -> element object on this PE


def _blob(cls, args, kind, creation, at_sync=False):
    if not (isinstance(cls, type) and issubclass(cls, Chare)):
        raise TypeError(f"{cls!r} is not a subclass of Chare")
    args = list(args) if args is not None else []
    try:
        return pickle.dumps((cls, args, kind, creation, at_sync), _wire.PROTOCOL)
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

    @property
    def _numthreads(self):
        """charm4py's count of this chare's coroutine entry methods that are running or
        waiting (the one calling it included)."""
        live = [g for g in getattr(self, "_ck_suspended", ()) if not g.dead]
        cur = getcurrent()
        if getattr(cur, "_ck_obj", None) is self and cur not in live:
            live.append(cur)
        return len(live)

    def contribute(self, data, reducer, target, section=None):
        if section is None and isinstance(self.thisProxy, sections.SectionProxy):
            section = self.thisProxy  # an element of a group made with onPEs=
        if reducer is None:
            reducer = reduction._nop
        pre = reduction.Reducer._pre.get(reducer)
        if pre is not None:
            data = pre(data, self)  # charm4py: pre(contribution, contributor)
        if reducer is reduction._gather:
            data = [(self.thisIndex, data)]
        root_pe, root_fid, tgt = 0, -1, None
        if isinstance(target, (futures.Future, futures._FutureRef)):
            root_pe, root_fid = target.pe, target.fid
        elif isinstance(target, (proxy.Method, sections._SectionMethod, sections._AllreduceBack)):
            tgt = target  # a proxy method (also of a section: the result goes to every member)
        elif target is not None:
            raise TypeError(f"contribute: the target must be a Future or a proxy method, not {target!r}")
        if section is not None:
            sections.contribute(self, data, reducer, target, section,
                                lambda d: (pickle.dumps((reducer, tgt, d), _wire.PROTOCOL), (root_pe, root_fid)))
            return
        if self._ck_kind == "chare":  # the only contributor: the result is its own
            target_, value, empty = reduction.finish(pickle.dumps((reducer, tgt, data), _wire.PROTOCOL))
            if root_fid >= 0:
                futures.send_future(root_pe, root_fid, value)
            elif tgt is not None:
                tgt() if empty else tgt(value)
            return
        if self._ck_kind == "array" and self.thisProxy._shape is None:
            # An array filled by ckInsert: the core's reduction tree needs the element count
            # of every PE, which only ckDoneInserting's total gives; the contributions go to
            # PE 0's runtime element, which combines them once it has them all.
            rnd = self._ck_red_round
            self._ck_red_round += 1
            runtime.charm.thisProxy[0]._ck_inserted_contribution(
                _core.ref_id(self.thisProxy._ref), rnd, self.thisIndex,
                pickle.dumps((reducer, tgt, data), _wire.PROTOCOL), (root_pe, root_fid))
            return
        _core.contribute(self._ck_ptr, pickle.dumps((reducer, tgt, data), _wire.PROTOCOL), root_pe, root_fid)

    def reduce(self, target, data=None, reducer=None, section=None):
        self.contribute(data, reducer, target, section)

    def _ck_section_of(self, func):  # charm.split(section_func=...): (collection, member, sections)
        me = self._ck_self._idx
        return (self._ck_self._ref, me[1] if self._ck_kind == "group" else me, func(self))

    def _ck_section_of_red(self, func, fut):  # the same, for an array filled by ckInsert
        self.contribute(self._ck_section_of(func), reduction.Reducer.gather, fut)

    def allreduce(self, data=None, reducer=None, section=None):
        """A future that every contributor gets the result in (section=: a reduction over
        that section's members, each of which gets the result)."""
        f = futures.Future()
        key = None if section is None else section._sid
        self._ck_allreduce.setdefault(key, []).append(f)
        if section is None:
            self.contribute(data, reducer, proxy.Method(self.thisProxy, "_ck_allreduce_done"))
        else:
            self.contribute(data, reducer, sections._AllreduceBack(section), section)
        return f

    def _ck_allreduce_done(self, value=None, sid=None):
        # One queue per collection or section: rounds of each end in order.
        queue = self._ck_allreduce[sid]
        queue.pop(0).send(value)
        if not queue:
            del self._ck_allreduce[sid]

    # ---- migration and load balancing (array elements; see migration.py) ----
    def migrate(self, toPe):
        """Moves this element to PE `toPe` once the running entry method returns (also an
        entry method: proxy[i].migrate(pe)). Messages sent to it follow it."""
        migration.check_can_migrate(self, toPe)
        _core.migrate(self._ck_ptr, toPe)

    def migrated(self):
        """Called on the new PE after the element arrived (its state restored)."""

    def setMigratable(self, migratable):
        """An element that must stay on its PE (migrate() refuses, the balancer leaves it)."""
        if self._ck_kind != "array":
            raise TypeError(f"setMigratable: only chare array elements migrate (this is a {self._ck_kind})")
        _core.set_migratable(self._ck_ptr, bool(migratable))
        self.migratable = bool(migratable)

    def AtSync(self):
        """charm4py's load-balancing point. In an array created with useAtSync=True the
        balancer runs once every such element has called it (it may move elements), then
        resumeFromSync() runs on each. Otherwise a barrier over the collection, then
        resumeFromSync() on every element."""
        if self._ck_kind == "array" and _core.uses_at_sync(self._ck_ptr):
            _core.at_sync(self._ck_ptr)
            return
        self.contribute(None, None, proxy.Method(self.thisProxy, "_ck_resume_from_sync"))

    def _ck_resume_from_sync(self):
        self.resumeFromSync()

    def resumeFromSync(self):
        pass

    def wait(self, cond):
        """Waits (in a coroutine) until the expression `cond` over self is true; it is
        checked after each entry method of this chare."""
        code = compile(cond, "<wait>", "eval")
        scope = sys.modules[type(self).__module__].__dict__  # the program's globals, as for @when
        while not eval(code, scope, {"self": self}):
            self._ck_waiting.append(getcurrent())
            coroutines.suspend("Chare.wait()")

    def __getstate__(self):
        raise TypeError(f"a {type(self).__name__} chare cannot be pickled: pass its proxy (self.thisProxy)")


def _create_chare(cls, onPE=-1, args=None):
    readonly.flush()
    if onPE != -1 and not 0 <= onPE < _core.num_pes():
        raise ValueError(f"Chare({cls.__name__}, onPE={onPE}): PE out of range [0, {_core.num_pes()})")
    creation = _CreationFuture()
    ref = _core.create_chare(onPE, _blob(cls, args, "chare", creation))
    p = proxy.ElementProxy(cls, ref, None)
    creation.ref = ref
    _creations[ref] = creation
    return p


class _CreationFuture(futures.Future):
    """A singleton chare's creation: kept for charm.awaitCreation until it completes."""
    ref = None

    def _deliver(self, value):
        super()._deliver(value)
        if self.ready() and self._waiter is None:
            _creations.pop(self.ref, None)


def Group(cls, args=None, onPEs=None):
    """One element of `cls` on every PE; returns the group's proxy. onPEs=[...]: the
    constructor runs on those PEs only, and the proxy returned (also the elements'
    thisProxy) is a section proxy over them."""
    readonly.flush()
    if onPEs is None:
        creation = futures.Future(_core.num_pes())
        ref = _core.create_group(_blob(cls, args, "group", creation))
        return proxy.CollectionProxy(cls, ref, "group", None, creation)
    pes = sorted(set(onPEs))
    if not pes or not all(isinstance(p, int) and 0 <= p < _core.num_pes() for p in pes):
        raise ValueError(f"Group({cls.__name__}, onPEs={onPEs!r}): give PEs in [0, {_core.num_pes()})")
    creation = futures.Future(len(pes))
    sid = (_core.my_pe(), next(sections._next_sid))
    # The group's reference is known once it is created: the section proxy is completed then.
    sec = sections.SectionProxy(cls, None, "group", pes, sid, _core.my_pe())
    blob = _blob(cls, args, ("group", sec), creation)
    ref = _core.create_group(blob)
    sec._ref = ref
    sec._ck_creation = creation
    return sec


def Array(cls, dims=None, ndims=-1, args=None, map=None, useAtSync=False):
    """A chare array: Array(C, n) or Array(C, (x, y, ...)) (1 to 6 dimensions) creates
    every element with `args`; Array(C, ndims=N) an empty one that grows with
    proxy.ckInsert(index). useAtSync=True: its elements take part in load balancing
    (self.AtSync(), resumeFromSync())."""
    readonly.flush()
    map_id = 0
    if map is not None:
        mcls = map._cls if isinstance(map, proxy.Proxy) else map
        if not (isinstance(mcls, type) and issubclass(mcls, ArrayMap)) or mcls not in _map_ids:
            raise TypeError(f"Array(..., map={map!r}): give a Group of an ArrayMap subclass "
                            "defined at module level")
        map_id = _map_ids[mcls]
    if dims is None:
        nd = ndims if ndims > 0 else 1
        if nd > 6:
            raise ValueError(f"chare arrays have 1 to 6 dimensions, not {nd}")
        ref = _core.create_empty_array(nd, map_id)
        p = proxy.CollectionProxy(cls, ref, ("array", nd), None, None)  # ckInsert sends this kind
        p._at_sync = bool(useAtSync)
        return p
    shape = (dims,) if isinstance(dims, int) else tuple(dims)
    if not 1 <= len(shape) <= 6 or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ValueError(f"Array({cls.__name__}, {dims!r}): give 1 to 6 non-negative extents")
    n = 1
    for d in shape:
        n *= d
    creation = futures.Future(n) if n > 0 else None
    ref = _core.create_array(shape, _blob(cls, args, ("array", shape), creation, bool(useAtSync)), map_id)
    return proxy.CollectionProxy(cls, ref, "array", shape, creation)


def register(cls):
    """charm4py's @register: there, chare classes of modules other than __main__ are
    registered with it (or charm.start(classes=, modules=)). Here every Chare subclass is
    known when it is defined, so it only checks that `cls` is one, and returns it."""
    if not (isinstance(cls, type) and issubclass(cls, Chare)):
        raise TypeError(f"register: {cls!r} is not a Chare subclass")
    return cls


class ArrayMap(Chare):
    """charm4py's base class for array maps: procNum(index) -> PE, for
    Array(C, dims, map=Group(MyMap, args=[...])). Every PE places and finds elements with
    its own branch of that group (built with the group's arguments), so procNum must give
    the same answer everywhere for an index. Before the branch of a PE is built (a map
    whose __init__ takes no arguments), a private instance of the class stands in for it.
    One group per ArrayMap class: arrays find their map by its class."""

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
_map_args = {}  # ArrayMap class -> its group's pickled arguments (on this PE)


def _map_branch(cls, args, obj):
    """A branch of a Group of an ArrayMap class was built on this PE: the class's map."""
    key = pickle.dumps(args, _wire.PROTOCOL)
    old = _map_args.get(cls)
    if old is not None and old != key:
        raise ValueError(f"Group({cls.__name__}, args={args!r}): a group of this ArrayMap class with other "
                         "arguments exists; arrays find their map by its class, so make one class per map")
    _map_args[cls] = key
    _map_instances[_map_ids[cls]] = obj


def _map_pe(map_id, index, npes):
    inst = _map_instances.get(map_id)
    if inst is None:
        cls = _map_classes[map_id - 1]
        inst = cls.__new__(cls)
        try:
            inst.__init__()
        except TypeError as e:
            raise RuntimeError(f"array map {cls.__name__} is needed on PE {_core.my_pe()} before its Group's "
                               f"branch was built there, and its __init__ needs the group's arguments ({e}): "
                               "create the map's Group before the arrays that use it, from the same PE") from e
        _map_instances[map_id] = inst
    pe = inst.procNum(index)
    if not isinstance(pe, int) or not 0 <= pe < npes:
        raise ValueError(f"{type(inst).__name__}.procNum({index}) returned {pe!r}, not a PE in [0, {npes})")
    return pe


_creations = {}


def _construct_main(ptr, cls, argv):
    """The main chare class's object, bound to the C++ main chare."""
    return _construct(ptr, pickle.dumps((cls, [argv], "chare", None, False), _wire.PROTOCOL))


def _construct(ptr, blob):
    cls, args, kind, creation, at_sync = pickle.loads(blob)
    shape = None
    section = None
    on_pe = -1
    if isinstance(kind, tuple) and kind[0] == "group":  # ("group", section proxy): onPEs=
        kind, section = kind
    elif isinstance(kind, tuple):  # ("array", shape) for bulk arrays, ("array", ndims) for insertion
        if len(kind) == 3:  # ckInsert(onPE=): ("array", ndims, pe)
            kind, on_pe = kind[:2], kind[2]
        kind, extent = kind
        shape = extent if isinstance(extent, tuple) else None
        array_kind = "array" if shape is not None else ("array", extent)
    obj = cls.__new__(cls)
    ref = _core.chare_ref(ptr)
    idx = _core.chare_index(ptr)
    obj._ck_kind = kind
    init_runtime(obj, ptr)
    obj._ck_red_round = 0
    obj._ck_when = None
    obj._ck_when_by_value = None  # (function, value) -> held calls, for `self.a == p` conditions
    obj._ck_when_eq_fns = set()
    if kind == "chare":
        obj.thisIndex = (0,)  # charm4py's singleton chares are one-element arrays
        obj.thisProxy = proxy.ElementProxy(cls, ref, None)
        key = None
    elif kind == "group":
        obj.thisIndex = _core.my_pe()
        obj.thisProxy = proxy.CollectionProxy(cls, ref, "group")
        key = obj.thisIndex
        if section is not None:
            section._ref = ref
            obj.thisProxy = section
            if obj.thisIndex not in section._members:  # not constructed here
                obj._ck_self = proxy.ElementProxy(cls, ref, ("pe", key))
                _local[(_core.ref_id(ref), key)] = obj
                return obj
    else:
        obj.thisIndex = idx
        obj.thisProxy = proxy.CollectionProxy(cls, ref, array_kind, shape)
        obj.migratable = True  # charm4py's attribute (setMigratable changes it)
        if at_sync:
            _core.set_uses_at_sync(ptr, True)
        key = idx
    obj._ck_self = proxy.ElementProxy(cls, ref, ("pe", key) if kind == "group" else key)
    _local[(_core.ref_id(ref), key)] = obj
    if on_pe != -1 and on_pe != _core.my_pe():
        # ckInsert(onPE=): the core inserts at the index's home; the element moves to its
        # PE at once and is constructed there on arrival (migration.arrived), where its
        # home forwards its messages, as for an element that migrated.
        # Until it leaves, calls that reach it here are kept (_Pending) and run there after
        # the constructor.
        obj._ck_pending_init = (cls, args, creation)
        obj._ck_held = []
        obj.__class__ = _Pending
        _invoke.entry_kind[_held] = 1  # (here: _invoke imports this module)
        _core.migrate(ptr, on_pe)
        return obj
    # Constructors run as coroutines: they may wait (charm.awaitCreation, Future.get), as
    # the main chare's and @coro ones do in charm4py.
    coroutines.spawn(_init_body, obj, args, creation, obj=obj)
    if kind == "group" and isinstance(obj, ArrayMap):
        _map_branch(cls, args, obj)
    return obj


class _PendingMeta(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _held  # every entry method: the slow path, which keeps the call (_invoke.py)


class _Pending(Chare, metaclass=_PendingMeta):
    """The class of an element inserted with ckInsert(onPE=) while it waits at its home PE
    to move to its own PE (it gets its class back as it leaves: migration.py)."""


def _held(self, *args, **kwargs):
    raise AssertionError("a call to an element inserted with ckInsert(onPE=) ran before it moved")



def _construct_arrived(obj, args, creation):
    """An element inserted with ckInsert(onPE=), on its PE: the constructor, then the calls
    that reached it at its home."""
    _init_body(obj, args, creation)
    for name, a, kw, fut, bcast in obj.__dict__.pop("_ck_held", ()):
        _invoke._call(obj, getattr(type(obj), name), a, kw, fut, bcast)


def init_runtime(obj, ptr):
    """The runtime's per-object fields that stay on a PE (a migrated element gets new
    ones where it arrives)."""
    obj._ck_ptr = ptr
    obj._ck_allreduce = {}  # None (the collection) or section id -> futures of pending allreduces
    obj._ck_waiting = []
    obj._ck_busy = False
    obj._ck_channels = weakref.WeakValueDictionary()  # open channels: closed when collected
    obj._ck_chan_wire = {}  # the same channels by a hash of their key (weak references): core_fastchan.pxi
    obj._ck_chan_count = {}
    obj._ck_early = {}
    obj._ck_suspended = []  # coroutines of this object that waited (coroutines.spawn)


def _init_body(obj, args, creation):
    try:
        obj.__init__(*args)
    except SystemExit as e:
        _invoke.handle_exit(e)
        return
    except BaseException:
        _invoke.die(f"in the constructor of {type(obj).__name__}")
    if creation is not None:
        creation.send(None)
    _invoke.after_entry(obj)
