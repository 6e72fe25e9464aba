"""Sections (charm4py's API): a proxy for a subset of a group or array.

charm.split(proxy, n, elems=[[...], ...] | section_func=f | slicing=...), charm.combine(*proxies),
array_proxy[start:stop:step] (a slice per dimension), Group(C, onPEs=[...]).

A call on a section proxy is sent to each member as a point-to-point message, so it
follows members that migrate (the core's location manager routes it) and each member gets
it once, in the caller's order. A reduction over a section (self.contribute(...,
section=proxy), or any contribute of a constrained group's element) goes to the runtime's
element on the section's root PE (the PE that made the section), which combines the
contributions in index order once it has one from every member; each member counts its
rounds per section, and the count travels with it when it migrates.
"""
import itertools

from . import _core, _wire
from . import proxy as _proxy, charm as runtime  # cycles: used at call time

_next_sid = itertools.count()


class SectionProxy(_proxy.Proxy):
    """A subset of a group (members are PEs) or array (members are index tuples)."""

    def __init__(self, cls, ref, kind, members, sid, root, shape=None):
        self._cls, self._ref, self._kind, self._shape = cls, ref, kind, shape
        self._members = tuple(members)
        self._sid, self._root = sid, root
        self._elems = {}

    def _key(self):
        return ("section", self._sid)

    def _wire_idx(self, m):
        return ("pe", m) if self._kind == "group" else m

    def _ck_call(self, name, args, kwargs, want):
        fut = None
        if want:
            from . import futures
            fut = futures.Future(len(self._members))
            fut._by_index = True
            fut._only_done = want == 1
        head, bufs = _wire.dumps_call((_wire.CALL, name, args, kwargs or None, fut, fut is not None),
                                      self._cls, name)
        for m in self._members:
            _core.send(self._ref, self._wire_idx(m), head, bufs)
        return fut

    def __getattr__(self, name):
        if name[:2] == "__" or name in _SECTION_SLOTS:
            raise AttributeError(name)
        _proxy._check_entry(self._cls, name)
        m = self.__dict__[name] = _SectionMethod(self, name)
        return m

    def __getitem__(self, idx):
        if self._kind == "group":
            return _proxy.ElementProxy(self._cls, self._ref, ("pe", idx))
        t = (idx,) if isinstance(idx, int) else tuple(idx)
        return _proxy.ElementProxy(self._cls, self._ref, t)

    def ckLocalBranch(self):
        from . import chare
        return chare._local.get((_core.ref_id(self._ref), _core.my_pe()))

    def __len__(self):
        return len(self._members)

    def __reduce__(self):
        return (SectionProxy, (self._cls, self._ref, self._kind, self._members, self._sid, self._root,
                               self._shape))

    def __repr__(self):
        return f"<section proxy {self._sid} of {_wire.clsname(self._cls)}: {len(self._members)} members>"


class _SectionMethod:
    """section_proxy.method: calls it on every member (ret=True/awaitable=True: a Future
    of every member's return value, in member order)."""
    __slots__ = ("proxy", "name")

    def __init__(self, proxy, name):
        self.proxy, self.name = proxy, name

    def __call__(self, *args, ret=False, awaitable=False, **kwargs):
        return self.proxy._ck_call(self.name, args, kwargs, 2 if ret else (1 if awaitable else 0))

    def __reduce__(self):
        return (_SectionMethod, (self.proxy, self.name))


_SECTION_SLOTS = frozenset(("_cls", "_ref", "_kind", "_shape", "_members", "_sid", "_root", "_elems"))


def _norm(member, kind):
    if kind == "group":
        if not isinstance(member, int) or not 0 <= member < _core.num_pes():
            raise IndexError(f"section member {member!r}: group members are PEs in [0, {_core.num_pes()})")
        return member
    t = (member,) if isinstance(member, int) else tuple(member)
    if not all(isinstance(x, int) for x in t):
        raise IndexError(f"section member {member!r}: use ints or tuples of ints")
    return t


