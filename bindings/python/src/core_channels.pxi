# Part of ucharm/_core.pyx (included there): the core's channel ends seen from Python (Link)
# and transfers in flight (Request), completed in C.
#
# Completion. Every transfer names a core future whose handler is h_request_done, a C
# function: it finds the transfer's Request in a C++ table by the future's id, marks it
# done, releases its buffer, and calls into Python only when a coroutine waits for it.
# Future ids are created once and reused (a free list), so a transfer costs no
# future_create/future_release and no Python object besides its Request, which comes from
# Cython's free list.
#
# Buffers. Host memory: the buffer protocol (NumPy, bytearray, memoryview, pinned host
# arrays), held (Py_buffer) until the transfer is done. Device memory: CuPy arrays by their
# attributes, with a small cache per array object; anything else with
# __cuda_array_interface__ (Numba, PyTorch); DLPack (__dlpack__) for the rest, host or
# device. Each must be C-contiguous.
cimport cython
from libc.stdint cimport uint8_t, uint16_t
from cython.operator cimport dereference as deref
from libcpp.unordered_map cimport unordered_map
from libcpp.vector cimport vector
from cpython.buffer cimport PyObject_CheckBuffer
from cpython.pycapsule cimport PyCapsule_IsValid, PyCapsule_GetPointer
from cpython.weakref cimport PyWeakref_GetObject

cdef extern from "<ucharm/charm.h>" namespace "ck":
    cdef cppclass CkCallback:
        @staticmethod
        CkCallback future(int pe, uint32_t id)
    # A completion's value: a transfer's byte count, an atomic's old word, a count.
    bint value_is_u64 "ck::future_value_holds<std::uint64_t>"(void* msg)
    uint64_t value_u64 "ck::future_value<std::uint64_t>"(void* msg)

from greenlet import getcurrent as _getcurrent
import weakref as _weakref

cdef extern from *:
    """
    // DLPack's (v0.8) C structures, as far as a consumer reads them.
    typedef struct { int32_t device_type; int32_t device_id; } UcDLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } UcDLDataType;
    typedef struct {
      void* data; UcDLDevice device; int32_t ndim; UcDLDataType dtype;
      int64_t* shape; int64_t* strides; uint64_t byte_offset;
    } UcDLTensor;
    typedef struct UcDLManagedTensor {
      UcDLTensor dl_tensor; void* manager_ctx; void (*deleter)(struct UcDLManagedTensor*);
    } UcDLManagedTensor;
    """
    ctypedef struct UcDLDevice:
        int32_t device_type
        int32_t device_id
    ctypedef struct UcDLDataType:
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct UcDLTensor:
        void* data
        UcDLDevice device
        int32_t ndim
        UcDLDataType dtype
        int64_t* shape
        int64_t* strides
        uint64_t byte_offset
    ctypedef struct UcDLManagedTensor:
        UcDLTensor dl_tensor

# DLPack device types a transfer can use: host, CUDA, pinned host, CUDA managed.
cdef enum:
    DL_CPU = 1
    DL_CUDA = 2
    DL_CUDA_HOST = 3
    DL_CUDA_MANAGED = 13

cdef unordered_map[uint32_t, PyObject*] _inflight  # future id -> its Request (a reference)
cdef vector[uint32_t] _free_fids                     # core futures (h_request_done) not in use
cdef object _after_entry = None  # _invoke.after_entry (set by coroutines.py)

def set_coroutines(after_entry):
    global _after_entry
    _after_entry = after_entry


# greenlet's C API (its capsule greenlet._C_API; the table's slots 4, 6 and 7 are
# GetCurrent, Switch and SetParent in every greenlet since 0.4): a channel wait's switches
# without a Python attribute lookup or bound method per switch.
cdef extern from *:
    """
    static void** uc_greenlet_api = NULL;
    static int uc_greenlet_import(void) {
      uc_greenlet_api = (void**)PyCapsule_Import("greenlet._C_API", 0);
      return uc_greenlet_api ? 0 : -1;
    }
    static PyObject* uc_gr_current(void) { return ((PyObject* (*)(void))uc_greenlet_api[4])(); }
    static PyObject* uc_gr_switch(PyObject* g) {
      return ((PyObject* (*)(PyObject*, PyObject*, PyObject*))uc_greenlet_api[6])(g, NULL, NULL);
    }
    static int uc_gr_set_parent(PyObject* g, PyObject* parent) {
      return ((int (*)(PyObject*, PyObject*))uc_greenlet_api[7])(g, parent);
    }
    // slot 11, greenlet 3 (pyproject's floor): a new reference, or NULL at the top
    static PyObject* uc_gr_parent(PyObject* g) { return ((PyObject* (*)(PyObject*))uc_greenlet_api[11])(g); }
    """
    int uc_greenlet_import() except -1
    object uc_gr_current()
    object uc_gr_switch(object g)
    int uc_gr_set_parent(object g, object parent) except -1
    PyObject* uc_gr_parent(object g)

