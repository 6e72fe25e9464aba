# Part of ucharm/_core.pyx (included there): an array element's Python object leaving its
# PE and arriving on another (the hooks PyChare's pup/ckAboutToMigrate/ckJustMigrated call),
# and the balancer's ResumeFromSync. The object travels as one pickle (protocol 5) whose
# contiguous buffers (NumPy arrays) go out of band, framed as messages are:
# [u64 head length][u64 buffer count][u64 buffer lengths...][head][pad 16][buffers, each
# padded to 16]. Sizing pickles once; the packer writes those bytes (no second pickle).

cdef void h_about_to_migrate(void* obj) noexcept:
    try:
        _py.about_to_migrate(<object>obj)
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while an element was about to migrate")

cdef size_t h_pack_size(void* obj, void** state, int for_checkpoint) noexcept:
    cdef Py_ssize_t nb, k
    cdef size_t total
    cdef Py_buffer view
    try:
        head, bufs = _py.pack(<object>obj, bool(for_checkpoint))
        nb = len(bufs)
        total = (16 + 8 * nb + PyBytes_GET_SIZE(head) + 15) & ~<size_t>15
        lens = []
        for k in range(nb):
            PyObject_GetBuffer(bufs[k], &view, PyBUF_ANY_CONTIGUOUS)
            lens.append(view.len)
            PyBuffer_Release(&view)
            total += (<size_t>view.len + 15) & ~<size_t>15
        st = (total, head, bufs, lens)
        Py_INCREF(st)
        state[0] = <void*>st
        return total
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while pickling a chare for a checkpoint" if for_checkpoint else
                   "while pickling a migrating element")
    return 0

cdef char _zeros[16]

cdef void h_pack_write(void* state, void (*emit)(void*, const void*, size_t) noexcept, void* ctx) noexcept:
    cdef tuple st = <tuple>state
    Py_DECREF(st)  # the tuple is kept alive by `st` until this returns
    cdef uint64_t w
    cdef Py_ssize_t k, nb
    cdef Py_buffer view
    cdef size_t pos
    try:
        total, head, bufs, lens = st
        nb = len(bufs)
        w = PyBytes_GET_SIZE(head)
        emit(ctx, &w, 8)
        w = nb
        emit(ctx, &w, 8)
        for k in range(nb):
            w = lens[k]
            emit(ctx, &w, 8)
        emit(ctx, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
        pos = 16 + 8 * nb + PyBytes_GET_SIZE(head)
        if pos % 16:
            emit(ctx, _zeros, 16 - pos % 16)
        for k in range(nb):
            PyObject_GetBuffer(bufs[k], &view, PyBUF_ANY_CONTIGUOUS)
            try:
                if view.len != lens[k]:
                    raise BufferError(f"buffer {k} of a migrating element changed size while it was packed")
                emit(ctx, view.buf, view.len)
                if view.len % 16:
                    emit(ctx, _zeros, 16 - view.len % 16)
            finally:
                PyBuffer_Release(&view)
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while packing a migrating element")

cdef void* h_unpack(const char* p, size_t length) noexcept:
    # One copy out of the arrival message (freed once the element is rebuilt); NumPy
    # arrays of the state alias this bytearray (malloc'ed: 16-byte aligned).
    try:
        b = bytearray(length)
        memcpy(<char*>b, p, length)
        Py_INCREF(b)
        return <void*>b
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while unpacking a migrated element")
    return NULL

cdef void* h_arrived(void* chare, void* pending) noexcept:
    cdef object b = <object>pending
    Py_DECREF(b)  # `b` holds it now
    cdef uint64_t hl, nb, k, n
    cdef size_t off
    cdef const uint64_t* words
    try:
        if len(b) < 16:
            raise ValueError("the packed state of a migrated element is truncated")
        words = <const uint64_t*><char*>b
        hl = words[0]
        nb = words[1]
        off = 16 + 8 * nb
        if off + hl > <size_t>len(b):
            raise ValueError("the packed state of a migrated element is truncated")
        mv = memoryview(b)
        head = mv[off:off + hl]
        off = (off + hl + 15) & ~<size_t>15
        bufs = []
        for k in range(nb):
            n = words[2 + k]
            if off + n > <size_t>len(b):
                raise ValueError("the packed state of a migrated element is truncated")
            bufs.append(mv[off:off + n])
            off += (n + 15) & ~<size_t>15
        obj = _py.arrived(<uintptr_t>chare, head, bufs)
        Py_INCREF(obj)
        return <void*>obj
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while rebuilding a migrated element or a chare of a checkpoint")
    return NULL

cdef void h_resume_from_sync(void* obj) noexcept:
    try:
        _py.resume_from_sync(<object>obj)
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("in resumeFromSync")

cdef void h_drop(void* state) noexcept:
    Py_DECREF(<object>state)

cdef void h_restarted() noexcept:
    try:
        _py.restarted()
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while resuming after a restart")


# ---- migration and load balancing (called by chare.py) -----------------------------------------
def migrate(uintptr_t chare, int pe):
    check_thread("Chare.migrate")
    c_migrate(<PyChare*>chare, pe)

def set_migratable(uintptr_t chare, bint m):
    check_thread("Chare.setMigratable")
    c_set_migratable(<PyChare*>chare, m)

def is_migratable(uintptr_t chare):
    return c_is_migratable(<PyChare*>chare)

def home_pe(uintptr_t chare):
    return c_home_pe(<PyChare*>chare)

def set_uses_at_sync(uintptr_t chare, bint on):
    c_set_uses_at_sync(<PyChare*>chare, on)

def uses_at_sync(uintptr_t chare):
    return c_uses_at_sync(<PyChare*>chare)

def at_sync(uintptr_t chare):
    check_thread("Chare.AtSync")
    c_at_sync(<PyChare*>chare)
