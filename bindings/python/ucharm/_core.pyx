# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
# distutils: language = c++
"""The extension module under ucharm: the C++ runtime seen from Python.

Everything here is low level (collection references as bytes, messages as buffers); the
charm4py-style API is in the package's Python modules (ucharm/charm.py and the rest). The
scheduler runs with the GIL held and lets it go only while the PE sleeps waiting for the
network (the idle hooks). Two parts are included from src/: core_messages.pxi (building
and parsing messages) and core_hooks.pxi (the hooks the core calls, the thread check).
"""
from libc.stdint cimport uint32_t, uint64_t, int32_t, int64_t, uintptr_t
from libc.string cimport memcpy, memset
from libcpp.string cimport string
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from cpython.ref cimport PyObject, Py_INCREF, Py_DECREF
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.pystate cimport PyThreadState
from cpython.pythread cimport PyThread_get_thread_ident

import atexit
import gc
import io
import pickle
import sys
import threading
import traceback

cdef object _dumps = pickle.dumps
cdef object _loads = pickle.loads
cdef int _PROTO = 5

cdef extern from "Python.h":
    PyThreadState* PyEval_SaveThread() nogil
    void PyEval_RestoreThread(PyThreadState*) nogil

cdef extern from "<ucharm/charm.h>":
    void* CmiAlloc(size_t bytes)
    void CmiFree(void* msg)
    int CkMyPe()
    int CkNumPes()
    double CkWallTimer()
    void CkExit(int code)
    void CkAbort(const char* fmt, ...)
    cdef cppclass CmiEmbedHooks:
        void (*idle_begin)() noexcept
        void (*idle_end)() noexcept
        void (*on_exit)(int) noexcept
    void CkSetEmbedHooks(const CmiEmbedHooks& hooks)

cdef extern from "<ucharm/charm.h>" namespace "ck":
    cdef cppclass Index:
        int32_t x[6]
        int32_t dims
    cdef cppclass CollectionRef:
        uint64_t id
    cdef cppclass CkChannel:
        pass
    void* raw_alloc(size_t length)
    char* raw_payload(void* msg)
    size_t raw_length(void* msg)
    uint32_t future_create(void (*handler)(uint32_t, void*) noexcept)
    void set_embedder_map(int (*hook)(uint32_t, const Index&, const Index&, int) noexcept)
    void future_release(uint32_t id)
    void future_send_raw(int pe, uint32_t id, void* msg)
    void set_embedder_readonly(string value)
    const string& embedder_readonly()

