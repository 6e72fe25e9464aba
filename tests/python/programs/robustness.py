# Defects found by trying the package as a user would (issue 16), one case each:
#   when_default      @when('self.x == p') where p has a default value
#   undecodable       a remote exception that pickles but cannot be unpickled
#   unpicklable       a remote exception that cannot be pickled at all
#   thread_call       a threading.Thread calling into the runtime
#   bad_buffer        _core.send with a buffer that cannot be given contiguously, many times
#   exit_flush DIR    charm.exit: every PE runs its atexit handlers and its open files reach
#                     the disk (written, never flushed or closed)
#   abort DIR         charm.abort: no atexit handler runs (the job ends at once, code 1)
import atexit
import os
import sys
import threading

import numpy as np

from ucharm import charm, Chare, Group, Array, Future, coro, when, _core


class Stepper(Chare):
    def __init__(self):
        self.x = 0
        self.seen = []

    @when("self.x == p")
    def step(self, p=0, tag="default"):
        self.seen.append((p, tag))
        self.x += 1

    def log(self):
        return self.seen


class NeedsTwo(Exception):
    """Pickles (args is one string) but cannot be unpickled: __init__ wants two."""

    def __init__(self, a, b):
        super().__init__(f"needs-two {a}/{b}")


class HoldsLock(Exception):
    def __init__(self, text):
        super().__init__(text)
        self.lock = threading.Lock()  # cannot be pickled


class Thrower(Chare):
    def undecodable(self):
        raise NeedsTwo("left", "right")

    def unpicklable(self):
        raise HoldsLock("holds-a-lock")


class Writer(Chare):
    """One per PE: writes a file it never flushes or closes, registers an atexit handler."""

    def write(self, folder):
        pe = charm.myPe()
        self.f = open(os.path.join(folder, f"pe{pe}.txt"), "w")  # buffered, left open
        self.f.write(f"written on PE {pe}\n")
        path = os.path.join(folder, f"atexit{pe}.txt")

        def at_exit():
            with open(path, "w") as g:
                g.write("atexit ran\n")
        atexit.register(at_exit)


def vm_size_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


def main(args):
    case = args[1]
    if case == "when_default":
        s = Array(Stepper, 1)
        s[0].step(2, "third")
        s[0].step(p=1, tag="second")
        s[0].step()  # p defaults to 0: runs first, then releases the others
        log = s[0].log(ret=True).get()
        assert log == [(0, "default"), (1, "second"), (2, "third")], log
    elif case in ("undecodable", "unpicklable"):
        t = Chare(Thrower, onPE=charm.numPes() - 1)
        try:
            getattr(t, case)(ret=True).get()
            raise AssertionError("get() did not raise")
        except AssertionError:
            raise
        except Exception as e:
            text = str(e)
            want = "NeedsTwo" if case == "undecodable" else "HoldsLock"
            want_text = "needs-two left/right" if case == "undecodable" else "holds-a-lock"
            assert want in text and want_text in text, text
            assert "Traceback" in text and f"in {case}" in text, text  # the remote traceback
            print("raised:", type(e).__name__)
    elif case == "thread_call":
        g = Group(Writer)
        errors = []

        def other_thread():
            for call in (lambda: Future(), lambda: g[0].write("/nonexistent"), lambda: charm.exit(3)):
                try:
                    call()
                    errors.append(None)
                except RuntimeError as e:
                    errors.append(str(e))
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert all(e is not None and "thread" in e and "charm.start" in e for e in errors), errors
        print("thread:", errors[0])
    elif case == "bad_buffer":
        s = Array(Stepper, 1)
        charm.awaitCreation(s)
        big = np.zeros(32 << 20, dtype=np.uint8)  # 32 MiB
        strided = big[::2]                        # 16 MiB, not contiguous
        before = vm_size_kib()
        for _ in range(64):
            try:
                _core.send(s._ref, (0,), b"x", [strided])
                raise AssertionError("a non-contiguous buffer was accepted")
            except (BufferError, ValueError):
                pass
        grown = (vm_size_kib() - before) // 1024
        assert grown < 256, f"the address space grew by {grown} MiB over 64 failed sends"
    elif case == "exit_flush":
        folder = args[2]
        g = Group(Writer)
        g.write(folder, awaitable=True).get()
        print("exiting")
        charm.exit(0)
    elif case == "abort":
        folder = args[2]
        g = Group(Writer)
        g.write(folder, awaitable=True).get()
        charm.abort("aborting on purpose")
    print("ok")
    charm.exit()


charm.start(main)
