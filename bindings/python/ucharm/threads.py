"""charm4py's `charm4py.threads` names, for programs that import them from there."""
from .coroutines import coro, threaded  # noqa: F401
from .futures import Future  # noqa: F401
