# Part of ucharm/_core.pyx (included there): the fast wire format of small calls and
# channel messages, and the receiving side of both.
#
# Why: for a small argument, pickling the call's (kind, name, args, ...) tuple, copying the
# pickle into the message and unpickling it on arrival cost more than the rest of the
# message's trip (docs/architecture.md, "The Python bindings": the table). Values made only
# of None, bool, int (64-bit), float, bytes, str and tuples, lists and dicts of them are
# written straight into the message, each behind a one-byte tag, and read back from it;
# anything else (a NumPy array, an instance, a subclass, a very large int) is pickled.
# Both round-trip exactly: the same types and values. Lists and dicts are mutable, so
# whether two of them were the same object matters: a list or dict met twice in one
# message (or more than FW_MAX_CONTAINERS of them) sends the message pickled, as pickle
# keeps such sharing; immutable values may arrive as equal copies where one object was
# sent twice.
#
# A message of this format: word 0 = the bytes after the two words, word 1 = FW_CALL or
# FW_CHAN (the pickle format's word 1 is a buffer count, far below these).
from cpython.long cimport PyLong_FromLongLong, PyLong_AsLongLongAndOverflow
from cpython.float cimport PyFloat_FromDouble, PyFloat_AS_DOUBLE
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_SIZE, PyTuple_GET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcmp
from libc.stdint cimport uint8_t, uint16_t
from cpython.list cimport PyList_New, PyList_SET_ITEM, PyList_GET_SIZE, PyList_GET_ITEM
from cpython.dict cimport PyDict_Next

cdef extern from "Python.h":
    Py_ssize_t PyDict_GET_SIZE(object d)

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object s, Py_ssize_t* size) except? NULL
    object PyObject_Vectorcall(object callable, PyObject* const* args, size_t nargsf, PyObject* kwnames)

cdef extern from *:
    """
    // A type's attribute version: changes whenever an attribute of it or of a base is
    // set or deleted (0: none assigned, never cached on).
    static inline unsigned int uc_type_version(PyObject* t) { return ((PyTypeObject*)t)->tp_version_tag; }
    """
    unsigned int uc_type_version(PyObject* t)

cdef enum:
    FW_NONE = 0
    FW_TRUE = 1
    FW_FALSE = 2
    FW_INT = 3
    FW_FLOAT = 4
    FW_BYTES = 5
    FW_STR = 6
    FW_TUPLE = 7
    FW_LIST = 8
    FW_DICT = 9
    FW_MAX_CONTAINERS = 32  # lists and dicts per message (each checked against the others)
    FW_MAX_DEPTH = 8   # tuples nested deeper take the pickle format (and recursion cannot happen)
    FW_MAX_ARGS = 16   # a fast call's arguments on the receiver's stack
    FW_PICKLED = 0xFFFF  # argument count of a call whose arguments follow as one pickle

cdef uint64_t FW_CALL = 0xFA57CA1100000001ULL
cdef uint64_t FW_CHAN = 0xFA57CA1100000002ULL


cdef struct FwSeen:  # the lists and dicts of one message so far
    PyObject* objs[FW_MAX_CONTAINERS]
    int n


cdef inline bint fw_first_time(FwSeen* seen, object o) noexcept:
    """Records container o; False when it was already there or there is no room."""
    cdef int k
    for k in range(seen.n):
        if seen.objs[k] == <PyObject*>o:
            return False
    if seen.n == FW_MAX_CONTAINERS:
        return False
    seen.objs[seen.n] = <PyObject*>o
    seen.n += 1
    return True


cdef Py_ssize_t fw_size(object o, int depth, FwSeen* seen) except -2:
    """The bytes `o` takes in the fast format, or -1 when it cannot travel so."""
    cdef Py_ssize_t n, s, total, k
    cdef int overflow = 0
    cdef Py_ssize_t pos = 0
    cdef PyObject* key
    cdef PyObject* val
    if o is None or o is True or o is False:
        return 1
    t = type(o)
    if t is int:
        PyLong_AsLongLongAndOverflow(o, &overflow)
        return -1 if overflow else 9
    if t is float:
        return 9
    if t is bytes:
        n = PyBytes_GET_SIZE(o)
        return 5 + n if n <= 0xFFFFFFFF else -1
    if t is str:
        try:
            PyUnicode_AsUTF8AndSize(o, &n)  # cached in the str object
        except UnicodeEncodeError:  # lone surrogates: pickle writes them
            return -1
        return 5 + n if n <= 0xFFFFFFFF else -1
    if t is tuple:
        if depth >= FW_MAX_DEPTH:
            return -1
        total = 5
        for k in range(PyTuple_GET_SIZE(o)):
            s = fw_size(<object>PyTuple_GET_ITEM(o, k), depth + 1, seen)
            if s < 0:
                return -1
            total += s
        return total
    if t is list:
        if depth >= FW_MAX_DEPTH or not fw_first_time(seen, o):
            return -1
        total = 5
        for k in range(PyList_GET_SIZE(o)):
            s = fw_size(<object>PyList_GET_ITEM(o, k), depth + 1, seen)
            if s < 0:
                return -1
            total += s
        return total
    if t is dict:
        if depth >= FW_MAX_DEPTH or not fw_first_time(seen, o):
            return -1
        total = 5
        while PyDict_Next(o, &pos, &key, &val):
            s = fw_size(<object>key, depth + 1, seen)
            if s < 0:
                return -1
            total += s
            s = fw_size(<object>val, depth + 1, seen)
            if s < 0:
                return -1
            total += s
        return total
    return -1


