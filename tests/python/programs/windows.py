# One-sided windows from Python (ucharm.Window over ck::CkWindow), host memory: put, get,
# put_notify with wait_notify, fetch_add, compare_swap, flush; errors raised in Python and
# an offset past the peer's buffer (ValueError once the peer's size is known). argv[1]: ops,
# errors, out_of_range.
import numpy as np

from ucharm import charm, Chare, Array, Future, Window, coro

WORDS = 64


def expect(exc_type, text, fn, *args):
    try:
        fn(*args)
    except exc_type as e:
        assert text in str(e), f"{exc_type.__name__} without {text!r}: {e}"
        return
    raise AssertionError(f"{fn} did not raise {exc_type.__name__} ({text})")


class End(Chare):
    def __init__(self):
        me = self.thisIndex[0]
        self.peer = self.thisProxy[1 - me]
        self.win = Window(self, remote=self.peer)
        self.buf = np.arange(WORDS, dtype=np.int64) + 1000 * me  # the peer reads and writes it
        self.win.expose(self.buf)
        self.checked = Future()

    def check(self):
        self.checked.send(None)

    @coro
    def run(self, case):
        return getattr(self, "case_" + case)(self.thisIndex[0])

    def case_ops(self, me):
        w = self.win
        if me == 0:
            out = np.zeros(16, dtype=np.int64)
            assert w.get(0, out).wait() == 128
            assert np.array_equal(out, np.arange(16) + 1000), out
            w.put_notify(8 * 16, np.full(4, 7, dtype=np.int64))
            w.put_notify(8 * 20, np.full(4, 8, dtype=np.int64))
            assert w.fetch_add(8 * 60, 5).wait() == 1060
            assert w.compare_swap(8 * 61, 1061, 42).wait() == 1061
            assert w.compare_swap(8 * 61, 0, 9).wait() == 42  # no swap: the word is 42
            w.put(8 * 30, np.full(2, -1, dtype=np.int64))
            w.flush().wait()  # every operation above is complete at the peer
            self.peer.check()
            return "ok"
        assert w.wait_notify(2) >= 2
        assert list(self.buf[16:24]) == [7] * 4 + [8] * 4, self.buf[16:24]
        self.checked.get()
        assert self.buf[60] == 1065 and self.buf[61] == 42, (self.buf[60], self.buf[61])
        assert list(self.buf[30:32]) == [-1, -1] and self.buf[29] == 1029 and self.buf[32] == 1032
        assert w.notifications() == 2 and w.peer_bytes == 8 * WORDS
        return "ok"

    def case_errors(self, me):
        w = self.win
        expect(RuntimeError, "exposed a buffer already", w.expose, np.zeros(4))
        expect(TypeError, "not a buffer", w.put, 0, "text")
        expect(ValueError, "read-only", w.get, 0, b"abcdefgh")
        w2 = Window(self, remote=self.peer, port=1)
        ro = np.zeros(4)
        ro.flags.writeable = False
        expect(ValueError, "read-only", w2.expose, ro)
        w2.close()
        expect(RuntimeError, "closed window", w2.put, 0, np.zeros(1))
        return "ok"

    def case_out_of_range(self, me):
        w = self.win
        w.get(0, np.zeros(1, dtype=np.int64)).wait()  # done: the peer's size is known here
        expect(ValueError, "reaches past the end of the peer's 512-byte buffer", w.put, 8 * WORDS - 8,
               np.zeros(2, dtype=np.int64))
        expect(ValueError, "reaches past the end", w.get, 8 * WORDS, np.zeros(1, dtype=np.int64))
        expect(ValueError, "reaches past the end", w.put_notify, 1 << 62, np.zeros(1, dtype=np.int64))
        return "ok"


def main(args):
    pair = Array(End, 2)
    charm.awaitCreation(pair)
    got = pair.run(args[1], ret=True).get()
    assert got == ["ok", "ok"], got
    print("ok")
    charm.exit()


charm.start(main)
