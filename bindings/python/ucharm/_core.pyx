# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
# distutils: language = c++
"""The extension module under ucharm: the C++ runtime seen from Python.

Everything here is low level (collection references as bytes, messages as buffers); the
charm4py-style API is in ucharm/charm.py. The scheduler runs with the GIL held and lets
it go only while the PE sleeps waiting for the network (the idle hooks).
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
        int32_t x[3]
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
    int c_value_kind "ucharm::py::value_kind"(void* msg)
    const CollectionRef& c_chare_ref "ucharm::py::chare_ref"(PyChare* c)
    const Index& c_chare_index "ucharm::py::chare_index"(PyChare* c)


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
    """An int (1-D) or a tuple of 1-3 ints; None: no index (groups and chares)."""
    cdef Index i  # zeroed by its constructor
    if idx is None:
        return i
    if isinstance(idx, int):
        i.x[0] = idx
        i.dims = 1
        return i
    n = len(idx)
    if n < 1 or n > 3:
        raise IndexError(f"chare array indices have 1, 2 or 3 dimensions, not {n}: {idx!r}")
    for d in range(n):
        i.x[d] = idx[d]
    i.dims = n
    return i

cdef inline Index group_index(int pe):
    cdef Index i  # zeroed by its constructor
    i.x[0] = pe
    return i


# ---- messages ------------------------------------------------------------------------------
cdef class Message:
    """A received message; its payload is readable through the buffer protocol (NumPy
    arrays unpickled from it alias it: it lives as long as they do)."""
    cdef void* msg
    cdef Py_ssize_t shape[1]
    cdef Py_ssize_t strides[1]

    def __dealloc__(self):
        if self.msg != NULL:
            CmiFree(self.msg)
            self.msg = NULL

    def __getbuffer__(self, Py_buffer* buf, int flags):
        self.shape[0] = <Py_ssize_t>raw_length(self.msg)
        self.strides[0] = 1
        buf.buf = raw_payload(self.msg)
        buf.obj = self
        buf.len = self.shape[0]
        buf.readonly = 0
        buf.itemsize = 1
        buf.format = NULL
        if flags & 0x0004:  # PyBUF_FORMAT
            buf.format = b"B"
        buf.ndim = 1
        buf.shape = self.shape
        buf.strides = self.strides
        buf.suboffsets = NULL
        buf.internal = NULL

    def __releasebuffer__(self, Py_buffer* buf):
        pass

cdef inline Message wrap(void* msg):
    cdef Message m = Message.__new__(Message)
    m.msg = msg
    return m


cdef void* build(bytes head, list bufs) except NULL:
    """A raw message: [u64 head length][u64 count][u64 lengths...][head][pad][buffers, each
    16-aligned]. The buffers are copied once, straight from their owners. A buffer that
    cannot be read contiguously raises before the message exists."""
    cdef Py_ssize_t nb = len(bufs)
    cdef Py_ssize_t hl = PyBytes_GET_SIZE(head)
    cdef size_t off = 16 + 8 * nb + hl
    cdef size_t total
    cdef Py_buffer view
    cdef list lens
    cdef Py_ssize_t k
    cdef uint64_t* words
    cdef char* p
    cdef void* msg
    if nb == 0:  # the common small call: no out-of-band buffers
        msg = raw_alloc(16 + hl)
        words = <uint64_t*>raw_payload(msg)
        words[0] = hl
        words[1] = 0
        memcpy(raw_payload(msg) + 16, PyBytes_AS_STRING(head), hl)
        return msg
    lens = []
    off = (off + 15) & ~<size_t>15
    total = off
    for k in range(nb):
        PyObject_GetBuffer(bufs[k], &view, PyBUF_ANY_CONTIGUOUS)
        lens.append(view.len)
        PyBuffer_Release(&view)
        total += (<size_t>lens[k] + 15) & ~<size_t>15
    msg = raw_alloc(total)
    try:
        p = raw_payload(msg)
        words = <uint64_t*>p
        words[0] = hl
        words[1] = nb
        for k in range(nb):
            words[2 + k] = lens[k]
        memcpy(p + 16 + 8 * nb, PyBytes_AS_STRING(head), hl)
        for k in range(nb):
            PyObject_GetBuffer(bufs[k], &view, PyBUF_ANY_CONTIGUOUS)
            try:
                if view.len != lens[k]:  # an exporter whose size changed in between
                    raise BufferError(f"buffer {k} changed size while the message was built")
                memcpy(p + off, view.buf, view.len)
            finally:
                PyBuffer_Release(&view)
            off += (<size_t>lens[k] + 15) & ~<size_t>15
    except BaseException:
        CmiFree(msg)
        raise
    return msg


cpdef tuple parse(Message m, bint copy):
    """(head, buffers) of a message built by build(); the buffers alias the message unless
    `copy` (a broadcast's message is shared by the PE's elements)."""
    cdef char* p = raw_payload(m.msg)
    cdef uint64_t* words = <uint64_t*>p
    cdef uint64_t hl = words[0]
    cdef uint64_t nb = words[1]
    cdef size_t off = 16 + 8 * nb
    mv = memoryview(m)
    head = mv[off:off + hl]
    off = (off + hl + 15) & ~<size_t>15
    bufs = []
    cdef uint64_t k
    cdef uint64_t n
    for k in range(nb):
        n = words[2 + k]
        b = mv[off:off + n]
        bufs.append(bytearray(b) if copy else b)
        off += (n + 15) & ~<size_t>15
    return head, bufs


# ---- hooks: the core calling Python ---------------------------------------------------------
cdef object _py = None  # the Python side (charm.py's hook functions), set by set_python
cdef dict _entry_kind = None  # charm.py's: function -> 0 plain entry method, 1 other
cdef PyThreadState* _idle_state = NULL
cdef unsigned long _owner = 0  # the thread that called start(): the PE's thread
cdef bint _aborting = False     # an abort: no atexit handlers, output flushed only


cdef int wrong_thread(str what) except -1:
    raise RuntimeError(
        f"ucharm: {what} was called from thread {threading.current_thread().name!r}, but the runtime may "
        "only be used from the thread that called charm.start() (the PE's thread): send work to it "
        "(a queue it polls from a coroutine, for instance) instead")

def on_pe_thread():
    """Whether this is the PE's thread (or the runtime has not started)."""
    return _owner == 0 or PyThread_get_thread_ident() == _owner

