"""Reducers: charm4py's built-in ones and Reducer.addReducer. A contribution travels as
the pickle of (reducer, target, data); the core's reduction tree combines two of them with
combine() (on whichever PE it combines), and finish() makes the result on the root.
"""
import array as _array
import pickle

from . import _wire


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


def combine(a, b):
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
    return pickle.dumps((ra, ta, p), _wire.PROTOCOL)


def finish(blob):
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
