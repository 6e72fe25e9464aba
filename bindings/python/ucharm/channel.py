"""Channels: two-way, in-order streams of objects between two chares. Host objects
travel pickled inside ordinary entry messages to the peer element (the core delivers them
wherever it is, exactly once), numbered per channel and direction: a channel's receive
queue and numbers are part of its element's state, so elements migrate with their channels
open (both ends may move). Device arrays and large host buffers whose memory cannot change
travel over a ck::CkChannel (UCX, zero-copy), opened on first use, each transfer completing
into a _core.Request (completed in C) that keeps its buffer and the core's end alive until
then; the core's channel ends stay on their elements' home PEs, so such a channel pins both
elements there.

The buffer forms (isend, irecv, recv_into, waitall) skip the message: only the bytes
travel, over a second core channel end of their own, matched in order as MPI's
send/receive pairs are (the n-th isend lands in the n-th irecv of the peer).
"""
import pickle
import sys
import weakref

from greenlet import getcurrent

from . import _core, _wire, coroutines, proxy

Request = _core.Request
waitall = _core.waitall

_ZERO_COPY_MIN = 64 * 1024   # channel buffers this large travel zero-copy, not inside a message

_cupy_ndarray = None  # cupy.ndarray once CuPy is imported (its attributes are cheaper than the CAI)


def _device_info(obj):
    """(ptr, nbytes, shape, dtype str, stream) of a device array, or None for host objects."""
    global _cupy_ndarray
    if _cupy_ndarray is None and "cupy" in sys.modules:
        _cupy_ndarray = sys.modules["cupy"].ndarray
    if type(obj) is _cupy_ndarray:
        if not obj.flags.c_contiguous:
            raise ValueError("Channel: device arrays must be C-contiguous")
        # Transfers wait for the work queued on CuPy's current stream (0: the legacy one,
        # which the transfer's own synchronisation covers).
        return obj.data.ptr, obj.nbytes, obj.shape, obj.dtype.str, sys.modules["cupy"].cuda.get_current_stream().ptr
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        return None
    import numpy
    shape = tuple(cai["shape"])
    dt = numpy.dtype(cai["typestr"])
    n = dt.itemsize
    for d in shape:
        n *= d
    strides = cai.get("strides")
    if strides is not None:
        expect, ok = dt.itemsize, True
        for d, s in zip(reversed(shape), reversed(strides)):
            if d > 1 and s != expect:
                ok = False
            expect *= d
        if not ok:
            raise ValueError("Channel.send: device arrays must be C-contiguous")
    stream = cai.get("stream") or 0
    if stream in (1, 2):  # the legacy / per-thread default streams: nothing to wait for
        stream = 0
    return cai["data"][0], n, shape, dt.str, stream


class _SendHandle:
    """What Channel.send returns: get() waits (in a coroutine) until the device arrays and
    zero-copy buffers of that send may be reused."""
    __slots__ = ("ops",)

    def __init__(self, ops):
        self.ops = ops

    def ready(self):
        return all(op.test() for op in self.ops)

    def get(self):
        waitall(self.ops)

    wait = get


_NO_OPS = _SendHandle([])
_core.set_channel_no_ops(_NO_OPS)


def _cannot_change(m):
    """Whether the memory of out-of-band buffer `m` cannot change until a transfer is done:
    only memory owned by an immutable bytes object (np.frombuffer(b'...')) qualifies. A
    read-only array may be a view of a writable one, or have writable views made before it
    became read-only, so its data can still change."""
    if not m.readonly:
        return False
    o = m.obj
    while o is not None:
        if type(o) is bytes:
            return True
        if isinstance(o, memoryview):
            o = o.obj
            continue
        flags = getattr(o, "flags", None)
        if flags is None or getattr(flags, "writeable", True):
            return False
        o = getattr(o, "base", None)
    return False


def _pin(chare):
    """The core's channel end ties the element to its home PE: the balancer leaves it."""
    if chare._ck_kind == "array":
        _core.set_migratable(chare._ck_ptr, False)


