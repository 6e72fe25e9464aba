"""ucharm.ray: Ray's core API (charm4py's `charm4py.ray`), `from ucharm import charm, ray`:

    @ray.remote
    def f(x): ...

    def main(args):
        ray.init()
        print(ray.get([f.remote(i) for i in range(10)]))
        exit()

    charm.start(main)

What it does and how: api.py.
"""
from .api import (init, is_initialized, shutdown, remote, method, get, put, wait,  # noqa: F401
                  ObjectRef, ActorHandle, GetTimeoutError)

__all__ = ["init", "is_initialized", "shutdown", "remote", "method", "get", "put", "wait", "ObjectRef",
           "ActorHandle", "GetTimeoutError"]