cdef inline char* fw_put32(char* p, uint32_t v) noexcept:
    memcpy(p, &v, 4)
    return p + 4


cdef int fw_changed() except -1:
    # Only a finalizer run by the garbage collector between sizing and writing could do it.
    raise BufferError("ucharm: a list or dict changed while its message was written")


cdef char* fw_write(object o, char* p, char* end) except NULL:
    """Writes `o` (fw_size said it fits) at p, not past end; returns the end of it."""
    cdef int64_t i
    cdef double d
    cdef Py_ssize_t n, k
    cdef const char* s
    cdef Py_ssize_t pos = 0
    cdef PyObject* key
    cdef PyObject* val
    if end - p < 1:
        fw_changed()
    if o is None:
        p[0] = FW_NONE
        return p + 1
    if o is True:
        p[0] = FW_TRUE
        return p + 1
    if o is False:
        p[0] = FW_FALSE
        return p + 1
    t = type(o)
    if end - p < (9 if (t is int or t is float) else 5):
        fw_changed()
    if t is int:
        p[0] = FW_INT
        i = o
        memcpy(p + 1, &i, 8)
        return p + 9
    if t is float:
        p[0] = FW_FLOAT
        d = PyFloat_AS_DOUBLE(o)
        memcpy(p + 1, &d, 8)
        return p + 9
    if t is bytes:
        n = PyBytes_GET_SIZE(o)
        if end - p < 5 + n:
            fw_changed()
        p[0] = FW_BYTES
        p = fw_put32(p + 1, <uint32_t>n)
        memcpy(p, PyBytes_AS_STRING(o), n)
        return p + n
    if t is str:
        s = PyUnicode_AsUTF8AndSize(o, &n)
        if end - p < 5 + n:
            fw_changed()
        p[0] = FW_STR
        p = fw_put32(p + 1, <uint32_t>n)
        memcpy(p, s, n)
        return p + n
    if t is tuple:
        n = PyTuple_GET_SIZE(o)
        p[0] = FW_TUPLE
        p = fw_put32(p + 1, <uint32_t>n)
        for k in range(n):
            p = fw_write(<object>PyTuple_GET_ITEM(o, k), p, end)
        return p
    if t is list:
        n = PyList_GET_SIZE(o)
        p[0] = FW_LIST
        p = fw_put32(p + 1, <uint32_t>n)
        for k in range(n):
            if k >= PyList_GET_SIZE(o):
                fw_changed()
            p = fw_write(<object>PyList_GET_ITEM(o, k), p, end)
        return p
    if t is dict:
        n = PyDict_GET_SIZE(o)
        p[0] = FW_DICT
        p = fw_put32(p + 1, <uint32_t>n)
        k = 0
        while PyDict_Next(o, &pos, &key, &val):
            if k == n:
                fw_changed()
            p = fw_write(<object>key, p, end)
            p = fw_write(<object>val, p, end)
            k += 1
        if k != n:
            fw_changed()
        return p
    fw_changed()
    return NULL


cdef int fw_truncated() except -1:
    raise ValueError("ucharm: a message of the fast format is truncated")


