# Part of ucharm/_core.pyx (included there): Channel's fast path. ChannelCore is the base
# class of channel.Channel: it holds the fields that send() and recv() touch per message
# and runs both in C when the objects take the fast wire format (core_fastwire.pxi) and no
# device buffer or stream is involved; everything else goes to Channel._send_slow and
# Channel._recv_slow (pickles, device arrays, zero-copy buffers), which use the same fields,
# so the two kinds of message share one sequence and arrive in order.
#
# A fast channel message: [size][FW_CHAN][u32 key length][the sender's key, in the fast
# format: (collection id, index, port, n), the receiver's name of the channel][u64 sequence
# number][u32 object count][the objects] (count | FW_CHAN_PICKLED: the tuple of objects
# follows as one pickle, for objects the tags do not take, without out-of-band buffers or
# device arrays). On arrival the receiving element's
# `_ck_chan_wire` (a 64-bit hash of the key -> weak reference to its Channel, checked
# against the channel's own copy of the key) finds the channel; the value goes into its
# inbox as (None, value) and a coroutine waiting in recv() is resumed; when that coroutine
# waits in this file's recv() for exactly this message (the ping-pong case), the value is
# handed to it in a field instead, without the inbox's dict entry, tuple and key.
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_FromUnsignedLongLong


cdef inline uint64_t fw_hash64(const char* s, Py_ssize_t n) noexcept:
    """FNV-1a, 64 bits: a channel key's name in its element's _ck_chan_wire."""
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t k
    for k in range(n):
        h = (h ^ <uint8_t>s[k]) * 1099511628211ULL
    return h

cdef object _chan_no_ops = None  # channel.py's _NO_OPS: what send() returns without transfers
cdef uint32_t FW_CHAN_PICKLED = 0x80000000U

# Builtin types whose instances cannot carry a __cuda_array_interface__ attribute: a send
# of them needs no look for one (the slow path sends device arrays over the core's channel).
_host_only_types = frozenset((list, dict, set, frozenset, bytearray, complex, int, float, str, bytes,
                              tuple, bool, type(None)))


cdef bint may_be_device(tuple objs) except -1:
    for o in objs:
        if type(o) not in _host_only_types and hasattr(o, "__cuda_array_interface__"):
            return True
    return False


def set_channel_no_ops(obj):
    global _chan_no_ops
    _chan_no_ops = obj


def fw_dumps(obj):
    """obj in the fast format (bytes), or None when it does not take it."""
    cdef FwSeen seen
    seen.n = 0
    cdef Py_ssize_t n = fw_size(obj, 0, &seen)
    if n < 0:
        return None
    b = PyBytes_FromStringAndSize(NULL, n)
    fw_write(obj, PyBytes_AS_STRING(b), PyBytes_AS_STRING(b) + n)
    return b


def fw_loads(bytes b):
    cdef const char* p = PyBytes_AS_STRING(b)
    return fw_read(&p, p + PyBytes_GET_SIZE(b))


@cython.auto_pickle(False)  # channel.Channel pickles itself (__getstate__/__setstate__)
cdef class ChannelCore:
    """The base of channel.Channel (see the top of this file)."""
    cdef public bint _closed
    cdef public object _inbox       # seq -> (message head, parts), or (None, value) of a fast message
    cdef public long long _send_seq
    cdef public long long _recv_seq
    cdef public object _waiter      # the coroutine waiting in recv() (or charm.iwait)
    cdef bytes _wire                # this end's key, as the peer names the channel
    cdef public bytes _peer_wire    # the peer's key, which its messages carry
    cdef CollectionRef _peer_ref
    cdef Index _peer_idx
    cdef bint _fast                 # _fast_setup found the key and peer fit the fast path
    cdef object _fast_g             # the coroutine that recv() below suspended for message _recv_seq
    cdef bint _has_handoff          # ... and it arrived: _handoff is its value
    cdef object _handoff

    def _fast_setup(self, bytes wire, bytes peer_wire, bytes peer_ref, object peer_idx):
        """wire, peer_wire: fw_dumps of this end's key and of the peer's (None: no fast
        sends; no fast messages come). Returns the name of this channel in its element's
        _ck_chan_wire, or None."""
        self._fast = False
        self._peer_wire = peer_wire
        key = None
        if peer_wire is not None:
            key = PyLong_FromUnsignedLongLong(fw_hash64(PyBytes_AS_STRING(peer_wire), PyBytes_GET_SIZE(peer_wire)))
        if wire is None:
            return key
        self._wire = wire
        self._peer_ref = to_ref(peer_ref)
        self._peer_idx = wire_index(peer_idx)
        self._fast = True
        return key

    # binding(False): a method descriptor, called with one argument tuple (a cyfunction
    # would slice `self` off it into a second one)
    @cython.binding(False)
    def send(self, *objs, stream=None):
        """Sends the objects (one or several; recv() returns one, or a tuple of several).
        Host objects travel in a message, device arrays (CuPy or anything with
        __cuda_array_interface__) and large immutable host buffers over the core's
        channel; returns a handle whose get() (in a coroutine) waits until those buffers
        may be reused."""
        cdef void* msg
        if stream is None and self._fast and not self._closed:
            check_thread("Channel.send")
            msg = fw_build_chan(self._wire, self._send_seq, objs, None)
            if msg == NULL and not may_be_device(objs):
                blob = dumps_in_band(objs)  # None: out-of-band buffers, the slow path
                if blob is not None:
                    msg = fw_build_chan(self._wire, self._send_seq, objs, blob)
            if msg != NULL:
                if _ro_pending:
                    flush_readonlies()
                self._send_seq += 1
                c_send(self._peer_ref, self._peer_idx, msg)
                return _chan_no_ops
        return self._send_slow(*objs, stream=stream)

    @cython.binding(False)
    def recv(self, *bufs, stream=None):
        """The next objects sent (one, or a tuple of several), waiting for them in a
        coroutine. Device arrays among them go into `bufs` (in order) or into new CuPy
        arrays. An error leaves the channel as it was: nothing is taken from it and no
        receive is posted."""
        cdef PyObject* item
        if bufs or stream is not None:
            return self._recv_slow(*bufs, stream=stream)
        while not self._closed:
            seq = self._recv_seq
            item = PyDict_GetItem(self._inbox, seq)
            if item == NULL:
                g = uc_gr_current()
                if not getattr(g, "_ck_coro", False):
                    break  # the slow path raises the error
                self._waiter = g
                self._fast_g = g
                try:
                    suspend_coroutine(g)
                finally:
                    self._waiter = None
                    self._fast_g = None
                if self._has_handoff:  # the message, handed over on arrival
                    value = self._handoff
                    self._handoff = None
                    self._has_handoff = False
                    self._recv_seq += 1
                    return value
                continue
            if PyTuple_GET_ITEM(<object>item, 0) != <PyObject*>None:
                break  # a pickled message: the slow path
            value = <object>PyTuple_GET_ITEM(<object>item, 1)
            del self._inbox[seq]
            self._recv_seq += 1
            return value
        return self._recv_slow(*bufs, stream=stream)