cdef extern from "glue.h" namespace "ucharm::py":
    cdef cppclass PyChare:
        void* obj
    cdef cppclass Hooks:
        void* (*construct)(void*, const char*, size_t) noexcept
        void (*invoke)(void*, void*) noexcept
        void* (*start)(void*, int, char**) noexcept
        void (*readonly_arrived)(const string&) noexcept
        void (*future_value)(uint32_t, void*) noexcept
        void (*combine)(const string&, const string&, string&) noexcept
        void (*reduction_done)(const string&) noexcept
        void (*release)(void*) noexcept
        void (*about_to_migrate)(void*) noexcept
        size_t (*pack_size)(void*, void**, int) noexcept
        void (*pack_write)(void*, void (*)(void*, const void*, size_t) noexcept, void*) noexcept
        void* (*unpack)(const char*, size_t) noexcept
        void* (*arrived)(void*, void*) noexcept
        void (*resume_from_sync)(void*) noexcept
        void (*drop)(void*) noexcept
        void (*restarted)() noexcept
    void set_hooks(const Hooks& h)
    int c_start "ucharm::py::start"(int argc, char** argv) except +
    void c_send "ucharm::py::send"(const CollectionRef& c, const Index& idx, void* msg)
    void c_broadcast "ucharm::py::broadcast"(const CollectionRef& c, void* msg)
    CollectionRef c_create_chare "ucharm::py::create_chare"(int pe, string blob)
    CollectionRef c_create_group "ucharm::py::create_group"(string blob)
    CollectionRef c_create_array "ucharm::py::create_array"(const Index& shape, string blob, uint32_t map_id)
    CollectionRef c_create_empty_array "ucharm::py::create_empty_array"(int dims, uint32_t map_id)
    void c_insert "ucharm::py::insert"(const CollectionRef& c, const Index& idx, string blob)
    void c_contribute "ucharm::py::contribute"(PyChare* c, string data, int root_pe, int64_t root_future)
    string c_reduction_value "ucharm::py::reduction_value"(void* msg)
    CkChannel* c_channel_open "ucharm::py::channel_open"(PyChare* self, const CollectionRef& peer,
                                                          const Index& peer_idx, uint32_t sub_id)
    void c_channel_send "ucharm::py::channel_send"(CkChannel* ch, const void* ptr, size_t size,
                                                   uint32_t future, void* stream)
    void c_channel_recv "ucharm::py::channel_recv"(CkChannel* ch, void* ptr, size_t size,
                                                   uint32_t future, void* stream)
    void c_channel_close "ucharm::py::channel_close"(CkChannel* ch)
    void c_start_qd "ucharm::py::start_qd"(int pe, uint32_t future)
    void c_start_checkpoint "ucharm::py::start_checkpoint"(const string& dir, int pe, uint32_t future)
    bint c_restart_info "ucharm::py::restart_info"(int& old_num_pes, string& dir)
    int c_value_kind "ucharm::py::value_kind"(void* msg)
    const CollectionRef& c_chare_ref "ucharm::py::chare_ref"(PyChare* c)
    const Index& c_chare_index "ucharm::py::chare_index"(PyChare* c)
    void c_migrate "ucharm::py::migrate"(PyChare* c, int pe)
    void c_set_migratable "ucharm::py::set_migratable"(PyChare* c, bint m)
    bint c_is_migratable "ucharm::py::is_migratable"(PyChare* c)
    int c_home_pe "ucharm::py::home_pe"(PyChare* c)
    void c_set_uses_at_sync "ucharm::py::set_uses_at_sync"(PyChare* c, bint on)
    bint c_uses_at_sync "ucharm::py::uses_at_sync"(PyChare* c)
    void c_at_sync "ucharm::py::at_sync"(PyChare* c)


# ---- collection references and indices ---------------------------------------------------
REF_SIZE = sizeof(CollectionRef)

cdef inline CollectionRef to_ref(bytes b) except *:
    cdef CollectionRef r
    if PyBytes_GET_SIZE(b) != sizeof(CollectionRef):
        raise ValueError("not a collection reference")
    memcpy(&r, PyBytes_AS_STRING(b), sizeof(CollectionRef))
    return r

cdef inline bytes from_ref(const CollectionRef& r):
    return PyBytes_FromStringAndSize(<const char*>&r, sizeof(CollectionRef))

cdef inline Index to_index(object idx) except *:
    """An int (1-D) or a tuple of 1-6 ints; None: no index (groups and chares)."""
    cdef Index i  # zeroed by its constructor
    if idx is None:
        return i
    if isinstance(idx, int):
        i.x[0] = idx
        i.dims = 1
        return i
    n = len(idx)
    if n < 1 or n > 6:
        raise IndexError(f"chare array indices have 1 to 6 dimensions, not {n}: {idx!r}")
    for d in range(n):
        i.x[d] = idx[d]
    i.dims = n
    return i

cdef inline Index group_index(int pe):
    cdef Index i  # zeroed by its constructor
    i.x[0] = pe
    return i


include "core_messages.pxi"


include "core_hooks.pxi"


include "core_migrate.pxi"


include "core_fastwire.pxi"


# ---- the runtime ---------------------------------------------------------------------------
def start(list argv):
    """Starts the runtime on this process's PE and runs the scheduler; never returns."""
    cdef CmiEmbedHooks eh
    eh.idle_begin = h_idle_begin
    eh.idle_end = h_idle_end
    eh.on_exit = h_exit
    CkSetEmbedHooks(eh)
    encoded = [a.encode() for a in argv]
    cdef int argc = len(encoded)
    cdef char** cargv = <char**>CmiAlloc(sizeof(char*) * (argc + 1))  # lives as long as the job
    cdef Py_ssize_t k
    keep = []
    for k in range(argc):
        b = encoded[k]
        keep.append(b)
        cargv[k] = <char*>CmiAlloc(len(b) + 1)
        memcpy(cargv[k], PyBytes_AS_STRING(b), len(b))
        cargv[k][len(b)] = 0
    cargv[argc] = NULL
    global _owner
    _owner = PyThread_get_thread_ident()
    c_start(argc, cargv)