_PORTS = 256          # Channel(port=...): 0..255
_NTH_BITS = 23        # the n-th channel to a peer: its core sub-id wraps after 2^23 (see __init__)
_RAW_SUB = 1 << 31    # the sub-id bit of the buffer forms' core end (isend/irecv)


class Channel(_core.ChannelCore):
    """A two-way, in-order stream of objects between two chares: both create it,
    Channel(self, remote=proxy_of_the_other); send(*objs) and recv() (in a coroutine);
    close() (or dropping the last reference) frees it. Host objects travel in messages
    and the channel migrates with its element (it must be reachable from the element's
    state). CuPy arrays (anything with __cuda_array_interface__) among the objects go GPU
    to GPU over the Channel API; large host buffers whose memory cannot change go
    zero-copy the same way, except in arrays created with useAtSync=True (the balancer
    moves their elements). Either pins both elements to their home PEs.
    send() and recv() are ChannelCore's (src/core_fastchan.pxi): objects that take the
    fast wire format travel in C; the others through _send_slow and _recv_slow here."""

    def __init__(self, chare, remote, port=0):
        self._link = None  # the core's end for send/recv's device and zero-copy data
        self._raw = None   # the core's end for isend/irecv
        self._closed = True  # until open: __del__ of a half-built channel does nothing
        if not isinstance(remote, proxy.ElementProxy):
            raise TypeError("Channel(self, remote=...): remote must be the proxy of one element")
        if not isinstance(port, int) or not 0 <= port < _PORTS:
            raise ValueError(f"Channel(..., port={port!r}): ports are 0 to {_PORTS - 1}")
        _close_collected()
        self._chare = chare
        self._remote = remote
        self.remote = remote  # charm4py's public name
        peer_base = (_core.ref_id(remote._ref), _wire.norm(remote._idx), port)
        # Several channels between the same two chares pair up in creation order: the n-th
        # one each side opens (per port) is one channel. The core names it by a 32-bit
        # sub-id, port and n modulo 2^23 (the top bit: the buffer forms' end): ids repeat
        # only between channels 2^23 apart, which would both have to be open at once
        # (memory runs out well before).
        nth = chare._ck_chan_count.get(peer_base, 0)
        sub = port | ((nth % (1 << _NTH_BITS)) << 8)
        self._key = (_core.ref_id(chare.thisProxy._ref), _wire.norm(chare._ck_self._idx), port, nth)  # the peer's name for us
        self._peer_key = peer_base + (nth,)
        self._sub = sub
        chare._ck_chan_count[peer_base] = nth + 1
        self._closed = False
        self._direct = False  # the core's channel end was opened: the element is pinned
        self._send_seq = 0
        self._recv_seq = 0
        self._inbox = {}  # seq -> (message head tuple, [payload, buffers...]) or (None, value)
        self._init_local()
        chare._ck_channels[self._peer_key] = self  # a weak reference (WeakValueDictionary)
        self._register_fast()
        for seq, item in chare._ck_early.pop(self._peer_key, {}).items():
            self._inbox[seq] = item

    def _register_fast(self):
        # The fast path: sends carry this end's key in the fast format; the peer's messages
        # carry its key, under which the element finds this channel (a weak reference).
        name = self._fast_setup(_core.fw_dumps(self._key), _core.fw_dumps(self._peer_key),
                                self._remote._ref, self._remote._idx)
        self._wire_name = name
        if name is not None:
            self._chare._ck_chan_wire[name] = weakref.ref(self)

    def _init_local(self, moved=False):
        self._waiter = None
        c = self._chare
        # Zero-copy host buffers would pin the element: not where the balancer moves it,
        # nor once it has moved (the core's channel ends open only at home).
        self._zc_ok = not moved and not (c._ck_kind == "array" and _core.uses_at_sync(c._ck_ptr))

    # -- migration: the channel travels inside its element's pickled state
    def __getstate__(self):
        if self._link is not None or self._raw is not None or self._direct:
            raise RuntimeError(f"the channel to {self._remote!r} has carried device arrays or zero-copy buffers: "
                               "its core end stays on this PE")
        inbox = {seq: _freeze(item) for seq, item in self._inbox.items()}
        return (self._chare, self._remote, self._key, self._peer_key, self._sub, self._closed,
                self._send_seq, self._recv_seq, inbox)

    def __setstate__(self, state):
        (self._chare, self._remote, self._key, self._peer_key, self._sub, self._closed,
         self._send_seq, self._recv_seq, self._inbox) = state
        self.remote = self._remote
        self._link = self._raw = None
        self._direct = False
        self._init_local(moved=True)
        if not self._closed:  # migration.arrived made the element's runtime fields first
            self._chare._ck_channels[self._peer_key] = self
            self._register_fast()

    def _open_core(self, what, sub):
        """A core channel end, opened on first use; it exists only on the element's home
        PE (the peer's too: the core pairs ends there)."""
        self._check_open(what)
        c = self._chare
        home = _core.home_pe(c._ck_ptr)
        if home != _core.my_pe():
            raise RuntimeError(f"Channel.{what}: device arrays, zero-copy buffers and the buffer forms "
                               f"(isend/irecv) travel over the core's channel, whose ends stay on their "
                               f"elements' home PEs, and this element ({type(c).__name__} {c.thisIndex}) has "
                               f"migrated (PE {_core.my_pe()}, home PE {home}); send host data (NumPy) with "
                               f"send/recv on channels of elements that move")
        link = _core.channel_open(c._ck_ptr, self._remote._ref, self._remote._idx, sub)
        self._direct = True
        _pin(c)
        return link

    def _open_direct(self, what):
        if self._link is None:
            self._link = self._open_core(what, self._sub)

    def _open_raw(self, what):
        if self._raw is None:
            self._raw = link = self._open_core(what, self._sub | _RAW_SUB)
            # From now on ch.isend/ch.irecv are the core end's own (Cython) methods: no
            # Python frame per call. Closing the channel closes the end, whose methods
            # then raise.
            self.isend = link.isend
            self.irecv = link.irecv
        return self._raw

    # -- closing
    def close(self):
        """Closes this end: later send/recv raise; messages that arrive for it are dropped.
        Transfers already posted finish first (the core's end closes after them). Close
        an end once the peer has nothing more to send on it."""
        if self._closed:
            return
        self._closed = True
        self._inbox.clear()
        chans = self._chare._ck_channels
        if chans.get(self._peer_key) is self:
            del chans[self._peer_key]
        name = getattr(self, "_wire_name", None)
        r = self._chare._ck_chan_wire.get(name)
        if r is not None and r() is self:
            del self._chare._ck_chan_wire[name]
        if self._waiter is not None:  # a recv waiting in another coroutine: it raises
            w, self._waiter = self._waiter, None
            coroutines.resume(w)
        self._release()

    def _release(self):
        # The core's ends close once their transfers in flight are done (each Request
        # holds its end until then).
        for link in (self._link, self._raw):
            if link is not None:
                link.close()

    def __del__(self):
        if self._closed and self._link is None and self._raw is None:
            return
        if _core.on_pe_thread():
            self.close()
        else:  # collected by another thread's garbage collection: closed by the PE later
            for link in (self._link, self._raw):
                if link is not None:
                    _collected.append(link)
            self._link = self._raw = None
            self._closed = True

    def _check_open(self, what):
        if self._closed:
            raise RuntimeError(f"Channel.{what} on a closed channel (to {self._remote!r})")

    # -- sending (send() is ChannelCore's: objects it cannot send in C come here)
    def _send_slow(self, *objs, stream=None):
        self._check_open("send")
        dev = None
        for o in objs:
            if hasattr(o, "__cuda_array_interface__"):
                dev = []
                break
        host = objs
        if dev is not None:
            host = []
            for i, o in enumerate(objs):
                info = _device_info(o)
                if info is None:
                    host.append(o)
                else:
                    dev.append((i,) + info)
                    host.append(None)
            host = tuple(host)
        pbs = []
        try:
            payload = pickle.dumps(host, _wire.PROTOCOL, buffer_callback=pbs.append)
        except Exception as e:
            raise TypeError(f"Channel.send: an object cannot be pickled: {e}") from e
        inline, zc, layout = [], [], None
        if pbs:
            try:
                raws = [pb.raw() for pb in pbs]
            except BufferError:  # a non-contiguous buffer: everything in band
                payload, raws = pickle.dumps(host, _wire.PROTOCOL), []
            # Per out-of-band buffer: -1 inside the message, else its size (over the channel).
            # Large buffers whose memory cannot change travel zero-copy; all others are
            # copied into the message, so the caller may change them once send() returns.
            layout = []
            for m in raws:
                if m.nbytes >= _ZERO_COPY_MIN and self._zc_ok and _cannot_change(m):
                    zc.append(m)
                    layout.append(m.nbytes)
                else:
                    inline.append(m)
                    layout.append(-1)
        descs = [(i, n, shape, dt) for (i, _, n, shape, dt, _) in dev] if dev else None
        head = pickle.dumps((_wire.CHANNEL, self._key, self._send_seq, layout, descs, len(objs)), _wire.PROTOCOL)
        if dev or zc:
            self._open_direct("send")
        self._send_seq += 1
        inline.insert(0, payload)
        _core.send(self._remote._ref, self._remote._idx, head, inline)
        if not dev and not zc:
            return _NO_OPS
        dev = dev or ()
        ops = []
        sptr = stream.ptr if stream is not None and hasattr(stream, "ptr") else (stream or 0)
        link = self._link
        for (i, ptr, n, shape, dt, s) in dev:
            ops.append(link.post_send(ptr, n, objs[i], sptr or s))
        for m in zc:
            addr, n = _core.buffer_address(m, False)
            ops.append(link.post_send(addr, n, m, 0))
        # The transfers keep their buffers alive until done. A device array must not be
        # changed before its transfer is done: the result, a Future-like handle, says when
        # (get() in a coroutine), as does any later message from the receiver.
        return _SendHandle(ops)

    # -- receiving (recv() is ChannelCore's: a pickled message, or buffers given, come here)
    def _recv_slow(self, *bufs, stream=None):
        self._check_open("recv")
        sptr = stream.ptr if stream is not None and hasattr(stream, "ptr") else (stream or 0)
        infos = []
        for k, b in enumerate(bufs):
            info = _device_info(b)
            if info is None:
                raise TypeError(f"Channel.recv: buffer {k} is not a device array (no __cuda_array_interface__)")
            infos.append(info)
        seq = self._recv_seq
        while seq not in self._inbox:
            self._waiter = getcurrent()
            try:
                coroutines.suspend("Channel.recv()")
            finally:
                self._waiter = None
            self._check_open("recv")
        t, parts = self._inbox[seq]
        if t is None:  # a fast-format message: its value
            if bufs:
                raise ValueError(f"Channel.recv: {len(bufs)} device buffer(s) given, but the message holds "
                                 "no device array")
            del self._inbox[seq]
            self._recv_seq += 1
            return parts
        _, _, _, layout, descs, nobjs = t
        # Everything is checked before the message is taken and before any receive is
        # posted: a transfer posted into a wrong buffer would be truncated (fatal) or
        # take the data of the next message.
        if bufs and not descs:
            raise ValueError(f"Channel.recv: {len(bufs)} device buffer(s) given, but the message holds "
                             "no device array")
        descs = descs or ()
        if bufs and len(bufs) != len(descs):
            raise ValueError(f"Channel.recv: {len(bufs)} device buffer(s) given, but the message holds "
                             f"{len(descs)} device array(s)")
        for k, (i, n, shape, dt) in enumerate(descs if bufs else ()):
            if infos[k][1] != n or infos[k][3] != dt:
                import numpy
                raise ValueError(f"Channel.recv: buffer {k} holds {infos[k][1]} bytes of {numpy.dtype(infos[k][3])}, "
                                 f"but the array sent has {n} bytes of {numpy.dtype(dt)} (shape {shape})")
        layout = layout or ()
        if (descs or any(size >= 0 for size in layout)) and not getattr(getcurrent(), "_ck_coro", False):
            raise RuntimeError("Channel.recv() would block outside a coroutine: call it from the main function "
                               "or from an entry method decorated with @coro")
        cupy = None
        if descs and not bufs:
            import cupy
        if descs or any(size >= 0 for size in layout):
            self._open_direct("recv")
        del self._inbox[seq]
        self._recv_seq += 1
        payload = parts[0]
        if not layout and not descs:  # host objects only, all inside the message
            objs = pickle.loads(payload)
            return objs[0] if nobjs == 1 else tuple(objs)
        # Each receive keeps its buffer alive until done (its Request), whatever happens here.
        ops, out_dev = [], {}
        link = self._link
        for k, (i, n, shape, dt) in enumerate(descs):
            if bufs:
                b, ptr, s = bufs[k], infos[k][0], infos[k][4]
            else:
                b = cupy.empty(shape, dtype=dt)
                ptr, s = b.data.ptr, 0
            ops.append(link.post_recv(ptr, n, b, sptr or s))
            out_dev[i] = b
        inline = iter(parts[1:])
        bufs_all = []
        for size in layout:  # host buffers over the channel come after the device arrays
            if size < 0:
                bufs_all.append(next(inline))
                continue
            b = bytearray(size)
            addr, _ = _core.buffer_address(b, True)
            ops.append(link.post_recv(addr, size, b, 0))
            bufs_all.append(b)
        waitall(ops)
        host = pickle.loads(payload, buffers=bufs_all)
        objs = list(host)
        for i, b in out_dev.items():
            objs[i] = b
        return objs[0] if nobjs == 1 else tuple(objs)

    # -- the buffer forms: only the bytes travel, matched in order with the peer's
    def isend(self, buf, stream=None):
        """Sends the bytes of `buf` (host: NumPy array, bytearray, memoryview...; device:
        CuPy/Numba/PyTorch array, any __cuda_array_interface__ or __dlpack__ object) into
        the peer's next irecv/recv_into; no message travels. Returns a Request: wait()
        (in a coroutine) or test(); `buf` must not change until it is done. `stream`:
        the transfer waits for the work queued on it (default for CuPy arrays: the
        current stream)."""
        link = self._raw
        if link is None:
            link = self._open_raw("isend")
        return link.isend(buf, stream)

    def irecv(self, buf, stream=None):
        """Posts a receive of the peer's next isend into `buf` (writable, at least as
        large as the data; a smaller one ends the job naming both sizes). Post receives
        ahead of the peer's sends: the data then lands straight in `buf`. Returns a
        Request."""
        link = self._raw
        if link is None:
            link = self._open_raw("irecv")
        return link.irecv(buf, stream)

    def recv_into(self, buf, stream=None):
        """irecv(buf) and wait for it (in a coroutine); returns buf."""
        link = self._raw
        if link is None:
            link = self._open_raw("recv_into")
        link.irecv(buf, stream).wait()
        return buf

    def send_from(self, buf, stream=None):
        """isend(buf) and wait (in a coroutine) until buf may change."""
        link = self._raw
        if link is None:
            link = self._open_raw("send_from")
        link.isend(buf, stream).wait()

    # -- stream-ordered forms of the buffer forms (CkChannel::send_enqueue / recv_enqueue)
    def send_enqueue(self, buf, stream):
        """Enqueues a send of buf on the CUDA `stream` (a CuPy/Numba stream with .ptr, an
        int cudaStream_t, or None: the legacy default stream): it leaves once the work
        queued on the stream before it has finished, and work queued after it waits until
        buf may be reused. The host never waits for the GPU. It pairs with the peer's next
        irecv/recv_into/recv_enqueue (the buffer forms' order). Returns a Request (done
        when the transfer is). The first one waits (in a coroutine) until the peer's end
        has opened."""
        link = self._raw
        if link is None:
            link = self._open_raw("send_enqueue")
        if not _core.link_ready(link) and _core.stream_ops_unavailable() is None:
            self._wait_ready(link, "Channel.send_enqueue")
        return _core.link_enqueue(link, buf, stream, False)

    def recv_enqueue(self, buf, stream):
        """Enqueues a receive into buf on the CUDA `stream`: it is posted once the work
        queued before it has finished, and work queued after it sees the data. Returns a
        Request."""
        link = self._raw
        if link is None:
            link = self._open_raw("recv_enqueue")
        return _core.link_enqueue(link, buf, stream, True)

    def _wait_ready(self, link, what):
        if not getattr(getcurrent(), "_ck_coro", False):
            raise RuntimeError(f"{what} waits for the peer's end of the channel to open, which needs a coroutine: "
                               "call it from the main function or from an entry method decorated with @coro")
        # The peer's setup message arrives through the scheduler: give it turns.
        from .futures import Future
        while not _core.link_ready(link):
            self._check_open(what.split(".")[1])
            f = Future()
            f.send(None)
            f.get()

    def waitall(self):
        """Waits (in a coroutine) until every transfer posted on this channel is done."""
        for link in (self._raw, self._link):
            if link is not None:
                link.waitall()

    def ready(self):
        """A message is here: recv() will not wait (charm.iwait works on channels)."""
        return self._recv_seq in self._inbox

    def _direct_pending(self):
        """A message here whose data follows over the core's channel."""
        return any(t is not None and (t[4] or (t[3] and any(size >= 0 for size in t[3])))
                   for t, _ in self._inbox.values())

    def _arrived(self, seq, item):
        t = item[0]
        if t is not None and not self._direct and (t[4] or (t[3] and any(size >= 0 for size in t[3]))):
            _pin(self._chare)  # a transfer over the core's channel follows: stay here for it
        self._inbox[seq] = item
        if self._waiter is not None:
            w, self._waiter = self._waiter, None
            coroutines.resume(w)