uc_greenlet_import()


cdef inline bint needs_after_entry(object obj) except -1:
    # Whether a chare's state change may release something: @when calls held, coroutines
    # in Chare.wait. (Read by getattr: reading its __dict__ would make CPython keep the
    # object's attributes in a dict, slowing every other attribute access of the chare.)
    return obj._ck_when or obj._ck_waiting or obj._ck_when_by_value


# coroutines.suspend and resume, without their Python frames (a channel wait's hot path).
cdef int suspend_current(str what) except -1:
    g = uc_gr_current()
    if not getattr(g, "_ck_coro", False):
        raise RuntimeError(f"{what} would block outside a coroutine: call it from the main function or "
                           "from an entry method decorated with @coro")
    return suspend_coroutine(g)

cdef int suspend_coroutine(object g) except -1:
    """Switches from coroutine g (the current greenlet) to its parent."""
    cdef PyObject* parent = uc_gr_parent(g)
    if parent == NULL:
        raise RuntimeError("ucharm: a coroutine has no greenlet to return to")
    p = <object>parent
    Py_DECREF(p)  # uc_gr_parent's reference: `p` holds one
    uc_gr_switch(p)
    return 0

cdef int resume_waiter(object g) except -1:
    uc_gr_set_parent(g, uc_gr_current())  # back here when it waits again or ends
    uc_gr_switch(g)
    # The coroutine ran on: @when calls held for its chare and Chare.wait conditions are
    # checked again (as coroutines.resume does).
    obj = g._ck_obj
    if obj is not None and needs_after_entry(obj):
        _after_entry(obj)
    return 0


cdef class Link


@cython.freelist(256)
@cython.final
cdef class Request:
    """A transfer in flight (Channel.isend / irecv): wait() (in a coroutine) until the
    buffer may be reused (a send) or holds the data (a receive); test() says whether it
    is done without waiting. Keeps its buffer alive until then."""
    cdef bint _done
    cdef public object _waiter  # the coroutine waiting for it (wait(), charm.iwait)
    cdef object keep            # the buffer object (or DLPack capsule) until done
    cdef Py_buffer view         # held host buffer (has_view)
    cdef bint has_view
    cdef Link link              # the channel end it was posted on (None: a window's)
    cdef size_t _nbytes
    cdef uint32_t fid
    cdef bint want_value        # wait() returns the completion's value (atomics, flush...)
    cdef uint64_t _value

    def __dealloc__(self):
        if self.has_view:  # never posted (an error between taking the buffer and posting)
            PyBuffer_Release(&self.view)
            self.has_view = False

    def test(self):
        """True once the transfer is done (never waits)."""
        return self._done

    def ready(self):  # charm.iwait's name
        return self._done

    @property
    def done(self):
        return self._done

    @property
    def nbytes(self):
        """The bytes posted (a receive's buffer size)."""
        return self._nbytes

    @property
    def value(self):
        """A window operation's result once done: the old word (fetch_add, compare_swap),
        the count (flush, on_notify); None before."""
        return self._value if self._done and self.want_value else None

    def wait(self):
        """Waits (in a coroutine) until the operation is done; returns the bytes posted
        (transfers) or the result (window atomics, flush, notifications)."""
        if not self._done:
            wait_request(self, "Request.wait()")
        return self._value if self.want_value else self._nbytes

    def get(self):  # Future-like
        return self.wait()


cdef int wait_request(Request r, str what) except -1:
    while not r._done:
        r._waiter = _getcurrent()
        try:
            suspend_current(what)
        finally:
            r._waiter = None
    return 0


cdef inline uint32_t take_fid():
    cdef uint32_t fid
    if _free_fids.empty():
        return future_create(h_request_done)
    fid = _free_fids.back()
    _free_fids.pop_back()
    return fid


cdef inline uint32_t register_request(Request r, Link link, size_t n):
    """A future id for r's completion; the table holds r until then."""
    cdef uint32_t fid = take_fid()
    r.fid = fid
    r.link = link
    r._nbytes = n
    _inflight[fid] = <PyObject*>r
    Py_INCREF(r)
    if link is not None:
        link.n_inflight += 1
    return fid