cdef object fw_read(const char** pp, const char* end):
    """The value at *pp (advanced past it)."""
    cdef const char* p = pp[0]
    cdef int64_t i
    cdef double d
    cdef uint32_t n, k
    cdef object v
    if p >= end:
        fw_truncated()
    cdef char tag = p[0]
    p += 1
    if tag == FW_NONE:
        pp[0] = p
        return None
    if tag == FW_TRUE:
        pp[0] = p
        return True
    if tag == FW_FALSE:
        pp[0] = p
        return False
    if tag == FW_INT or tag == FW_FLOAT:
        if end - p < 8:
            fw_truncated()
        pp[0] = p + 8
        if tag == FW_INT:
            memcpy(&i, p, 8)
            return PyLong_FromLongLong(i)
        memcpy(&d, p, 8)
        return PyFloat_FromDouble(d)
    if end - p < 4:
        fw_truncated()
    memcpy(&n, p, 4)
    p += 4
    if tag == FW_BYTES or tag == FW_STR:
        if <size_t>(end - p) < n:
            fw_truncated()
        pp[0] = p + n
        if tag == FW_BYTES:
            return PyBytes_FromStringAndSize(p, n)
        return PyUnicode_DecodeUTF8(p, n, NULL)
    pp[0] = p
    if tag == FW_TUPLE:
        t = PyTuple_New(n)
        for k in range(n):
            v = fw_read(pp, end)
            Py_INCREF(v)
            PyTuple_SET_ITEM(t, k, v)
        return t
    if tag == FW_LIST:
        if <size_t>(end - p) < n:  # each item takes a byte at least: no huge list from a bad count
            fw_truncated()
        t = PyList_New(n)
        for k in range(n):
            v = fw_read(pp, end)
            Py_INCREF(v)
            PyList_SET_ITEM(t, k, v)
        return t
    if tag == FW_DICT:
        t = {}
        for k in range(n):
            key = fw_read(pp, end)
            t[key] = fw_read(pp, end)
        return t
    raise ValueError(f"ucharm: a message of the fast format holds an unknown tag {tag}")


cdef inline uint32_t fw_hash(const char* s, Py_ssize_t n) noexcept:
    """FNV-1a of an entry method's name: where the receiver's cache looks first."""
    cdef uint32_t h = 2166136261U
    cdef Py_ssize_t k
    for k in range(n):
        h = (h ^ <uint8_t>s[k]) * 16777619U
    return h


# Pickling without out-of-band buffers: the fast format's frame around a pickle (arguments
# the tags do not take). A pickle that would put a buffer out of band (a NumPy array: zero
# copy on arrival) takes the general format instead; this list notices it (reentrant:
# only what one dumps appended counts).
cdef list _oob = []
cdef object _oob_append = _oob.append

cdef bytes dumps_in_band(object obj):
    """obj pickled (protocol 5), or None when a buffer would go out of band."""
    cdef Py_ssize_t n0 = len(_oob)
    blob = _dumps(obj, _PROTO, buffer_callback=_oob_append)
    if len(_oob) > n0:
        del _oob[n0:]
        return None
    return blob


# ---- a fast call: [u32 name hash][u16 name length][u16 argument count][name][arguments] ----
# (argument count FW_PICKLED: the argument tuple follows as one pickle)
cdef void* fw_build_call(bytes name, uint32_t h, PyObject* const* args, Py_ssize_t nargs,
                         bytes pickled) except? NULL:
    """The message of a call whose arguments all fit the fast format; NULL (no error) when
    one does not. `pickled` (not None): the pickle of the argument tuple instead."""
    cdef Py_ssize_t k, s
    cdef Py_ssize_t nl = PyBytes_GET_SIZE(name)
    cdef size_t size = 8 + nl
    cdef FwSeen seen
    seen.n = 0
    if pickled is not None:
        size += PyBytes_GET_SIZE(pickled)
        nargs = FW_PICKLED
    elif nargs > FW_MAX_ARGS:
        return NULL
    for k in range(nargs if pickled is None else 0):
        s = fw_size(<object>args[k], 0, &seen)
        if s < 0:
            return NULL
        size += s
    cdef void* msg = raw_alloc(16 + size)
    cdef char* p = raw_payload(msg)
    cdef uint64_t* words = <uint64_t*>p
    cdef uint16_t u16
    words[0] = size
    words[1] = FW_CALL
    p = fw_put32(p + 16, h)
    u16 = <uint16_t>nl
    memcpy(p, &u16, 2)
    u16 = <uint16_t>nargs
    memcpy(p + 2, &u16, 2)
    memcpy(p + 4, PyBytes_AS_STRING(name), nl)
    p += 4 + nl
    if pickled is not None:
        memcpy(p, PyBytes_AS_STRING(pickled), PyBytes_GET_SIZE(pickled))
        return msg
    try:
        for k in range(nargs):
            p = fw_write(<object>args[k], p, raw_payload(msg) + 16 + size)
    except BaseException:
        CmiFree(msg)
        raise
    return msg


# The receiver's cache of entry methods: direct-mapped by (class, name hash); an entry is
# good while its class's attribute version is the one it was found under (a method set or
# deleted on the class or a base changes the version).
cdef struct CallSlot:
    PyObject* cls      # a reference
    PyObject* fn       # a reference
    PyObject* name     # the name (str), a reference
    PyObject* name_b   # its UTF-8 (bytes), a reference
    uint32_t hash
    unsigned int version
    int kind           # _entry_kind's: 0 plain (called here), 1 the slow path

