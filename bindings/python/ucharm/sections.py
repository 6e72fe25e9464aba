"""Sections (charm4py's API): a proxy for a subset of groups and arrays.

charm.split(proxy, n, elems=[[...], ...] | section_func=f | slicing=...), charm.combine(*proxies),
proxy[start:stop:step] (a slice per dimension), Group(C, onPEs=[...]). As in charm4py, a
section proxy has `issec` true and `section` == (root PE, section id); other proxies have
`issec` false. charm.combine may join sections of different collections: such a section's
members are elements of several groups and arrays (its first collection is the primary
one: indexing the section and `elems=` refer to it).

A call on a section proxy is sent to each member as a point-to-point message, so it
follows members that migrate (the core's location manager routes it) and each member gets
it once, in the caller's order. A reduction over a section (self.contribute(...,
section=proxy), self.allreduce(..., section=proxy), or any contribute of a constrained
group's element) goes to the runtime's element on the section's root PE (the PE that made
the section), which combines the contributions in member order once it has one from every
member; each member counts its rounds per section, and the count travels with it when it
migrates.
"""
import itertools

from . import _core, _wire
from . import proxy as _proxy, charm as runtime  # cycles: used at call time

_next_sid = itertools.count()


class SectionProxy(_proxy.Proxy):
    """A subset of groups (members are PEs) and arrays (members are index tuples)."""
    issec = True

    def __init__(self, cls, ref, kind, members, sid, root, shape=None, more=()):
        self._cls, self._ref, self._kind, self._shape = cls, ref, kind, shape
        self._members = tuple(members)
        self._more = tuple(more)  # (cls, ref, kind, shape, members) of other collections (combine)
        self._sid, self._root = sid, root
        self._elems = {}

    @property
    def section(self):
        return (self._root, self._sid)

    def _key(self):
        return ("section", self._sid)

    def _parts(self):
        """(cls, ref, kind, shape, members) of each collection the members belong to."""
        return ((self._cls, self._ref, self._kind, self._shape, self._members),) + self._more

    def _size(self):
        return len(self._members) + sum(len(p[4]) for p in self._more)

    def _position(self, ref, member):
        """The member's place in the section's order, or None if it is not a member."""
        pos = self.__dict__.get("_pos")
        if pos is None:
            pos = self.__dict__["_pos"] = {}
            for cls, r, kind, shape, members in self._parts():
                rid = _core.ref_id(r)
                for m in members:
                    pos[(rid, m)] = len(pos)
        return pos.get((_core.ref_id(ref), member))

    def _ck_call(self, name, args, kwargs, want):
        fut = None
        if want:
            from . import futures
            fut = futures.Future(self._size())
            fut._by_index = True
            fut._only_done = want == 1
        head, bufs = _wire.dumps_call((_wire.CALL, name, args, kwargs or None, fut, fut is not None),
                                      self._cls, name)
        for cls, ref, kind, shape, members in self._parts():
            for m in members:
                _core.send(ref, ("pe", m) if kind == "group" else m, head, bufs)
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
        return self._size()

    def __reduce__(self):
        return (SectionProxy, (self._cls, self._ref, self._kind, self._members, self._sid, self._root,
                               self._shape, self._more))

    def __repr__(self):
        return f"<section proxy {self._sid} of {_wire.clsname(self._cls)}: {self._size()} members>"


class _SectionMethod:
    """section_proxy.method: calls it on every member (ret=True/awaitable=True: a Future
    of every member's return value, in member order). Also a reduction target or callback:
    the result goes to every member."""
    __slots__ = ("proxy", "name")

    def __init__(self, proxy, name):
        self.proxy, self.name = proxy, name

    def __call__(self, *args, ret=False, awaitable=False, **kwargs):
        return self.proxy._ck_call(self.name, args, kwargs, 2 if ret else (1 if awaitable else 0))

    def __reduce__(self):
        return (_SectionMethod, (self.proxy, self.name))


class _AllreduceBack:
    """The target of self.allreduce(section=s): the result goes to every member, to the
    future its allreduce over s returned (members keep one queue per section)."""
    __slots__ = ("proxy",)

    def __init__(self, proxy):
        self.proxy = proxy

    def __call__(self, value=None):
        self.proxy._ck_call("_ck_allreduce_done", (value, self.proxy._sid), None, 0)

    def __reduce__(self):
        return (_AllreduceBack, (self.proxy,))


_SECTION_SLOTS = frozenset(("_cls", "_ref", "_kind", "_shape", "_members", "_more", "_sid", "_root",
                            "_elems", "_pos"))


class _InSlices:
    """section_func of proxy[slices] on an array whose size is not known (ckInsert): an
    element is in the section (0) if its index lies in every dimension's range."""

    def __init__(self, ranges):
        self.ranges = ranges

    def __call__(self, obj):
        idx = obj.thisIndex
        return 0 if all(i in r for i, r in zip(idx, self.ranges)) else -1


def _norm(member, kind):
    if kind == "group":
        if not isinstance(member, int) or not 0 <= member < _core.num_pes():
            raise IndexError(f"section member {member!r}: group members are PEs in [0, {_core.num_pes()})")
        return member
    t = (member,) if isinstance(member, int) else tuple(member)
    if not all(isinstance(x, int) for x in t):
        raise IndexError(f"section member {member!r}: use ints or tuples of ints")
    return t


def _parts_of(proxy):
    """(cls, ref, kind, shape, members or None) of each collection of a collection or
    section proxy; members None: an array filled by ckInsert (its size is not known here)."""
    if isinstance(proxy, SectionProxy):
        return proxy._parts()
    if not isinstance(proxy, _proxy.CollectionProxy):
        raise TypeError(f"sections are made of group or array proxies, not {proxy!r}")
    kind = "group" if proxy._kind == "group" else "array"
    members = None
    if kind == "group":
        members = tuple(range(_core.num_pes()))
    elif proxy._shape is not None:
        members = tuple(itertools.product(*(range(n) for n in proxy._shape)))
    return ((proxy._cls, proxy._ref, kind, proxy._shape, members),)