cdef void h_request_done(uint32_t fid, void* msg) noexcept:
    cdef unordered_map[uint32_t, PyObject*].iterator it = _inflight.find(fid)
    if it == _inflight.end():
        CkAbort("ucharm: a channel completion for future %u, which no transfer posted", fid)
    cdef PyObject* p = deref(it).second
    _inflight.erase(it)
    _free_fids.push_back(fid)
    cdef Request r = <Request>p
    Py_DECREF(r)  # the table's reference (r holds its own)
    if r.want_value and value_is_u64(msg):
        r._value = value_u64(msg)
    CmiFree(msg)
    r._done = True
    if r.has_view:
        PyBuffer_Release(&r.view)
        r.has_view = False
    r.keep = None
    cdef Link link = r.link
    r.link = None
    try:
        if link is not None:
            link.n_inflight -= 1
        if link is not None and link.n_inflight == 0:
            if link.closing:
                link.close_now()
            if link._waiter is not None:
                w = link._waiter
                link._waiter = None
                resume_waiter(w)
        if r._waiter is not None:
            w = r._waiter
            r._waiter = None
            resume_waiter(w)
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while completing a channel transfer")


# ---- finding a buffer's memory ------------------------------------------------------------
cdef object _cupy_ndarray = None      # cupy.ndarray, once CuPy is imported
cdef object _cupy_current_stream = None
cdef enum:
    CACHE = 16
# Recently used CuPy arrays (their memory never changes): the object's address, a weak
# reference to it (a hit needs both), its pointer and size.
cdef uintptr_t _cache_id[CACHE]
cdef uintptr_t _cache_ptr[CACHE]
cdef size_t _cache_n[CACHE]
cdef list _cache_ref = [None] * CACHE
cdef bint _cache_weakrefs = True  # CuPy arrays accept weak references (else: no cache)


cdef inline int check_cupy() except -1:
    global _cupy_ndarray, _cupy_current_stream
    if _cupy_ndarray is None:
        cp = sys.modules.get("cupy")
        if cp is not None:
            _cupy_ndarray = cp.ndarray
            _cupy_current_stream = cp.cuda.get_current_stream
    return 0


cdef str kinds_text = ("host buffers need the buffer protocol (NumPy arrays, bytearray, memoryview), device "
                       "arrays __cuda_array_interface__ (CuPy, Numba, PyTorch) or __dlpack__")


cdef int cupy_memory(object buf, str what, uintptr_t* ptr, size_t* n) except -1:
    global _cache_weakrefs
    cdef uintptr_t key = <uintptr_t><PyObject*>buf
    cdef int slot = (key >> 5) % CACHE
    cdef object wr
    cdef PyObject* o
    if _cache_id[slot] == key:
        wr = _cache_ref[slot]
        o = PyWeakref_GetObject(wr)
        if o == <PyObject*>buf:
            ptr[0] = _cache_ptr[slot]
            n[0] = _cache_n[slot]
            return 0
    if not buf.flags.c_contiguous:
        raise ValueError(f"Channel.{what}: device arrays must be C-contiguous (use cupy.ascontiguousarray)")
    ptr[0] = buf.data.ptr
    n[0] = buf.nbytes
    if _cache_weakrefs:
        try:
            _cache_ref[slot] = _weakref.ref(buf)
        except TypeError:
            _cache_weakrefs = False
            return 0
        _cache_id[slot] = key
        _cache_ptr[slot] = ptr[0]
        _cache_n[slot] = n[0]
    return 0


cdef int cai_memory(dict cai, bint writable, str what, uintptr_t* ptr, size_t* n, uintptr_t* stream) except -1:
    cdef size_t item, total, expect
    shape = cai["shape"]
    typestr = cai["typestr"]
    item = int(typestr[2:])
    total = item
    for d in shape:
        total *= <size_t>d
    strides = cai.get("strides")
    if strides is not None and total:
        expect = item
        for k in range(len(shape) - 1, -1, -1):
            if shape[k] > 1 and strides[k] != expect:
                raise ValueError(f"Channel.{what}: device arrays must be C-contiguous")
            expect *= <size_t>shape[k]
    data = cai["data"]
    if writable and data[1]:
        raise ValueError(f"Channel.{what}: the device array is read-only: receive into a writable one")
    ptr[0] = <uintptr_t>data[0]
    n[0] = total
    s = cai.get("stream")
    if s is not None and s != 1 and s != 2:  # 1, 2: the legacy and per-thread default streams
        stream[0] = <uintptr_t>s
    return 0


