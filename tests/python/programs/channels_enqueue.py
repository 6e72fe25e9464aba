# Stream-ordered channel transfers from Python (Channel.send_enqueue / recv_enqueue) on host
# memory and the legacy default stream, in call order with isend/irecv. In a process where
# stream operations cannot work (no GPU), both raise RuntimeError naming the reason, and
# nothing is posted (the buffer forms go on in order). argv[1]: host, errors.
import numpy as np

from ucharm import charm, Chare, Array, Channel, _core, coro, waitall


def expect(exc_type, text, fn, *args):
    try:
        fn(*args)
    except exc_type as e:
        assert text in str(e), f"{exc_type.__name__} without {text!r}: {e}"
        return str(e)
    raise AssertionError(f"{fn} did not raise {exc_type.__name__} ({text})")


class End(Chare):
    def __init__(self):
        self.peer = self.thisProxy[1 - self.thisIndex[0]]
        self.ch = Channel(self, remote=self.peer)

    @coro
    def run(self, case):
        me = self.thisIndex[0]
        why = _core.stream_ops_unavailable()
        ch = self.ch
        if case == "errors":
            expect(TypeError, "stream= takes a CUDA stream", ch.recv_enqueue, np.zeros(4), "s0")
            expect(ValueError, "read-only", ch.recv_enqueue, b"abcd", None)
            expect(TypeError, "not a buffer", ch.send_enqueue, 3.5, None)
            return "ok"
        if why is not None:  # no GPU here: a clear error, nothing posted
            expect(RuntimeError, "stream-ordered transfers are not available", ch.send_enqueue, np.zeros(4), None)
            expect(RuntimeError, "stream-ordered transfers are not available", ch.recv_enqueue, np.zeros(4), None)
            a = np.zeros(2)
            r = ch.irecv(a)
            ch.isend(np.full(2, me + 1.0)).wait()
            r.wait()
            assert list(a) == [2.0 - me, 2.0 - me], a
            if me == 0:  # PE 0's output only: another PE's line may come after main's "ok"
                print(f"stream-ordered transfers unavailable: {why}")
            return "ok"
        n = 1000
        if me == 0:
            reqs = [ch.isend(np.arange(n, dtype=np.int64)),
                    ch.send_enqueue(np.arange(n, dtype=np.int64) * 2, None),
                    ch.isend(np.arange(n, dtype=np.int64) * 3),
                    ch.send_enqueue(np.arange(n, dtype=np.int64) * 4, 0)]
            waitall(reqs)
            return "ok"
        bufs = [np.zeros(n, dtype=np.int64) for _ in range(4)]
        reqs = [ch.recv_enqueue(bufs[0], None), ch.irecv(bufs[1]), ch.recv_enqueue(bufs[2], 0),
                ch.irecv(bufs[3])]
        waitall(reqs)
        for k, b in enumerate(bufs):
            assert np.array_equal(b, np.arange(n, dtype=np.int64) * (k + 1)), k
        return "ok"


def main(args):
    pair = Array(End, 2)
    charm.awaitCreation(pair)
    got = pair.run(args[1], ret=True).get()
    assert got == ["ok", "ok"], got
    print("ok")
    charm.exit()


charm.start(main)