_collected = []  # core channel ends of channels collected off the PE's thread


def _close_collected():
    while _collected and _core.on_pe_thread():
        _collected.pop().close()


def channel_message(obj, t, parts):
    """A pickled channel message for element `obj`: `parts` are its payload and buffers
    (views of the message, which they keep alive)."""
    _deliver(obj, t[1], t[2], (t, parts))  # t[1]: the sender's (collection, index, port, n)


def channel_fast(obj, wire, seq, value):
    """A fast-format channel message that _core found no open channel for."""
    _deliver(obj, _core.fw_loads(wire), seq, (None, value))


def _deliver(obj, key, seq, item):
    ch = obj._ck_channels.get(key)
    if ch is None:
        if key[3] < obj._ck_chan_count.get(key[:3], 0):
            return  # for a channel this end has closed: dropped
        obj._ck_early.setdefault(key, {})[seq] = item  # before this end opens
        return
    ch._arrived(seq, item)


def _freeze(item):
    t, parts = item
    if t is None:  # a fast message's value: picklable as it is
        return item
    return t, [pickle.PickleBuffer(p) for p in parts]


def freeze_early(early):
    """The messages of channels not opened yet, picklable (they travel with the element)."""
    return {key: {seq: _freeze(item) for seq, item in q.items()} for key, q in early.items()}


def pinned(obj):
    """The element's channels that used the core's channel (they keep it on its PE)."""
    return [ch for ch in list(obj._ck_channels.values())
            if ch._direct or ch._link is not None or ch._raw is not None or ch._direct_pending()]