def my_pe():
    return CkMyPe()

def num_pes():
    return CkNumPes()

def wall_time():
    return CkWallTimer()


cdef extern from "<ucharm/converse.h>":
    int CmiNumPhysicalNodes()
    int CmiPhysicalNodeID(int pe)
    int CmiPhysicalRank(int pe)
    void CmiGetPesOnPhysicalNode(int node, const int** pes, int* num)

def host_map():
    """The hosts' PEs, by host (converse.h, physical-node topology): a list of lists."""
    cdef const int* pes = NULL
    cdef int num = 0, node, k
    out = []
    for node in range(CmiNumPhysicalNodes()):
        CmiGetPesOnPhysicalNode(node, &pes, &num)
        out.append([pes[k] for k in range(num)])
    return out

def exit(int code):
    check_thread("charm.exit")
    CkExit(code)

def abort(str message):
    global _aborting
    check_thread("charm.abort")
    _aborting = True
    CkAbort("%s", message.encode())


# ---- sending ---------------------------------------------------------------------------------
def send(bytes ref, object idx, bytes head, list bufs):
    """To one element: idx is an array index, or ('pe', n) for a group element, or None for
    a singleton chare."""
    check_thread("sending a message")
    if _ro_pending:
        flush_readonlies()
    cdef CollectionRef r = to_ref(ref)
    cdef Index i
    if type(idx) is tuple and len(idx) == 2 and idx[0] == "pe":
        i = group_index(idx[1])
    else:
        i = to_index(idx)
    c_send(r, i, build(head, bufs))

cdef bint _ro_pending = False  # readonlies set on PE 0 and not sent yet

def set_readonlies_pending():
    global _ro_pending
    _ro_pending = True

cdef inline int flush_readonlies() except -1:
    # Before anything leaves PE 0 after readonlies changed: the values go first.
    global _ro_pending
    _ro_pending = False
    _py.flush_readonlies()
    return 0


cdef inline Index wire_index(object idx) except *:
    if type(idx) is tuple and len(idx) == 2 and idx[0] == "pe":
        return group_index(idx[1])
    return to_index(idx)


cdef extern from "Python.h":
    ctypedef object (*vectorcallfunc)(object callable, PyObject* const* args, size_t nargsf, PyObject* kwnames)
    Py_ssize_t PyVectorcall_NARGS(size_t nargsf)
    ctypedef struct PyTypeObject:
        Py_ssize_t tp_vectorcall_offset
        unsigned long tp_flags
    unsigned long Py_TPFLAGS_HAVE_VECTORCALL


cdef tuple tuple_from(PyObject* const* items, Py_ssize_t n):
    cdef Py_ssize_t k
    t = PyTuple_New(n)
    for k in range(n):
        Py_INCREF(<object>items[k])
        PyTuple_SET_ITEM(t, k, <object>items[k])
    return t


cdef class BoundEntry:
    """proxy.method: call it (a message to the element, or a broadcast), or pass it as a
    reduction target or callback. A plain call to one element (no keyword) is built here,
    in C, through vectorcall: no argument tuple or dict, and arguments the fast format
    takes (core_fastwire.pxi) written straight into the message."""
    cdef vectorcallfunc vc  # the type's vectorcall slot reads it (set up below the class)
    cdef readonly object proxy
    cdef readonly str name
    cdef bytes name_b        # the name's UTF-8 and its hash, for the fast format
    cdef uint32_t name_hash
    cdef CollectionRef ref
    cdef Index idx
    cdef bint element

    def __cinit__(self, *args, **kwargs):
        self.vc = be_vectorcall

    def __init__(self, proxy, str name):
        self.proxy = proxy
        self.name = name
        self.name_b = name.encode()
        self.name_hash = fw_hash(PyBytes_AS_STRING(self.name_b), PyBytes_GET_SIZE(self.name_b))
        self.ref = to_ref(proxy._ref)
        self.element = hasattr(proxy, "_idx")
        if self.element:
            self.idx = wire_index(proxy._idx)

    def __call__(self, *args, ret=False, awaitable=False, **kwargs):
        # Calls with keywords, and calls through PyObject_Call (f(*a, **k))
        return self.call(args, kwargs, ret, awaitable)

    cdef object call(self, tuple args, dict kwargs, object ret, object awaitable):
        check_thread_named(self.name)
        if ret or awaitable or not self.element:
            # want: 2 the return value (ret=True), 1 completion only (awaitable=True: None)
            return self.proxy._ck_call(self.name, args, kwargs, 2 if ret else (1 if awaitable else 0))
        if _ro_pending:
            flush_readonlies()
        cdef list bufs = []
        t = (0, self.name, args, kwargs or None, None, False)
        try:
            head = _dumps(t, _PROTO, buffer_callback=bufs.append)
        except Exception as e:
            raise TypeError(f"{self.proxy._cls.__name__}.{self.name}: an argument cannot be pickled: {e}") from e
        if bufs:
            try:
                bufs = [b.raw() for b in bufs]
            except BufferError:  # a non-contiguous buffer: charm.py pickles it in band
                return self.proxy._ck_call(self.name, args, kwargs, False)
        c_send(self.ref, self.idx, build(head, bufs))

    def __reduce__(self):
        return (BoundEntry, (self.proxy, self.name))