def _base(proxy):
    """(cls, ref, kind, shape, all members or None) of a collection or section proxy."""
    if isinstance(proxy, SectionProxy):
        return proxy._cls, proxy._ref, proxy._kind, proxy._shape, proxy._members
    if not isinstance(proxy, _proxy.CollectionProxy):
        raise TypeError(f"sections are made of group or array proxies, not {proxy!r}")
    kind = "group" if proxy._kind == "group" else "array"
    members = None
    if kind == "group":
        members = tuple(range(_core.num_pes()))
    elif proxy._shape is not None:
        members = tuple(itertools.product(*(range(n) for n in proxy._shape)))
    return proxy._cls, proxy._ref, kind, proxy._shape, members


def make(proxy, members):
    cls, ref, kind, shape, _ = _base(proxy)
    seen = sorted(set(_norm(m, kind) for m in members))
    if not seen:
        raise ValueError("a section needs at least one member")
    if shape is not None:
        for t in seen:
            if len(t) != len(shape) or any(not 0 <= x < n for x, n in zip(t, shape)):
                raise IndexError(f"section member {t} is outside the array's bounds {shape}")
    sid = (_core.my_pe(), next(_next_sid))
    return SectionProxy(cls, ref, kind, seen, sid, _core.my_pe(), shape)


def split(proxy, numsections, section_func=None, elems=None, slicing=None):
    if elems is not None:
        if numsections == 1 and elems and not isinstance(elems[0], (list, set, tuple, range)):
            elems = [elems]
        if numsections == 1 and elems and isinstance(elems[0], tuple) and all(isinstance(x, int) for x in elems[0]):
            elems = [elems]  # one section of N-D indices
        if len(elems) != numsections:
            raise ValueError(f"charm.split: {numsections} sections but {len(elems)} lists of elements")
        return [make(proxy, e) for e in elems]
    if slicing is not None:
        return [slice_section(proxy, slicing)]
    if section_func is not None:
        cls, ref, kind, shape, members = _base(proxy)
        if members is None:
            raise ValueError("charm.split(section_func=...): the array's size must be known (not an inserted array)")
        # Each element says which sections it is in (charm4py: an int, a list, or < 0: none).
        answers = proxy._ck_section_of(section_func, ret=True).get()
        lists = [[] for _ in range(numsections)]
        for idx, secs in answers:
            if isinstance(secs, int):
                secs = [] if secs < 0 else [secs]
            for s in secs:
                lists[s].append(idx)
        return [make(proxy, e) for e in lists]
    raise TypeError("charm.split: give elems=, section_func= or slicing=")


def combine(*proxies):
    if not proxies:
        raise ValueError("charm.combine: give at least one proxy")
    members = set()
    for p in proxies:
        b = _base(p)
        if b[4] is None:
            raise ValueError("charm.combine: the array's size must be known")
        members.update(b[4])
    return make(proxies[0], members)


def slice_section(proxy, key):
    """proxy[slices]: the members whose index lies in every dimension's slice."""
    shape = proxy._shape
    if shape is None:
        raise ValueError("slicing needs an array of known size (not one filled by ckInsert)")
    key = key if isinstance(key, tuple) else (key,)
    if len(key) != len(shape):
        raise IndexError(f"slice {key!r} has {len(key)} dimensions; the array has {len(shape)}")
    ranges = [range(*k.indices(n)) if isinstance(k, slice) else [k] for k, n in zip(key, shape)]
    return make(proxy, list(itertools.product(*ranges)))


def contribute(chare, data, reducer, target, section, blob_of):
    """A member's contribution to a reduction over `section` (see the module's text)."""
    sid = section._sid
    rounds = chare.__dict__.setdefault("_ck_sec_rounds", {})
    rnd = rounds.get(sid, 0)
    rounds[sid] = rnd + 1
    idx = chare.thisIndex
    me = idx if section._kind == "group" else tuple(idx)
    if me not in section._members:
        raise ValueError(f"contribute(section=...): element {idx} is not a member of {section!r}")
    blob, root = blob_of(data)
    runtime.charm.thisProxy[section._root]._ck_section_contribution(sid, rnd, len(section._members), me,
                                                                    blob, root)