cdef inline int check_thread(str what) except -1:
    # Other threads run while the PE sleeps with the GIL released; the runtime (UCX
    # worker, per-PE state) is single-threaded, so they must not call into it.
    if _owner != 0 and PyThread_get_thread_ident() != _owner:
        wrong_thread(what)
    return 0


cdef void _fatal(str where) noexcept:
    """A Python exception escaped into the runtime: print it and end the job."""
    global _aborting
    _aborting = True
    try:
        msg = f"ucharm: PE {CkMyPe()}: Python exception {where}:\n{traceback.format_exc()}"
        sys.stderr.write(msg)
        sys.stderr.flush()
        sys.stdout.flush()
    except BaseException:
        pass
    CkAbort("%s", b"a Python exception ended the job (traceback above)")


cdef void* h_construct(void* chare, const char* blob, size_t length) noexcept:
    try:
        obj = _py.construct(<uintptr_t>chare, PyBytes_FromStringAndSize(blob, length))
        Py_INCREF(obj)
        return <void*>obj
    except BaseException as e:
        if _py.handle_exit(e):
            return NULL
        _fatal("in a chare constructor")
    return NULL

cdef void h_invoke(void* obj, void* msg) noexcept:
    # The common case here (a plain entry method, no future, not a broadcast); anything
    # else in charm.py's invoke_slow.
    cdef Message m = wrap(msg)
    cdef object o = <object>obj
    cdef tuple t
    cdef uint64_t* words = <uint64_t*>raw_payload(msg)
    fn = None
    bufs = None
    try:
        if words[1] == 0:  # no out-of-band buffers: unpickle a copy of the small head
            t = _loads(PyBytes_FromStringAndSize(raw_payload(msg) + 16, words[0]))
        else:
            head, bufs = parse(m, False)
            t = _loads(head, buffers=bufs)
        if t[0] == 1:  # channel data
            _py.channel_message(o, t, m)
            return
        if t[0] == 0 and t[4] is None and not t[5]:
            fn = getattr(type(o), t[1], None)
            if _entry_kind.get(fn) == 0:
                kw = t[3]
                if kw:
                    fn(o, *t[2], **kw)
                else:
                    fn(o, *t[2])
                if o._ck_when or o._ck_waiting or o._ck_when_by_value:
                    _py.after_entry(o)
                return
        _py.invoke_slow(o, m, t, bufs)
    except BaseException as e:
        if not _py.handle_exit(e):
            name = t[1] if fn is not None else None
            _fatal(f"in entry method {type(o).__name__}.{name}" if name else "in an entry method")

cdef void* h_start(void* chare, int argc, char** argv) noexcept:
    try:
        obj = _py.start(<uintptr_t>chare, [argv[i].decode() for i in range(argc)])
        if obj is None:
            return NULL
        Py_INCREF(obj)
        return <void*>obj
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("in the main function")
    return NULL

cdef void h_readonly_arrived(const string& value) noexcept:
    try:
        _py.readonly_arrived(PyBytes_FromStringAndSize(value.data(), value.size()))
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while setting the readonly values")

cdef void h_future_value(uint32_t fid, void* msg) noexcept:
    cdef Message m = wrap(msg)
    try:
        _py.future_value(fid, m)
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while delivering a future's value")