cdef void* fw_build_chan(bytes wire, long long seq, tuple objs, bytes pickled) except? NULL:
    """The message of a channel send whose objects all take the fast format; NULL (no
    error) when one does not. `pickled` (not None): the pickle of `objs` instead."""
    cdef Py_ssize_t k, s
    cdef Py_ssize_t n = PyTuple_GET_SIZE(objs)
    cdef Py_ssize_t wl = PyBytes_GET_SIZE(wire)
    cdef size_t size = 4 + wl + 8 + 4
    cdef uint64_t u64 = <uint64_t>seq
    cdef FwSeen seen
    seen.n = 0
    if pickled is not None:
        size += PyBytes_GET_SIZE(pickled)
    for k in range(n if pickled is None else 0):
        s = fw_size(<object>PyTuple_GET_ITEM(objs, k), 0, &seen)
        if s < 0:
            return NULL
        size += s
    cdef void* msg = raw_alloc(16 + size)
    cdef char* p = raw_payload(msg)
    cdef uint64_t* words = <uint64_t*>p
    words[0] = size
    words[1] = FW_CHAN
    p = fw_put32(p + 16, <uint32_t>wl)
    memcpy(p, PyBytes_AS_STRING(wire), wl)
    p += wl
    memcpy(p, &u64, 8)
    if pickled is not None:
        p = fw_put32(p + 8, <uint32_t>n | FW_CHAN_PICKLED)
        memcpy(p, PyBytes_AS_STRING(pickled), PyBytes_GET_SIZE(pickled))
        return msg
    p = fw_put32(p + 8, <uint32_t>n)
    try:
        for k in range(n):
            p = fw_write(<object>PyTuple_GET_ITEM(objs, k), p, raw_payload(msg) + 16 + size)
    except BaseException:
        CmiFree(msg)
        raise
    return msg


cdef void fw_channel_message(object o, void* msg) noexcept:
    """A fast channel message for element o."""
    cdef const char* p = raw_payload(msg)
    cdef const char* end = p + 16 + (<uint64_t*>p)[0]
    cdef uint32_t wl, n, k
    cdef uint64_t seq
    cdef ChannelCore ch
    cdef PyObject* ref
    cdef const char* kp = NULL
    try:
        try:
            p += 16
            if end - p < 4:
                fw_truncated()
            memcpy(&wl, p, 4)
            p += 4
            if <size_t>(end - p) < <size_t>wl + 12:
                fw_truncated()
            kp = p
            p += wl
            memcpy(&seq, p, 8)
            memcpy(&n, p + 8, 4)
            p += 12
            if n & FW_CHAN_PICKLED:
                value = _loads(PyBytes_FromStringAndSize(p, end - p))
                if n == (1 | FW_CHAN_PICKLED):
                    value = value[0]
            elif n == 1:
                value = fw_read(&p, end)
            else:
                value = PyTuple_New(n)
                for k in range(n):
                    v = fw_read(&p, end)
                    Py_INCREF(v)
                    PyTuple_SET_ITEM(value, k, v)
        finally:
            CmiFree(msg)
        chans = getattr(o, "_ck_chan_wire", None)
        ref = NULL
        if chans is not None:
            ref = PyDict_GetItem(chans, PyLong_FromUnsignedLongLong(fw_hash64(kp, wl)))
        target = None
        if ref != NULL:
            target = <object>PyWeakref_GetObject(<object>ref)
        if (not isinstance(target, ChannelCore) or (<ChannelCore>target)._peer_wire is None
                or PyBytes_GET_SIZE((<ChannelCore>target)._peer_wire) != wl
                or memcmp(PyBytes_AS_STRING((<ChannelCore>target)._peer_wire), kp, wl) != 0):
            # not open yet, closed, or another channel's key of the same hash: channel.py
            _py.channel_fast(o, PyBytes_FromStringAndSize(kp, wl), seq, value)
            return
        ch = <ChannelCore>target
        w = ch._waiter
        if w is not None and ch._fast_g is w and seq == <uint64_t>ch._recv_seq and not ch._has_handoff:
            ch._handoff = value
            ch._has_handoff = True
        else:
            ch._inbox[seq] = (None, value)
        if w is not None:
            ch._waiter = None
            resume_waiter(w)
    except BaseException as e:
        if not _py.handle_exit(e):
            _fatal("while delivering a channel message")