cdef object be_vectorcall(object callable, PyObject* const* args, size_t nargsf, PyObject* kwnames):
    cdef BoundEntry self = <BoundEntry>callable
    cdef Py_ssize_t n = PyVectorcall_NARGS(nargsf)
    cdef Py_ssize_t nk, k
    cdef void* msg
    if kwnames != NULL:  # keywords (ret=, awaitable= or the method's): the general path
        nk = PyTuple_GET_SIZE(<object>kwnames)
        kw = {}
        for k in range(nk):
            kw[<object>PyTuple_GET_ITEM(<object>kwnames, k)] = <object>args[n + k]
        ret = kw.pop("ret", False)
        awaitable = kw.pop("awaitable", False)
        return self.call(tuple_from(args, n), kw, ret, awaitable)
    if not self.element:
        return self.call(tuple_from(args, n), {}, False, False)
    check_thread_named(self.name)
    if _ro_pending:
        flush_readonlies()
    msg = fw_build_call(self.name_b, self.name_hash, args, n, None)
    if msg == NULL:  # an argument the tags do not take: the argument tuple pickled
        t = tuple_from(args, n)
        try:
            blob = dumps_in_band(t)
        except Exception as e:
            raise TypeError(f"{self.proxy._cls.__name__}.{self.name}: an argument cannot be pickled: {e}") from e
        if blob is None:  # out-of-band buffers (NumPy): the general format
            return self.call(t, {}, False, False)
        msg = fw_build_call(self.name_b, self.name_hash, args, n, blob)
    c_send(self.ref, self.idx, msg)
    return None


# BoundEntry's instances are called through vectorcall (PEP 590): the slot's offset is that
# of its `vc` field; tp_call (__call__) stays for PyObject_Call.
cdef _setup_vectorcall():
    cdef BoundEntry probe = BoundEntry.__new__(BoundEntry)
    cdef PyTypeObject* tp = <PyTypeObject*>BoundEntry
    tp.tp_vectorcall_offset = <Py_ssize_t>(<char*>&probe.vc - <char*><PyObject*>probe)
    tp.tp_flags |= Py_TPFLAGS_HAVE_VECTORCALL

_setup_vectorcall()


def broadcast(bytes ref, bytes head, list bufs):
    check_thread("a broadcast")
    if _ro_pending:
        flush_readonlies()
    c_broadcast(to_ref(ref), build(head, bufs))

def send_future(int pe, uint32_t fid, bytes head, list bufs):
    check_thread("Future.send")
    future_send_raw(pe, fid, build(head, bufs))

def create_chare(int pe, bytes blob):
    check_thread("creating a chare")
    return from_ref(c_create_chare(pe, blob))

def create_group(bytes blob):
    check_thread("creating a group")
    return from_ref(c_create_group(blob))

def create_array(tuple shape, bytes blob, uint32_t map_id=0):
    check_thread("creating an array")
    return from_ref(c_create_array(to_index(shape), blob, map_id))

def create_empty_array(int dims, uint32_t map_id=0):
    check_thread("creating an array")
    return from_ref(c_create_empty_array(dims, map_id))

