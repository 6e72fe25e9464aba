# Part of ucharm/_core.pyx (included there): messages, built and parsed.
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
