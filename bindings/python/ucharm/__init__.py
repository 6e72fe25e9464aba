"""ucharm: charm4py's API over the ucharm runtime (C++, UCX).

    from ucharm import charm, Chare, Group, Array, Reducer, Future, coro, Channel

    def main(args):
        ...
        charm.exit()

    charm.start(main)

Run with `python3 prog.py` (one PE), `ucharmrun -n 4 python3 prog.py` or
`mpirun -np 4 python3 prog.py`.
"""
import os as _os


def _preload_ucx():
    # UCX from the libucx wheel: its libraries are loaded (RTLD_GLOBAL) before the
    # extension, whose libraries then find them by soname. A build against another UCX
    # (UCHARM_UCX_ROOT) finds it through its RPATH instead.
    if _os.environ.get("UCHARM_NO_UCX_PRELOAD"):
        return
    try:
        import libucx
    except ImportError:
        return
    libucx.load_library()


_preload_ucx()

from .charm import charm, CharmRemote  # noqa: E402  (imports the package's other modules)
from .chare import Chare, Group, Array, ArrayMap  # noqa: E402
from .channel import Channel, Request, waitall  # noqa: E402
from .coroutines import coro, threaded, when  # noqa: E402
from .futures import Future  # noqa: E402
from .window import Window  # noqa: E402
from .options import Options  # noqa: E402
from .readonly import readonlies  # noqa: E402
from .reduction import Reducer  # noqa: E402
from . import ray  # noqa: E402  (charm4py's Ray layer: `from ucharm import charm, ray`)
from . import wait  # noqa: E402  (charm4py's @when condition kinds: `from ucharm import wait`)
from .chare import register  # noqa: E402

__all__ = ["charm", "Chare", "Group", "Array", "ArrayMap", "Reducer", "Future", "Channel", "Request",
           "waitall", "Window", "coro", "threaded", "when", "CharmRemote", "readonlies", "Options", "ray",
           "wait", "register"]