cdef int dlpack_memory(Request r, object buf, str what, uintptr_t* ptr, size_t* n) except -1:
    dev = buf.__dlpack_device__() if hasattr(buf, "__dlpack_device__") else None
    if dev is not None and dev[0] not in (DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED):
        raise TypeError(f"Channel.{what}: a DLPack array on device type {dev[0]}: only host and CUDA memory travel")
    cap = buf.__dlpack__(stream=1) if dev is not None and dev[0] == DL_CUDA else buf.__dlpack__()
    if not PyCapsule_IsValid(cap, "dltensor"):
        raise TypeError(f"Channel.{what}: __dlpack__() did not return an unused DLPack capsule")
    cdef UcDLManagedTensor* mt = <UcDLManagedTensor*>PyCapsule_GetPointer(cap, "dltensor")
    cdef UcDLTensor* t = &mt.dl_tensor
    if t.device.device_type not in (DL_CPU, DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED):
        raise TypeError(f"Channel.{what}: a DLPack array on device type {t.device.device_type}: only host and "
                        "CUDA memory travel")
    cdef size_t item = (<size_t>t.dtype.bits * t.dtype.lanes + 7) // 8
    cdef size_t total = item, expect
    cdef int k
    for k in range(t.ndim):
        total *= <size_t>t.shape[k]
    if t.strides != NULL and total:
        expect = 1
        for k in range(t.ndim - 1, -1, -1):
            if t.shape[k] > 1 and <size_t>t.strides[k] != expect:  # DLPack strides count elements
                raise ValueError(f"Channel.{what}: DLPack arrays must be C-contiguous")
            expect *= <size_t>t.shape[k]
    ptr[0] = <uintptr_t>t.data + t.byte_offset
    n[0] = total
    r.keep = (buf, cap)  # the capsule, unconsumed, frees the tensor when it goes
    return 0


cdef int memory_of(Request r, object buf, bint writable, str what, object stream_arg,
                   uintptr_t* ptr, size_t* n, uintptr_t* stream) except -1:
    """Where `buf`'s memory is; for a device array also the stream its data waits for.
    Host buffers are held in r.view until the transfer is done."""
    cdef int flags
    stream[0] = 0
    check_cupy()
    if type(buf) is _cupy_ndarray:
        cupy_memory(buf, what, ptr, n)
        if stream_arg is None:
            # The transfer waits for the work queued on CuPy's current stream (0: the
            # legacy one, which the transfer's own synchronisation covers).
            stream[0] = _cupy_current_stream().ptr
        r.keep = buf
    elif PyObject_CheckBuffer(buf):
        flags = PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0)
        try:
            PyObject_GetBuffer(buf, &r.view, flags)
        except BufferError as e:
            if writable:
                try:
                    PyObject_GetBuffer(buf, &r.view, PyBUF_ANY_CONTIGUOUS)
                except BufferError:
                    pass
                else:
                    PyBuffer_Release(&r.view)
                    raise ValueError(f"Channel.{what}: the buffer ({type(buf).__name__}) is read-only: receive "
                                     "into a writable one") from None
            raise ValueError(f"Channel.{what}: the buffer ({type(buf).__name__}) is not contiguous: {e}") from None
        r.has_view = True
        ptr[0] = <uintptr_t>r.view.buf
        n[0] = <size_t>r.view.len
        r.keep = buf
    else:
        cai = getattr(buf, "__cuda_array_interface__", None)
        if cai is not None:
            cai_memory(cai, writable, what, ptr, n, stream)
            r.keep = buf
        elif hasattr(buf, "__dlpack__"):
            dlpack_memory(r, buf, what, ptr, n)
        else:
            raise TypeError(f"Channel.{what}: a {type(buf).__name__} is not a buffer ({kinds_text})")
    if stream_arg is not None:
        sp = stream_arg.ptr if hasattr(stream_arg, "ptr") else stream_arg
        if not isinstance(sp, int):
            raise TypeError(f"Channel.{what}: stream= takes a CUDA stream (an object with .ptr, as CuPy's and "
                            f"Numba's) or a cudaStream_t as an int, not a {type(stream_arg).__name__}")
        stream[0] = <uintptr_t>sp
    return 0


def memory(buf, bint writable=False):
    """(address, bytes) of a buffer or array as a transfer would see it (tests, tools)."""
    cdef Request r = Request.__new__(Request)
    cdef uintptr_t ptr = 0, stream = 0
    cdef size_t n = 0
    memory_of(r, buf, writable, "memory", None, &ptr, &n, &stream)
    return ptr, n


