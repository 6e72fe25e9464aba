"""Array elements moving between PEs, and the balancer's resumeFromSync.

The core moves an element (ChareBase::migrateMe, or the balancer at AtSync) by packing it
with its pup(); the bindings' pup (src/glue.cpp, src/core_migrate.pxi) calls pack() here on
the PE it leaves and arrived() on the PE it reaches. What travels is one pickle (protocol
5, contiguous buffers such as NumPy arrays out of band) of

  - the program's state: the object's __dict__ without the runtime's fields, or what the
    class's own __getstate__ returns (restored with its __setstate__), as in charm4py;
  - the runtime's fields that belong to the element wherever it is: thisProxy, thisIndex,
    held @when calls, the reduction round of an inserted array.

References from the state back to the element itself travel as such (a persistent id).
The constructor does not run again; migrated() runs on arrival. Channels reachable from
the state travel inside it (their receive queues and sequence numbers: see channel.py), as
do the messages of channels this element has not opened yet. An element cannot move while
a coroutine of it waits (a Future, a channel, Chare.wait) or once one of its channels has
carried device arrays or zero-copy buffers (the core's channel end stays on its home PE):
the job ends with a message naming the element.

Checkpoints (charm.checkpoint, see checkpoint.py) write every chare through the same
pack() (for_checkpoint=True): singleton chares, the main chare and group branches too. A
restart rebuilds them with arrived(), which then fixes what depends on the PE (a group
branch's thisIndex) and runs no migrated().
"""
import io
import pickle

from . import _core, _wire, channel
from . import chare as _chare, _invoke  # cycles: used at call time

# The runtime's fields that travel with the element (the others are rebuilt on arrival).
_CARRIED = ("_ck_kind", "_ck_red_round", "_ck_sec_rounds", "_ck_when", "_ck_when_by_value", "_ck_when_eq_fns",
            "_ck_chan_count", "_ck_early", "thisProxy", "thisIndex",
            # an element inserted with ckInsert(onPE=): its constructor runs where it arrives
            "_ck_pending_init", "_ck_held",
            # the runtime group's (charm.py's CharmRemote) reductions over inserted arrays and
            # sections, in a checkpoint
            "_ck_totals", "_ck_parts", "_ck_sparts")
_SELF = "ucharm.self"


def _name(obj):
    kind = obj.__dict__.get("_ck_kind")
    if kind == "chare":
        return f"chare {type(obj).__qualname__}"
    if kind == "group":
        return f"branch {obj.thisIndex} of group {type(obj).__qualname__}"
    return f"element {obj.thisIndex} of {type(obj).__qualname__}"


def check_can_migrate(obj, pe):
    """Chare.migrate's checks, raised in the caller's entry method."""
    if obj._ck_kind != "array":
        raise TypeError(f"migrate({pe}): only chare array elements migrate (this is a {obj._ck_kind} of "
                        f"{type(obj).__name__})")
    if not isinstance(pe, int) or not 0 <= pe < _core.num_pes():
        raise ValueError(f"migrate({pe!r}): PE out of range [0, {_core.num_pes()})")
    _check_channels(obj, f"migrate({pe})")
    if not _core.is_migratable(obj._ck_ptr):
        raise RuntimeError(f"migrate({pe}): {_name(obj)} is not migratable (setMigratable(False) was called)")


def _check_channels(obj, what):
    pinned = channel.pinned(obj)
    if pinned:
        raise RuntimeError(f"{what}: {_name(obj)} cannot migrate: its channel to {pinned[0]._remote!r} has "
                           "carried device arrays or zero-copy host buffers, whose core channel end stays on "
                           "the element's home PE; send host data (NumPy arrays) on channels of elements that move")


def about_to_migrate(obj):
    """On the PE the element leaves, before it is packed."""
    pending = obj.__dict__.get("_ck_pending_init")
    if pending is not None:  # ckInsert(onPE=) leaving its home: its own class again (chare.py)
        obj.__class__ = pending[0]
    waiting = [g for g in obj._ck_suspended if not g.dead]
    if waiting or obj._ck_waiting or obj._ck_allreduce:
        raise RuntimeError(f"{_name(obj)} cannot migrate while {max(len(waiting), 1)} coroutine(s) of it "
                           "wait (Future.get, Channel.recv, Chare.wait, allreduce): migrate once they have "
                           "returned")
    _check_channels(obj, "migration")
    key = (_core.ref_id(obj.thisProxy._ref), obj.thisIndex)
    if _chare._local.get(key) is obj:
        del _chare._local[key]


class _Pickler(pickle.Pickler):
    def __init__(self, f, obj, bufs):
        def oob(pb):
            try:
                bufs.append(pb.raw())
                return False
            except BufferError:  # not contiguous: in band
                return True
        super().__init__(f, _wire.PROTOCOL, buffer_callback=oob)
        self._obj = obj

    def persistent_id(self, o):
        return _SELF if o is self._obj else None


