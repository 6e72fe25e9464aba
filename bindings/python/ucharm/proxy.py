"""Proxies: how a program names chares. An ElementProxy is one element (a singleton
chare, a group member, an array element); a CollectionProxy is a whole group or array
(its calls are broadcasts; indexing it gives element proxies). `proxy.method` is a
_core.BoundEntry, which builds and sends a plain call in C.
"""
from . import _core, _wire, futures
from . import chare, charm as runtime  # cycles: used at call time


Method = _core.BoundEntry  # proxy.method


def _check_entry(cls, name):
    if cls is not None and not callable(getattr(cls, name, None)):
        raise AttributeError(f"chare class {cls.__name__} has no entry method {name!r}")


class Proxy:
    # No __slots__: an entry method, once looked up, is kept in the instance's __dict__,
    # so that the next `proxy.m` is a plain attribute read.
    issec = False  # charm4py's attribute: true for section proxies (sections.py)

    def __getattr__(self, name):
        # Called only for names that are not attributes yet: entry methods.
        if name[:2] == "__" or name in _PROXY_SLOTS:
            raise AttributeError(name)
        _check_entry(self._cls, name)
        m = self.__dict__[name] = Method(self, name)
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
            fut = futures.Future()
            fut._only_done = want == 1
        head, bufs = _wire.dumps_call((_wire.CALL, name, args, kwargs or None, fut, False), self._cls, name)
        _core.send(self._ref, self._idx, head, bufs)
        return fut

    def ckLocal(self):
        return chare._local.get((_core.ref_id(self._ref), _wire.norm(self._idx)))

    def __getitem__(self, idx):
        # A singleton chare's proxy indexed by its only index, as in charm4py.
        if self._idx is None and idx in (0, (0,)):
            return self
        raise TypeError(f"{self!r} is the proxy of one element: it cannot be indexed by {idx!r}")

    def __reduce__(self):
        return (ElementProxy, (self._cls, self._ref, self._idx))

    def __repr__(self):
        return f"<proxy to {_wire.clsname(self._cls)} {self._idx}>"


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
            fut = futures.Future(self._count())
            fut._by_index = True
            fut._only_done = want == 1
        head, bufs = _wire.dumps_call((_wire.CALL, name, args, kwargs or None, fut, True), self._cls, name)
        _core.broadcast(self._ref, head, bufs)
        return fut

    def __getitem__(self, idx):
        if type(idx) is list:
            idx = tuple(idx)
        if type(idx) is slice or (type(idx) is tuple and any(type(k) is slice for k in idx)):
            from . import sections  # (a cycle: sections subclasses Proxy)
            return sections.slice_section(self, idx)  # a section proxy (charm4py)
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
        return chare._local.get((_core.ref_id(self._ref), _core.my_pe()))

    def ckInsert(self, index, args=None, onPE=-1, useAtSync=False):
        if self._shape is not None:
            raise ValueError("ckInsert: this array was created with a fixed size; create it with "
                             "Array(C, ndims=N) to insert elements")
        if onPE != -1 and not (isinstance(onPE, int) and 0 <= onPE < _core.num_pes()):
            raise ValueError(f"ckInsert(onPE={onPE!r}): give a PE in [0, {_core.num_pes()}) or -1")
        t = (index,) if isinstance(index, int) else tuple(index)
        if len(t) != self._ndims_dynamic():
            raise IndexError(f"index {index!r} has {len(t)} dimensions; the array has {self._ndims_dynamic()}")
        at_sync = useAtSync or self.__dict__.get("_at_sync", False)
        # onPE: the element is built there (it is inserted at its home, then moves: chare.py).
        kind = self._kind if onPE == -1 else ("array", self._ndims_dynamic(), onPE)
        _core.insert(self._ref, t, chare._blob(self._cls, args, kind, None, at_sync))
        coll = _core.ref_id(self._ref)
        inserted_here[coll] = inserted_here.get(coll, 0) + 1

    def ckDoneInserting(self):
        """Ends the insertions made so far (from any PE, through any proxy of the array):
        reductions over the array then count every element inserted before this call; the
        insertions themselves must have been made (their entry methods run) by then."""
        if self._shape is None:
            global _done_seq
            _done_seq += 1
            # Every PE reports how many it inserted; PE 0 adds them up (charm.py).
            runtime.charm.thisProxy._ck_count_inserted(_core.ref_id(self._ref), (_core.my_pe(), _done_seq))

    def __reduce__(self):
        return (CollectionProxy, (self._cls, self._ref, self._kind, self._shape, None))

    def __repr__(self):
        return f"<proxy to {self._kind} of {_wire.clsname(self._cls)}>"


inserted_here = {}  # collection id -> elements this PE inserted (ckInsert), ever
_done_seq = 0       # this PE's ckDoneInserting calls

_PROXY_SLOTS = frozenset(("_cls", "_ref", "_idx", "_kind", "_shape", "_creation", "_elems", "_at_sync"))
