# Part of ucharm/_core.pyx (included there): the hooks through which the core calls Python,
# and the check that only the PE's thread calls the runtime.
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


cdef inline int check_thread_named(str name) except -1:
    # check_thread for a proxy call: its message is made only when it fails
    if _owner != 0 and PyThread_get_thread_ident() != _owner:
        wrong_thread(f"{name}()")
    return 0


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
    # else in charm.py's invoke_slow. Messages of the fast format: core_fastwire.pxi.
    cdef uint64_t* words = <uint64_t*>raw_payload(msg)
    if words[1] == FW_CALL:
        fw_invoke_call(<object>obj, msg)
        return
    if words[1] == FW_CHAN:
        fw_channel_message(<object>obj, msg)
        return
    cdef Message m = wrap(msg)
    cdef object o = <object>obj
    cdef tuple t
    fn = None
    bufs = None
    try:
        if words[1] == 0:  # no out-of-band buffers: unpickle a copy of the small head
            t = _loads(PyBytes_FromStringAndSize(raw_payload(msg) + 16, words[0]))
        else:
            head, bufs = parse(m, False)
            t = _loads(head, buffers=bufs)
        if t[0] == 1:  # channel data
            _py.channel_message(o, t, bufs)  # the parts alias the message
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
    h.about_to_migrate = h_about_to_migrate
    h.pack_size = h_pack_size
    h.pack_write = h_pack_write
    h.unpack = h_unpack
    h.arrived = h_arrived
    h.resume_from_sync = h_resume_from_sync
    h.drop = h_drop
    h.restarted = h_restarted
    set_hooks(h)
    set_embedder_map(h_map)
