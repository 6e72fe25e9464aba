"""charm4py's readonlies: attributes set on PE 0 that every PE has before its elements
of a collection created after that run. The values set while the main function starts
travel with the core's readonly value (charm.py's hooks); later ones are flushed here
before anything else leaves PE 0.
"""
from . import _core
from . import charm as runtime  # cycle: used at call time


class _Readonlies:
    """charm4py's readonlies (`from ucharm import readonlies as ro`): attributes set on PE 0
    in the main function before chares are created; every PE has them before its first
    chare of a collection created after that is constructed."""

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if _core.my_pe() == 0:
            _ro_dirty.add(name)
            _core.set_readonlies_pending()


readonlies = _Readonlies()
_ro_dirty = set()


_in_start = False  # PE 0's start hook is running: the readonly values go with the core's


def flush():
    # Called before anything leaves PE 0 while values set after start-up are pending (the
    # ones set before travel with the core's readonly values). They go to every PE twice:
    # point to point (links keep order, so a message PE 0 sends next arrives after them)
    # and along the broadcast tree (so does a broadcast PE 0 sends next); a version number
    # makes the second copy a no-op.
    global _ro_version
    if _ro_dirty and _core.my_pe() == 0 and runtime.charm._remote is not None and not _in_start:
        values = {k: readonlies.__dict__[k] for k in _ro_dirty}
        _ro_dirty.clear()
        _ro_version += 1
        for pe in range(_core.num_pes()):
            runtime.charm._remote[pe]._ck_readonlies(values, _ro_version)
        runtime.charm._remote._ck_readonlies(values, _ro_version)


_ro_version = 0  # PE 0: updates sent; other PEs: the newest applied


def apply(values, version):
    """Other PEs: values flushed by PE 0 (each arrives twice; the older copy is ignored)."""
    global _ro_version
    if _core.my_pe() != 0 and version > _ro_version:
        _ro_version = version
        readonlies.__dict__.update(values)
