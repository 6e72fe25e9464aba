"""charm4py's `charm4py.threads` names, for programs that import them from there."""
from .charm import Future, coro, threaded  # noqa: F401