def _build(parts):
    """A new section of parts [(cls, ref, kind, shape, members)] (members checked and
    sorted; parts without members left out)."""
    done = []
    for cls, ref, kind, shape, members in parts:
        seen = sorted(set(_norm(m, kind) for m in members))
        if shape is not None:
            for t in seen:
                if len(t) != len(shape) or any(not 0 <= x < n for x, n in zip(t, shape)):
                    raise IndexError(f"section member {t} is outside the array's bounds {shape}")
        if seen:
            done.append((cls, ref, kind, shape, tuple(seen)))
    if not done:
        raise ValueError("a section needs at least one member")
    sid = (_core.my_pe(), next(_next_sid))
    cls, ref, kind, shape, members = done[0]
    return SectionProxy(cls, ref, kind, members, sid, _core.my_pe(), shape, done[1:])


def make(proxy, members):
    cls, ref, kind, shape, _ = _parts_of(proxy)[0]
    return _build([(cls, ref, kind, shape, members)])


def _ask_members(proxy, func):
    """[(ref, member, func(element))] of every element of a collection or section (each
    element answers; an array filled by ckInsert answers through a reduction, so its
    insertions must have ended with ckDoneInserting)."""
    parts = _parts_of(proxy)
    if all(p[4] is not None for p in parts):
        return proxy._ck_section_of(func, ret=True).get()
    from . import futures, reduction
    f = futures.Future()
    proxy._ck_section_of_red(func, f)
    return f.get()


def _split_by(proxy, numsections, func):
    lists = [{} for _ in range(numsections)]  # section -> ref id -> members
    info = {}
    for cls, ref, kind, shape, members in _parts_of(proxy):
        info[_core.ref_id(ref)] = (cls, ref, kind, shape)
    for ref, member, secs in _ask_members(proxy, func):
        if isinstance(secs, int):
            secs = [] if secs < 0 else [secs]
        for s in secs:
            if not 0 <= s < numsections:
                raise ValueError(f"charm.split: section_func returned {s} for element {member}; "
                                 f"sections are numbered 0 to {numsections - 1}")
            lists[s].setdefault(_core.ref_id(ref), []).append(member)
    return [_build([info[rid] + (ms,) for rid, ms in by_ref.items()]) for by_ref in lists]


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
        return _split_by(proxy, numsections, section_func)
    raise TypeError("charm.split: give elems=, section_func= or slicing=")


def combine(*proxies):
    """One section of every member of the proxies (of one or several collections)."""
    if not proxies:
        raise ValueError("charm.combine: give at least one proxy")
    by_ref = {}
    for p in proxies:
        for cls, ref, kind, shape, members in _parts_of(p):
            if members is None:
                members = [m for _, m, _ in _ask_members(p, _in_all)]
            part = by_ref.setdefault(_core.ref_id(ref), (cls, ref, kind, shape, set()))
            part[4].update(members)
    return _build(list(by_ref.values()))


def _in_all(obj):
    return 0


def slice_section(proxy, key):
    """proxy[slices]: the members whose index lies in every dimension's slice. A group's
    slice runs over its PEs (start 0, stop numPes by default); an array of unknown size
    (ckInsert) needs start and stop in every dimension, as in charm4py."""
    parts = _parts_of(proxy)
    cls, ref, kind, shape, _ = parts[0]
    key = key if isinstance(key, tuple) else (key,)
    if kind == "group":
        if len(key) != 1 or not isinstance(key[0], slice):
            raise IndexError(f"a group is sliced with one slice, not {key!r}")
        return make(proxy, range(*key[0].indices(_core.num_pes())))
    ndims = len(shape) if shape is not None else (proxy._ndims_dynamic() if hasattr(proxy, "_ndims_dynamic") else None)
    if ndims is not None and len(key) != ndims:
        raise IndexError(f"slice {key!r} has {len(key)} dimensions; the array has {ndims}")
    if shape is not None:
        ranges = [range(*k.indices(n)) if isinstance(k, slice) else [k] for k, n in zip(key, shape)]
        return make(proxy, list(itertools.product(*ranges)))
    ranges = []
    for k in key:
        if isinstance(k, slice):
            if k.start is None or k.stop is None:
                raise ValueError(f"slicing an array filled by ckInsert needs start and stop in every "
                                 f"dimension (charm4py's rule), not {key!r}")
            ranges.append(range(k.start, k.stop, 1 if k.step is None else k.step))
        else:
            ranges.append(range(k, k + 1))
    return _split_by(proxy, 1, _InSlices(tuple(ranges)))[0]


def contribute(chare, data, reducer, target, section, blob_of):
    """A member's contribution to a reduction over `section` (see the module's text)."""
    sid = section._sid
    idx = chare.thisIndex
    me = idx if chare._ck_kind == "group" else tuple(idx)
    pos = section._position(chare._ck_self._ref, me)
    if pos is None:
        raise ValueError(f"contribute(section=...): element {idx} is not a member of {section!r}")
    rounds = chare.__dict__.setdefault("_ck_sec_rounds", {})
    rnd = rounds.get(sid, 0)
    rounds[sid] = rnd + 1
    blob, root = blob_of(data)
    # (modulo: after a restart on fewer PEs the PE that made the section may be gone)
    runtime.charm.thisProxy[section._root % _core.num_pes()]._ck_section_contribution(sid, rnd, section._size(),
                                                                                      pos, blob, root)