# ---- the core's channel end ---------------------------------------------------------------------
@cython.final
cdef class Link:
    """One end of a core channel (ck::CkChannel), opened by channel_open. Transfers post
    in order; the end closes once close() was called and no transfer is in flight."""
    cdef CkChannel* ch
    cdef Py_ssize_t n_inflight
    cdef bint closing
    cdef public object _waiter  # a coroutine waiting for inflight == 0 (waitall)

    def __dealloc__(self):
        # A Link goes only after its transfers (each Request holds it): close() normally
        # ran; otherwise the end is freed here, on the PE's thread or not at all.
        if self.ch != NULL and (_owner == 0 or PyThread_get_thread_ident() == _owner):
            c_channel_close(self.ch)
            self.ch = NULL

    cdef int close_now(self) except -1:
        if self.ch != NULL:
            c_channel_close(self.ch)
            self.ch = NULL
        return 0

    def close(self):
        """Closes the end once its transfers are done."""
        check_thread("Channel.close")
        self.closing = True
        if self.n_inflight == 0:
            self.close_now()

    @property
    def inflight(self):
        return self.n_inflight

    @property
    def is_open(self):
        return self.ch != NULL and not self.closing

    cdef inline int check(self, str what) except -1:
        # `what`: "Channel.isend" and the like, used only in the errors
        check_thread(what)
        if self.ch == NULL or self.closing:
            raise RuntimeError(f"{what} on a closed channel")
        return 0

    cdef inline Request post(self, Request r, bint recv, uintptr_t ptr, size_t n, uintptr_t stream):
        cdef uint32_t fid = register_request(r, self, n)
        if recv:
            c_channel_recv(self.ch, <void*>ptr, n, fid, <void*>stream)
        else:
            c_channel_send(self.ch, <const void*>ptr, n, fid, <void*>stream)
        return r

    def isend(self, buf, stream=None):
        """Sends buf's bytes (host or device memory); the Request is done once buf may change."""
        self.check("Channel.isend")
        cdef Request r = Request.__new__(Request)
        cdef uintptr_t ptr = 0, s = 0
        cdef size_t n = 0
        memory_of(r, buf, False, "isend", stream, &ptr, &n, &s)
        return self.post(r, False, ptr, n, s)

    def irecv(self, buf, stream=None):
        """Receives the next transfer into buf (at least as large); done once buf holds it."""
        self.check("Channel.irecv")
        cdef Request r = Request.__new__(Request)
        cdef uintptr_t ptr = 0, s = 0
        cdef size_t n = 0
        memory_of(r, buf, True, "irecv", stream, &ptr, &n, &s)
        return self.post(r, True, ptr, n, s)

    def post_send(self, uintptr_t ptr, size_t n, keep, uintptr_t stream):
        """A send of memory found by the caller (Channel.send's device arrays)."""
        self.check("Channel.send")
        cdef Request r = Request.__new__(Request)
        r.keep = keep
        return self.post(r, False, ptr, n, stream)

    def post_recv(self, uintptr_t ptr, size_t n, keep, uintptr_t stream):
        self.check("Channel.recv")
        cdef Request r = Request.__new__(Request)
        r.keep = keep
        return self.post(r, True, ptr, n, stream)

    def waitall(self):
        """Waits (in a coroutine) until no transfer of this end is in flight."""
        while self.n_inflight:
            self._waiter = _getcurrent()
            try:
                suspend_current("Channel.waitall()")
            finally:
                self._waiter = None


def waitall(requests):
    """Waits (in a coroutine) until every Request given is done."""
    cdef Request r
    for x in requests:
        r = <Request?>x
        if not r._done:
            wait_request(r, "waitall()")


def channel_open(uintptr_t chare, bytes peer_ref, object peer_idx, uint32_t sub_id):
    check_thread("Channel()")
    cdef Index i = wire_index(peer_idx)
    cdef Link link = Link.__new__(Link)
    link.ch = c_channel_open(<PyChare*>chare, to_ref(peer_ref), i, sub_id)
    return link


def buffer_address(obj, bint writable):
    """(address, length) of a contiguous host buffer (kept alive by the caller)."""
    cdef Py_buffer view
    PyObject_GetBuffer(obj, &view, PyBUF_ANY_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
    try:
        return <uintptr_t>view.buf, view.len
    finally:
        PyBuffer_Release(&view)