cdef void h_combine(const string& a, const string& b, string& out) noexcept:
    try:
        r = _py.combine(PyBytes_FromStringAndSize(a.data(), a.size()),
                        PyBytes_FromStringAndSize(b.data(), b.size()))
        out.assign(PyBytes_AS_STRING(r), PyBytes_GET_SIZE(r))
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("in a reducer")

cdef void h_reduction_done(const string& result) noexcept:
    try:
        _py.reduction_done(PyBytes_FromStringAndSize(result.data(), result.size()))
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while delivering a reduction's result")

cdef void h_release(void* obj) noexcept:
    Py_DECREF(<object>obj)

cdef int h_map(uint32_t map_id, const Index& idx, const Index& shape, int npes) noexcept:
    cdef int d
    try:
        key = []
        for d in range(idx.dims):
            key.append(idx.x[d])
        return _py.map_pe(map_id, tuple(key), npes)
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("in an array map's procNum")
    return 0

cdef void h_idle_begin() noexcept:
    global _idle_state
    _idle_state = PyEval_SaveThread()

cdef void h_idle_end() noexcept:
    global _idle_state
    PyEval_RestoreThread(_idle_state)
    _idle_state = NULL

cdef void flush_open_files() noexcept:
    """Flushes every open Python file of this process (written, never flushed or closed):
    text layers first, then the buffers under them."""
    try:
        files = [o for o in gc.get_objects() if isinstance(o, io.IOBase)]
    except BaseException:
        return
    for o in sorted(files, key=lambda f: 0 if isinstance(f, io.TextIOBase) else 1):
        try:
            if not o.closed and o.writable():
                o.flush()
        except BaseException:
            pass


cdef void h_exit(int code) noexcept with gil:
    # The job ends (CkExit, sys.exit, the peers' exit message; an abort too): as far as a
    # process that ends with _Exit can, what the interpreter's own shutdown does first.
    try:
        if not _aborting:
            atexit._run_exitfuncs()
    except BaseException:
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    if not _aborting:
        flush_open_files()


def set_python(py):
    """Installs the Python side: an object with construct, invoke, start, future_value,
    combine, reduction_done and handle_exit."""
    global _py, _entry_kind
    _py = py
    _entry_kind = py.entry_kind
    cdef Hooks h
    h.construct = h_construct
    h.invoke = h_invoke
    h.start = h_start
    h.readonly_arrived = h_readonly_arrived
    h.future_value = h_future_value
    h.combine = h_combine
    h.reduction_done = h_reduction_done
    h.release = h_release
    set_hooks(h)
    set_embedder_map(h_map)


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


cdef class BoundEntry:
    """proxy.method: call it (a message to the element, or a broadcast), or pass it as a
    reduction target or callback. Plain calls to one element are built here, in C."""
    cdef readonly object proxy
    cdef readonly str name
    cdef CollectionRef ref
    cdef Index idx
    cdef bint element

    def __init__(self, proxy, str name):
        self.proxy = proxy
        self.name = name
        self.ref = to_ref(proxy._ref)
        self.element = hasattr(proxy, "_idx")
        if self.element:
            self.idx = wire_index(proxy._idx)

    def __call__(self, *args, ret=False, awaitable=False, **kwargs):
        check_thread(f"{self.name}()")
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


# ---- channels ------------------------------------------------------------------------------
def channel_open(uintptr_t chare, bytes peer_ref, object peer_idx, uint32_t sub_id):
    check_thread("Channel()")
    cdef Index i
    if type(peer_idx) is tuple and len(peer_idx) == 2 and peer_idx[0] == "pe":
        i = group_index(peer_idx[1])
    else:
        i = to_index(peer_idx)
    return <uintptr_t>c_channel_open(<PyChare*>chare, to_ref(peer_ref), i, sub_id)

def channel_send(uintptr_t ch, uintptr_t ptr, size_t size, uint32_t fid, uintptr_t stream):
    check_thread("Channel.send")
    c_channel_send(<CkChannel*>ch, <const void*>ptr, size, fid, <void*>stream)

def channel_recv(uintptr_t ch, uintptr_t ptr, size_t size, uint32_t fid, uintptr_t stream):
    check_thread("Channel.recv")
    c_channel_recv(<CkChannel*>ch, <void*>ptr, size, fid, <void*>stream)

def channel_close(uintptr_t ch):
    check_thread("Channel.close")
    c_channel_close(<CkChannel*>ch)

def buffer_address(obj, bint writable):
    """(address, length) of a contiguous host buffer (kept alive by the caller)."""
    cdef Py_buffer view
    PyObject_GetBuffer(obj, &view, PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
    try:
        return <uintptr_t>view.buf, view.len
    finally:
        PyBuffer_Release(&view)
