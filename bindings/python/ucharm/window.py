"""One-sided windows between two chares (ck::CkWindow): each end exposes a buffer of its
own (host or CUDA memory) and reads and writes the other's, whose owner takes no part.
Windows pair as channels do: both create one, Window(self, remote=proxy_of_the_other,
port=p), and the n-th window each side opens on a port is one window. Every operation
returns a Request (wait() in a coroutine, test()); the core's window end stays on the
element's home PE, so a window pins both elements there.

Ordering (the core's): a put's Request says only that its source may be reused; the data
is at the peer once a flush issued after it is done. put_notify needs no flush: the
peer's notification count rises only after the data is in its buffer, so once
wait_notify(n) returns (or notifications() reaches n) the first n notified puts' data is
visible there.
"""

from . import _core, _wire, proxy

_PORTS = 256


class Window:
    def __init__(self, chare, remote, port=0):
        self._end = None
        if not isinstance(remote, proxy.ElementProxy):
            raise TypeError("Window(self, remote=...): remote must be the proxy of one element")
        if not isinstance(port, int) or not 0 <= port < _PORTS:
            raise ValueError(f"Window(..., port={port!r}): ports are 0 to {_PORTS - 1}")
        home = _core.home_pe(chare._ck_ptr)
        if home != _core.my_pe():
            raise RuntimeError(f"Window(): a window's core end stays on its element's home PE, and this element "
                               f"({type(chare).__name__} {chare.thisIndex}) has migrated (PE {_core.my_pe()}, "
                               f"home PE {home})")
        self.remote = remote
        base = ("window", _core.ref_id(remote._ref), _wire.norm(remote._idx), port)
        nth = chare._ck_chan_count.get(base, 0)
        chare._ck_chan_count[base] = nth + 1
        sub = port | ((nth % (1 << 24)) << 8)
        self._end = _core.window_open(chare._ck_ptr, remote._ref, remote._idx, sub)
        if chare._ck_kind == "array":
            _core.set_migratable(chare._ck_ptr, False)

    def expose(self, buf):
        """Makes `buf` (writable, C-contiguous host or device memory) the peer's target,
        once per window; it is held until close(). An end that only writes need not."""
        self._end.expose(buf)

    def put(self, offset, buf):
        """Writes buf's bytes at byte `offset` of the peer's buffer. Request: buf may change."""
        return self._end.put(offset, buf, False)

    def put_notify(self, offset, buf):
        """put, then the peer's notification count +1 once the data is there."""
        return self._end.put(offset, buf, True)

    def get(self, offset, buf):
        """Reads len(buf) bytes at `offset` of the peer's buffer into buf."""
        return self._end.get(offset, buf)

    def fetch_add(self, offset, value):
        """Adds to the 8-byte word at `offset` (host memory at the peer); wait() gives
        the old word."""
        return self._end.fetch_add(offset, value)

    def compare_swap(self, offset, expected, desired):
        """Writes `desired` where the word equals `expected`; wait() gives the old word."""
        return self._end.compare_swap(offset, expected, desired)

    def flush(self):
        """Done once every operation issued before is complete at the peer."""
        return self._end.flush()

    def notifications(self):
        """Notified puts the peer has made into this end so far."""
        return self._end.notifications()

    def on_notify(self, count):
        """A Request done once notifications() reaches `count`."""
        return self._end.on_notify(count)

    def wait_notify(self, count):
        """Waits (in a coroutine) until notifications() reaches `count`; returns it."""
        if self._end.notifications() >= count:
            return self._end.notifications()
        return self._end.on_notify(count).wait()

    def ready(self):
        """The peer has exposed its buffer (its setup is here)."""
        return self._end.ready()

    @property
    def peer_bytes(self):
        return self._end.peer_bytes()

    def close(self):
        """Closes this end (deregisters its buffer): only once the peer no longer uses it
        (after a flush and a message); operations not sent yet are dropped."""
        if self._end is not None:
            self._end.close()
