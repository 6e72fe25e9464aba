"""What travels: every message head is a pickle (protocol 5) whose first field says its
kind; contiguous buffers go out of band (_core.build copies them into the message once).
"""
import pickle

PROTOCOL = pickle.HIGHEST_PROTOCOL if pickle.HIGHEST_PROTOCOL >= 5 else 5

# ---- message kinds (first field of every message head) ----------------------------------
CALL, CHANNEL = 0, 1


def dumps(obj):
    """(pickle, out-of-band buffers) of obj; non-contiguous buffers stay in band."""
    bufs = []

    def oob(pb):
        try:
            bufs.append(pb.raw())
            return False
        except BufferError:
            return True
    return pickle.dumps(obj, PROTOCOL, buffer_callback=oob), bufs


def dumps_checked(obj, what):
    try:
        return dumps(obj)
    except Exception as e:
        raise TypeError(f"{what}: an argument cannot be pickled: {e}") from e


def dumps_call(t, cls, name):
    """The pickle of a call and its out-of-band buffers."""
    bufs = []
    try:
        head = pickle.dumps(t, PROTOCOL, buffer_callback=bufs.append)
    except Exception as e:
        raise TypeError(f"{clsname(cls)}.{name}: an argument cannot be pickled: {e}") from e
    if bufs:
        try:
            bufs = [b.raw() for b in bufs]
        except BufferError:  # a non-contiguous buffer: in band
            head, bufs = dumps(t)
    return head, bufs


def clsname(cls):
    return cls.__name__ if cls is not None else "?"


def norm(idx):
    """An element's key on its PE: None (singleton), the PE (group) or the index tuple."""
    if idx is None:
        return None
    if idx[0] == "pe":
        return idx[1]
    return idx
