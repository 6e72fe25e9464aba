# Part of ucharm/_core.pyx (included there): one-sided windows (ck::CkWindow) seen from
# Python. An end exposes a buffer of its own (host or CUDA memory, held until the end
# closes) and reads and writes the peer's; every operation names a Request, completed in C
# as channel transfers are (wait() returns the byte count, or an atomic's old word, or a
# count).

cdef extern from "<ucharm/charm.h>" namespace "ck":
    cdef cppclass CkWindow:
        CkWindow(const CollectionRef& self, const Index& self_idx, const CollectionRef& peer,
                 const Index& peer_idx, uint32_t sub_id)
        void close()
        void expose(void* base, size_t bytes)
        void put(size_t dst_offset, const void* src, size_t bytes, const CkCallback& done)
        void get(size_t src_offset, void* dst, size_t bytes, const CkCallback& done)
        void put_notify(size_t dst_offset, const void* src, size_t bytes, const CkCallback& done)
        void fetch_add(size_t offset, uint64_t value, const CkCallback& done)
        void compare_swap(size_t offset, uint64_t expected, uint64_t desired, const CkCallback& done)
        void flush(const CkCallback& done)
        uint64_t notifications()
        void on_notify(uint64_t count, const CkCallback& cb)
        bint exposed()
        bint ready()
        size_t local_bytes()
        size_t peer_bytes()


@cython.final
cdef class WindowEnd:
    """One end of a core window (ucharm.Window holds it)."""
    cdef CkWindow* w
    cdef Request holder  # the exposed buffer (its memory and Py_buffer), until close

    def __dealloc__(self):
        if self.w != NULL and (_owner == 0 or PyThread_get_thread_ident() == _owner):
            del self.w
            self.w = NULL

    cdef inline int check(self, str what) except -1:
        check_thread(what)
        if self.w == NULL:
            raise RuntimeError(f"{what} on a closed window")
        return 0

    cdef inline int check_range(self, str what, size_t offset, size_t n) except -1:
        # Known once the peer's setup is here; before, the core checks when the operation
        # leaves (and stops the job).
        if self.w.ready() and (offset > self.w.peer_bytes() or n > self.w.peer_bytes() - offset):
            raise ValueError(f"{what}: offset {offset} + {n} bytes reaches past the end of the peer's "
                             f"{self.w.peer_bytes()}-byte buffer")
        return 0

    cdef inline Request op(self, bint want_value, object keep):
        cdef Request r = Request.__new__(Request)
        r.want_value = want_value
        r.keep = keep
        return r

    def expose(self, buf):
        """Registers buf (writable host or device memory) for the peer, once."""
        self.check("Window.expose")
        if self.holder is not None:
            raise RuntimeError("Window.expose: this end has exposed a buffer already (once per window)")
        cdef Request r = Request.__new__(Request)
        cdef uintptr_t ptr = 0, s = 0
        cdef size_t n = 0
        memory_of(r, buf, True, "expose", None, &ptr, &n, &s)
        self.holder = r
        self.w.expose(<void*>ptr, n)

    def put(self, size_t offset, buf, bint notify=False):
        what = "Window.put_notify" if notify else "Window.put"
        self.check(what)
        cdef Request r = self.op(False, None)
        cdef uintptr_t ptr = 0, s = 0
        cdef size_t n = 0
        memory_of(r, buf, False, what[7:], None, &ptr, &n, &s)
        self.check_range(what, offset, n)
        cdef uint32_t fid = register_request(r, None, n)
        if notify:
            self.w.put_notify(offset, <const void*>ptr, n, CkCallback.future(CkMyPe(), fid))
        else:
            self.w.put(offset, <const void*>ptr, n, CkCallback.future(CkMyPe(), fid))
        return r

    def get(self, size_t offset, buf):
        self.check("Window.get")
        cdef Request r = self.op(False, None)
        cdef uintptr_t ptr = 0, s = 0
        cdef size_t n = 0
        memory_of(r, buf, True, "get", None, &ptr, &n, &s)
        self.check_range("Window.get", offset, n)
        cdef uint32_t fid = register_request(r, None, n)
        self.w.get(offset, <void*>ptr, n, CkCallback.future(CkMyPe(), fid))
        return r

    def fetch_add(self, size_t offset, uint64_t value):
        self.check("Window.fetch_add")
        cdef Request r = self.op(True, None)
        self.w.fetch_add(offset, value, CkCallback.future(CkMyPe(), register_request(r, None, 8)))
        return r

    def compare_swap(self, size_t offset, uint64_t expected, uint64_t desired):
        self.check("Window.compare_swap")
        cdef Request r = self.op(True, None)
        self.w.compare_swap(offset, expected, desired, CkCallback.future(CkMyPe(), register_request(r, None, 8)))
        return r

    def flush(self):
        self.check("Window.flush")
        cdef Request r = self.op(True, None)
        self.w.flush(CkCallback.future(CkMyPe(), register_request(r, None, 0)))
        return r

    def on_notify(self, uint64_t count):
        self.check("Window.on_notify")
        cdef Request r = self.op(True, None)
        self.w.on_notify(count, CkCallback.future(CkMyPe(), register_request(r, None, 0)))
        return r

    def notifications(self):
        self.check("Window.notifications")
        return self.w.notifications()

    def ready(self):
        return self.w != NULL and self.w.ready()

    def exposed(self):
        return self.w != NULL and self.w.exposed()

    def local_bytes(self):
        return self.w.local_bytes() if self.w != NULL else 0

    def peer_bytes(self):
        return self.w.peer_bytes() if self.w != NULL else 0

    def close(self):
        """Deregisters the exposed buffer; operations not sent yet are dropped."""
        check_thread("Window.close")
        if self.w != NULL:
            del self.w
            self.w = NULL
        self.holder = None

    @property
    def is_open(self):
        return self.w != NULL


def window_open(uintptr_t chare, bytes peer_ref, object peer_idx, uint32_t sub_id):
    check_thread("Window()")
    cdef WindowEnd e = WindowEnd.__new__(WindowEnd)
    cdef PyChare* c = <PyChare*>chare
    e.w = new CkWindow(c_chare_ref(c), c_chare_index(c), to_ref(peer_ref), wire_index(peer_idx), sub_id)
    return e