def insert(bytes ref, tuple idx, bytes blob):
    check_thread("ckInsert")
    c_insert(to_ref(ref), to_index(idx), blob)

def ref_id(bytes ref):
    return to_ref(ref).id

def chare_ref(uintptr_t chare):
    return from_ref(c_chare_ref(<PyChare*>chare))

def chare_index(uintptr_t chare):
    """The element's index: a tuple for array elements, the PE for group elements, None
    for singleton chares."""
    cdef const Index* i = &c_chare_index(<PyChare*>chare)
    if i.dims == 0:
        return None
    return tuple(i.x[d] for d in range(i.dims))

def set_readonly(bytes value):
    check_thread("setting readonlies")
    set_embedder_readonly(value)

def get_readonly():
    cdef const string* s = &embedder_readonly()
    return PyBytes_FromStringAndSize(s.data(), s.size())


# ---- futures, reductions, quiescence -----------------------------------------------------------
cdef void h_future_trampoline(uint32_t fid, void* msg) noexcept:
    h_future_value(fid, msg)

def new_future():
    check_thread("creating a Future")
    return future_create(h_future_trampoline)

def release_future(uint32_t fid):
    check_thread("releasing a Future")
    future_release(fid)

def contribute(uintptr_t chare, bytes data, int root_pe, int64_t root_future):
    check_thread("contribute")
    c_contribute(<PyChare*>chare, data, root_pe, root_future)

def value_kind(Message m):
    """0: a value sent by send_future, 1: a reduction result, 2: an empty value from the
    core (quiescence detection)."""
    return c_value_kind(m.msg)

def reduction_value(Message m):
    """The pickled result inside a reduction result message sent to a future."""
    cdef string s = c_reduction_value(m.msg)
    return PyBytes_FromStringAndSize(s.data(), s.size())

def start_qd(int pe, uint32_t fid):
    check_thread("charm.startQD")
    c_start_qd(pe, fid)


# ---- checkpoints ---------------------------------------------------------------------------------
def start_checkpoint(str directory, int pe, uint32_t fid):
    """ck::start_checkpoint: future `fid` of PE `pe` gets an empty value once the checkpoint
    is on disk; a run restarted from it calls the restarted hook on PE 0."""
    check_thread("charm.checkpoint")
    c_start_checkpoint(directory.encode(), pe, fid)

def restart_info():
    """None, or (old number of PEs, checkpoint directory) when this run was started with
    +restart."""
    cdef int old = 0
    cdef string d
    if not c_restart_info(old, d):
        return None
    return old, d.decode()


# ---- timers (charm.scheduleCallableAfter, charm.sleep) -------------------------------------
# One scheduler poller, registered only while a timer is pending: it compares the clock with
# the earliest deadline (in C, no Python) and calls timers.py's run_due only once it has
# passed. While it is registered an idle PE sleeps in steps of at most 1 ms (converse.h,
# pollers), which bounds how late a timer fires on an idle PE.
from libcpp cimport bool as cbool

cdef extern from "<ucharm/converse.h>":
    ctypedef cbool (*CmiPollerFn)(void* ctx) noexcept
    int CmiAddPoller(CmiPollerFn fn, void* ctx)
    void CmiRemovePoller(int id)
    double CmiWallTimer()

cdef double _timer_deadline = 0.0
cdef int _timer_poller = 0
cdef object _timer_run = None  # timers.run_due

cdef cbool h_timer_poll(void* ctx) noexcept:
    if CmiWallTimer() < _timer_deadline:
        return False
    try:
        _timer_run()
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("in a callable scheduled with charm.scheduleCallableAfter")
    return True

def set_timer(double deadline, run_due):
    """The earliest pending deadline (seconds of wall_time()), or a negative value: none."""
    global _timer_deadline, _timer_poller, _timer_run
    check_thread("charm.scheduleCallableAfter")
    _timer_run = run_due
    if deadline < 0:
        if _timer_poller:
            CmiRemovePoller(_timer_poller)
            _timer_poller = 0
        return
    _timer_deadline = deadline
    if not _timer_poller:
        _timer_poller = CmiAddPoller(h_timer_poll, NULL)


include "core_channels.pxi"
include "core_fastchan.pxi"
include "core_streams.pxi"
include "core_windows.pxi"
include "core_ccs.pxi"