class _Unpickler(pickle.Unpickler):
    obj = None

    def persistent_load(self, pid):
        if pid != _SELF:
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r} in a migrated element's state")
        return self.obj


def pack(obj, for_checkpoint=False):
    """(head, out-of-band buffers) of the element's state: the class, then the state, as
    two pickles one after the other (the object must exist before its state is read)."""
    cls = type(obj)
    if for_checkpoint:
        from . import checkpoint  # (a cycle: used at call time)
        checkpoint.check_can_save(obj)
    d = obj.__dict__
    carried = {k: d[k] for k in _CARRIED if k in d}
    if carried.get("_ck_early"):
        carried["_ck_early"] = channel.freeze_early(carried["_ck_early"])
    custom = cls.__getstate__ is not _chare.Chare.__getstate__
    if custom:
        user = obj.__getstate__()
        if type(user) is dict and any(type(k) is str and k.startswith("_ck_") for k in user):
            # A copy of __dict__: the runtime's fields are rebuilt on arrival, not pickled.
            user = {k: v for k, v in user.items() if not (type(k) is str and k.startswith("_ck_"))}
    else:
        user = {k: v for k, v in d.items() if not k.startswith("_ck_") and k not in carried}
    f = io.BytesIO()
    bufs = []
    try:
        pickle.dump(cls, f, _wire.PROTOCOL)
        _Pickler(f, obj, bufs).dump((carried, custom, user, for_checkpoint))
    except Exception as e:
        what = "be checkpointed" if for_checkpoint else "migrate"
        raise TypeError(f"{_name(obj)} cannot {what}: {_culprit(obj, user, custom)}cannot be pickled "
                        f"({type(e).__name__}: {e}); give the class __getstate__/__setstate__ to choose what "
                        "is saved") from e
    return f.getvalue(), bufs


def _culprit(obj, user, custom):
    """'its attribute 'x' ' (the first one that cannot be pickled), else 'its state '."""
    if type(user) is dict:
        for k, v in user.items():
            try:
                _Pickler(io.BytesIO(), obj, []).dump(v)
            except Exception:
                return f"its attribute {k!r} ({type(v).__qualname__}) " if not custom else \
                    f"the entry {k!r} ({type(v).__qualname__}) of its __getstate__() "
    return "its state "


def arrived(ptr, head, bufs):
    """On the element's new PE: rebuilds its object (no constructor), runs migrated(); or,
    restarting, a chare of the checkpoint (no migrated())."""
    f = io.BytesIO(head)
    try:
        cls = pickle.load(f)
    except Exception as e:
        info = _core.restart_info()
        where = f"+restart {info[1]}: " if info else ""
        raise RuntimeError(f"{where}a chare's class cannot be found ({type(e).__name__}: {e}): classes are found "
                           "again by module and qualified name, so a restarted program must define the "
                           "checkpointed one's chare classes in the same modules") from e
    u = _Unpickler(f, buffers=bufs)  # a fresh memo for the second pickle
    obj = u.obj = cls.__new__(cls)
    _chare.init_runtime(obj, ptr)  # first: channels in the state register with the element
    try:
        carried, custom, user, restored = u.load()
    except Exception as e:
        raise RuntimeError(f"the state of a {cls.__qualname__} chare cannot be unpickled ({type(e).__name__}: "
                           f"{e})") from e
    obj.__dict__.update(carried)
    if custom:
        obj.__setstate__(user)
    else:
        obj.__dict__.update(user)
    kind = obj._ck_kind
    if kind != "array":  # restarting: a group branch or a singleton chare (the main chare too)
        ref = _core.chare_ref(ptr)
        if kind == "group":
            obj.thisIndex = _core.my_pe()  # a branch may come from another old PE's (restart rule)
            key = obj.thisIndex
            obj._ck_self = _chare.proxy.ElementProxy(cls, ref, ("pe", key))
        else:
            key = None
            obj._ck_self = _chare.proxy.ElementProxy(cls, ref, None)
        _chare._local[(_core.ref_id(ref), key)] = obj
        return obj
    if custom or "migratable" not in obj.__dict__:
        obj.migratable = _core.is_migratable(ptr)
    obj._ck_self = obj.thisProxy[obj.thisIndex]
    _chare._local[(_core.ref_id(obj.thisProxy._ref), obj.thisIndex)] = obj
    pending = obj.__dict__.pop("_ck_pending_init", None)
    if pending is not None:  # ckInsert(onPE=) arrived at its PE: constructed here
        _chare.coroutines.spawn(_chare._construct_arrived, obj, pending[1], pending[2], obj=obj)
        return obj
    if restored:
        return obj
    _invoke._run(obj, cls.migrated, (), {}, None, False)
    _invoke.after_entry(obj)
    return obj


def resume_from_sync(obj):
    """The balancer has decided (and maybe moved this element): resumeFromSync()."""
    _invoke._run(obj, type(obj).resumeFromSync, (), {}, None, False)
    _invoke.after_entry(obj)