cdef enum:
    CALL_SLOTS = 256
cdef CallSlot _call_cache[CALL_SLOTS]
cdef CallSlot _miss_slot  # an uncached lookup's result (refilled each time)

cdef extern from "Python.h":
    void uc_xdecref "Py_XDECREF"(PyObject*)


cdef inline CallSlot* call_slot(PyObject* cls, uint32_t h) noexcept:
    return &_call_cache[(h ^ <uint32_t>(<uintptr_t>cls >> 4)) & (CALL_SLOTS - 1)]


cdef CallSlot* call_lookup(object o, uint32_t h, const char* name, Py_ssize_t nl) except NULL:
    """The cache slot of entry method `name` of o's class, filled when it was not there; its
    fn is NULL for a name that is no entry method (the slow path reports it)."""
    cdef object t = type(o)
    cdef PyObject* cls = <PyObject*>t
    cdef CallSlot* e = call_slot(cls, h)
    cdef unsigned int version = uc_type_version(cls)
    if (e.cls == cls and e.hash == h and version != 0 and e.version == version
            and PyBytes_GET_SIZE(<object>e.name_b) == nl
            and memcmp(PyBytes_AS_STRING(<object>e.name_b), name, nl) == 0):
        return e
    s = PyUnicode_DecodeUTF8(name, nl, NULL)
    fn = getattr(<object>cls, s, None)
    kind = _entry_kind.get(fn)
    version = uc_type_version(cls)  # the lookup assigned one
    if kind is None or version == 0:  # not seen yet (the slow path records it), or not cacheable
        e = &_miss_slot
        kind = 1
    uc_xdecref(e.cls)
    uc_xdecref(e.fn)
    uc_xdecref(e.name)
    uc_xdecref(e.name_b)
    b = PyBytes_FromStringAndSize(name, nl)
    e.cls = cls
    e.fn = <PyObject*>fn
    e.name = <PyObject*>s
    e.name_b = <PyObject*>b
    Py_INCREF(<object>cls)
    Py_INCREF(fn)
    Py_INCREF(s)
    Py_INCREF(b)
    e.hash = h
    e.version = version
    e.kind = kind
    return e

cdef void fw_invoke_call(object o, void* msg) noexcept:
    """A fast call arrived for element o: decode it, free the message, call the method (a
    plain one here, with the arguments on the C stack; others through charm.py)."""
    cdef const char* p = raw_payload(msg)
    cdef const char* end = p + 16 + (<uint64_t*>p)[0]
    cdef uint32_t h
    cdef uint16_t nl, nargs
    cdef PyObject* stack[FW_MAX_ARGS + 1]
    cdef Py_ssize_t k, filled = 0
    cdef CallSlot* e
    cdef int kind = 1
    name = None
    p += 16
    memcpy(&h, p, 4)
    memcpy(&nl, p + 4, 2)
    memcpy(&nargs, p + 6, 2)
    p += 8
    args = None
    try:
        try:
            if (nargs > FW_MAX_ARGS and nargs != FW_PICKLED) or end - p < nl:
                fw_truncated()
            e = call_lookup(o, h, p, nl)
            fn = <object>e.fn
            kind = e.kind
            name = <object>e.name
            p += nl
            stack[0] = <PyObject*>o
            if nargs == FW_PICKLED:
                args = _loads(PyBytes_FromStringAndSize(p, end - p))
                nargs = 0
            for k in range(nargs):
                v = fw_read(&p, end)
                Py_INCREF(v)
                stack[1 + k] = <PyObject*>v
                filled += 1
        finally:
            CmiFree(msg)  # everything is in Python objects now (or failed)
        if kind == 0:
            if args is not None:
                fn(o, *args)
            else:
                PyObject_Vectorcall(fn, stack, 1 + nargs, NULL)
            if needs_after_entry(o):
                _py.after_entry(o)
        elif args is not None:
            _py.invoke_slow(o, None, (0, name, args, None, None, False), None)
        else:
            args = PyTuple_New(nargs)
            for k in range(nargs):
                Py_INCREF(<object>stack[1 + k])
                PyTuple_SET_ITEM(args, k, <object>stack[1 + k])
            _py.invoke_slow(o, None, (0, name, args, None, None, False), None)
    except BaseException as ex:
        if not _py.handle_exit(ex):
            _fatal(f"in entry method {type(o).__name__}.{name}" if name is not None else "in an entry method")
    finally:
        for k in range(filled):
            Py_DECREF(<object>stack[1 + k])
