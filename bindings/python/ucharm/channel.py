"""Channels: two-way, in-order streams of objects between two chares. Host objects
travel pickled inside ordinary messages; device arrays and large read-only host buffers
travel over a ck::CkChannel (UCX, zero-copy), each transfer completing into a futures.Op.
"""
import pickle
import sys

from greenlet import getcurrent

from . import _core, _wire, coroutines, futures, proxy

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
        return all(op.done for op in self.ops)

    def get(self):
        for op in self.ops:
            op.wait("waiting for a Channel.send")


_NO_OPS = _SendHandle([])


class Channel:
    """A two-way, in-order stream of objects between two chares: both create it,
    Channel(self, remote=proxy_of_the_other); send(*objs) and recv() (in a coroutine).
    CuPy arrays (anything with __cuda_array_interface__) among the objects go GPU to GPU
    over the Channel API; large host buffers go zero-copy the same way."""

    def __init__(self, chare, remote, port=0):
        if not isinstance(remote, proxy.ElementProxy):
            raise TypeError("Channel(self, remote=...): remote must be the proxy of one element")
        self._chare = chare
        self._remote = remote
        self.remote = remote  # charm4py's public name
        my_key = chare._ck_self._idx
        peer_base = (_core.ref_id(remote._ref), _wire.norm(remote._idx), port)
        # Several channels between the same two chares pair up in creation order: the n-th
        # one each side opens is one channel (sub-id n, counted per port).
        nth = chare._ck_chan_count.get(peer_base, 0)
        chare._ck_chan_count[peer_base] = nth + 1
        sub = port * 1024 + nth
        if nth >= 1024:
            raise ValueError(f"more than 1024 channels to {remote!r} on port {port}")
        self._port = sub
        self._key = (_core.ref_id(chare.thisProxy._ref), _wire.norm(my_key), sub)  # how the peer names us
        peer_key = (peer_base[0], peer_base[1], sub)
        self._ch = _core.channel_open(chare._ck_ptr, remote._ref, remote._idx, sub)
        self._send_seq = 0
        self._recv_seq = 0
        self._inbox = {}
        self._waiter = None
        chare._ck_channels[peer_key] = self
        for seq, item in chare._ck_early.pop(peer_key, {}).items():
            self._inbox[seq] = item

    def send(self, *objs, stream=None):
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
            # Large read-only buffers (read-only arrays) travel zero-copy: nobody can change
            # them before the transfer is done. Writable ones are copied into the message,
            # so the caller may reuse them as soon as send() returns.
            layout = []
            for m in raws:
                if m.nbytes >= _ZERO_COPY_MIN and m.readonly:
                    zc.append(m)
                    layout.append(m.nbytes)
                else:
                    inline.append(m)
                    layout.append(-1)
        descs = [(i, n, shape, dt) for (i, _, n, shape, dt, _) in dev] if dev else None
        head = pickle.dumps((_wire.CHANNEL, self._key, self._send_seq, layout, descs, len(objs)), _wire.PROTOCOL)
        self._send_seq += 1
        inline.insert(0, payload)
        _core.send(self._remote._ref, self._remote._idx, head, inline)
        if not dev and not zc:
            return _NO_OPS
        dev = dev or ()
        ops = []
        sptr = stream.ptr if stream is not None and hasattr(stream, "ptr") else (stream or 0)
        for (i, ptr, n, shape, dt, s) in dev:
            op = futures.Op(keep=objs[i])
            _core.channel_send(self._ch, ptr, n, op.fid, sptr or s)
            ops.append(op)
        for m in zc:
            op = futures.Op(keep=m)
            addr, n = _core.buffer_address(m, False)
            _core.channel_send(self._ch, addr, n, op.fid, 0)
            ops.append(op)
        # The transfers keep their buffers alive until done. A device array must not be
        # changed before its transfer is done: the result, a Future-like handle, says when
        # (get() in a coroutine), as does any later message from the receiver.
        return _SendHandle(ops)

    def recv(self, *bufs, stream=None):
        sptr = stream.ptr if stream is not None and hasattr(stream, "ptr") else (stream or 0)
        # Device buffers given: their receives are posted now, before the message that
        # describes the arrays arrives (the channel's counters match them to the sends in
        # order), so the data moves as soon as it is sent. The description is checked after.
        posted = []
        for k, b in enumerate(bufs):
            info = _device_info(b)
            if info is None:
                raise TypeError(f"Channel.recv: buffer {k} is not a device array (no __cuda_array_interface__)")
            op = futures.Op(keep=b)
            _core.channel_recv(self._ch, info[0], info[1], op.fid, sptr or info[4])
            posted.append((info, op))
        seq = self._recv_seq
        while seq not in self._inbox:
            self._waiter = getcurrent()
            try:
                coroutines.suspend("Channel.recv()")
            finally:
                self._waiter = None
        t, msg = self._inbox.pop(seq)
        self._recv_seq += 1
        _, _, _, layout, descs, nobjs = t
        head, parts = _core.parse(msg, False)
        payload = parts[0]
        if layout is None and descs is None:  # host objects only, all inside the message
            if bufs:
                raise ValueError(f"Channel.recv: {len(bufs)} device buffer(s) given, but the message holds "
                                 "no device array")
            objs = pickle.loads(payload)
            return objs[0] if nobjs == 1 else tuple(objs)
        inline = parts[1:]
        layout = layout or ()
        descs = descs or ()
        if bufs and len(bufs) != len(descs):
            raise ValueError(f"Channel.recv: {len(bufs)} device buffer(s) given, but the message holds "
                             f"{len(descs)} device array(s)")
        ops, out_dev = [op for _, op in posted], {}
        for k, (i, n, shape, dt) in enumerate(descs):
            if bufs:
                b, info = bufs[k], posted[k][0]
                if info[1] != n or info[3] != dt:
                    import numpy
                    raise ValueError(f"Channel.recv: buffer {k} holds {info[1]} bytes of {numpy.dtype(info[3])}, "
                                     f"but the array sent has {n} bytes of {numpy.dtype(dt)} (shape {shape})")
            else:
                import cupy
                b = cupy.empty(shape, dtype=dt)
                op = futures.Op(keep=None)
                _core.channel_recv(self._ch, b.data.ptr, n, op.fid, sptr)
                ops.append(op)
            out_dev[i] = b
        bufs_all, it = [], iter(inline)
        for size in layout:  # host buffers over the channel come after the device arrays
            if size < 0:
                bufs_all.append(next(it))
                continue
            b = bytearray(size)
            addr, _ = _core.buffer_address(b, True)
            op = futures.Op(keep=None)
            _core.channel_recv(self._ch, addr, size, op.fid, 0)
            ops.append(op)
            bufs_all.append(b)
        for op in ops:
            op.wait("Channel.recv")
        host = pickle.loads(payload, buffers=bufs_all)
        objs = list(host)
        for i, b in out_dev.items():
            objs[i] = b
        return objs[0] if nobjs == 1 else tuple(objs)

    def ready(self):
        """A message is here: recv() will not wait (charm.iwait works on channels)."""
        return self._recv_seq in self._inbox

    def _arrived(self, t, msg):
        self._inbox[t[2]] = (t, msg)
        if self._waiter is not None:
            w, self._waiter = self._waiter, None
            coroutines.resume(w)


def channel_message(obj, t, msg):
    key = t[1]  # the sender's (collection, index, port): our name for the channel
    ch = obj._ck_channels.get(key)
    if ch is None:
        obj._ck_early.setdefault(key, {})[t[2]] = (t, msg)
        return
    ch._arrived(t, msg)
