"""charm4py's programming model over the ucharm core: the runtime object (`charm`), the
runtime's group (CharmRemote, `charm.thisProxy`) and the hooks through which _core calls
Python.

How a call travels: `proxy[i].work(x)` pickles (entry name, arguments) with pickle
protocol 5, the contiguous buffers of NumPy arrays and other buffer-protocol objects out
of band; _core.send copies the pickle and the buffers once into a Converse message
addressed to the element's raw entry (the core routes it to the element's PE). There the
core hands the message to _core's invoke hook, which unpickles it, NumPy arrays aliasing
the message, and calls the method. The package's modules:

  coroutines  @coro/@threaded, @when, suspending and resuming greenlets
  futures     Future (channel transfers complete in _core: Request)
  reduction   Reducer, combining contributions
  proxy       element and collection proxies
  chare       Chare, Group, Array, ArrayMap, building an element's object
  _invoke     running entry methods (@when, coroutines, replies, errors, sys.exit)
  channel     Channel
  pool        charm.pool
  readonly    readonlies
  checkpoint  charm.checkpoint, restarting from a checkpoint (+restart DIR)
  options     Options, load-balancing flags
  _wire       message kinds and pickling
"""
import pickle
import sys
import traceback

from greenlet import getcurrent

from . import _core, _wire, coroutines, futures, reduction, proxy, channel, readonly, _invoke
from . import chare, pool, options, migration, sections, checkpoint, timers, topology

# charm4py's names, for programs that import them from here.
from .chare import Chare, Group, Array, ArrayMap  # noqa: E402,F401
from .channel import Channel  # noqa: F401
from .coroutines import coro, threaded, when  # noqa: F401
from .futures import Future  # noqa: F401
from .options import Options  # noqa: F401
from .readonly import readonlies  # noqa: F401
from .reduction import Reducer  # noqa: F401


# ---- the runtime object -----------------------------------------------------------------
def _keep_heap_pad():
    """Contributions, results and messages of a few hundred KiB (pickles, NumPy arrays) are
    allocated and freed for every call; with glibc's defaults each one grows the heap and
    each free gives the memory back, so every such allocation page-faults afresh (most of
    the time of a reduction over 160 KiB arrays). A padding of 16 MiB kept at the heap's
    top (M_TOP_PAD) avoids that. MALLOC_TOP_PAD_ in the environment is left as it is."""
    import os
    import platform
    if "MALLOC_TOP_PAD_" in os.environ or platform.libc_ver()[0] != "glibc":
        return
    try:
        import ctypes
        ctypes.CDLL(None).mallopt(-2, 16 << 20)  # M_TOP_PAD (malloc.h)
    except (OSError, AttributeError):
        pass


class CharmRemote(chare.Chare):
    """The runtime's group (charm.thisProxy): one element per PE."""

    def __init__(self):
        pass

    def updateGlobals(self, values, module_name="__main__"):
        sys.modules[module_name].__dict__.update(values)

    @coro
    def _pool_run(self, func, chunk, items, fut, futs):
        # A coroutine: tasks may themselves wait (nested charm.pool.map, futures).
        if futs is not None:  # one future per item
            for x, f in zip(items, futs):
                try:
                    f.send(func(x))
                except Exception as e:
                    f.send(futures._RemoteException(e, traceback.format_exc()))
            return
        try:
            fut.send((chunk, [func(x) for x in items]))
        except Exception as e:
            fut.send((chunk, futures._RemoteException(e, traceback.format_exc())))

    @coro
    def _pool_task(self, func, args, fut):
        try:
            value = func(*args)
        except Exception as e:
            if fut is None:
                raise
            value = futures._RemoteException(e, traceback.format_exc())
        if fut is not None:
            fut.send(value)

    # ucharm.ray (ray/api.py): tasks, and objects moving to and from their home PE
    @coro
    def _ray_task(self, fn, args, kwargs, oids, num_returns):
        from .ray import api
        api.on_task(fn, args, kwargs, oids, num_returns)

    def _ray_value(self, oid, value):
        from .ray import api
        api.on_value(oid, value)

    def _ray_want(self, oid, pe):
        from .ray import api
        api.on_want(oid, pe)

    def _ck_readonlies(self, values, version):
        readonly.apply(values, version)

    def _ck_checkpoint(self, directory, resume_blob, fut):  # PE 0: charm.checkpoint of another PE
        checkpoint.begin(directory, resume_blob, fut)

    # ckDoneInserting: every PE's count of its insertions, summed on PE 0.
    def _ck_count_inserted(self, coll, call):
        self.thisProxy[0]._ck_inserted_count(coll, call, proxy.inserted_here.get(coll, 0))

    def _ck_inserted_count(self, coll, call, count):  # on PE 0
        self._ck_counts = getattr(self, "_ck_counts", {})
        got = self._ck_counts.setdefault((coll, call), [])
        got.append(count)
        if len(got) == _core.num_pes():
            del self._ck_counts[(coll, call)]
            self._ck_inserted_total(coll, sum(got))

    # Reductions over arrays filled by ckInsert (on PE 0): (collection, round) -> parts.
    def _ck_inserted_total(self, coll, total):
        self._ck_totals = getattr(self, "_ck_totals", {})
        self._ck_totals[coll] = total
        for (c, rnd) in list(getattr(self, "_ck_parts", {})):
            if c == coll:
                self._ck_try_reduce(coll, rnd)

    def _ck_inserted_contribution(self, coll, rnd, index, blob, root):
        self._ck_parts = getattr(self, "_ck_parts", {})
        self._ck_parts.setdefault((coll, rnd), []).append((index, blob, root))
        self._ck_try_reduce(coll, rnd)

    def _ck_section_contribution(self, sid, rnd, total, index, blob, root):
        # Reductions over sections (on the section's root PE): see sections.py.
        self._ck_sparts = getattr(self, "_ck_sparts", {})
        parts = self._ck_sparts.setdefault((sid, rnd), [])
        parts.append((index, blob, root))
        if len(parts) == total:
            del self._ck_sparts[(sid, rnd)]
            self._ck_deliver(parts)

    def _ck_try_reduce(self, coll, rnd):
        total = getattr(self, "_ck_totals", {}).get(coll)
        parts = self._ck_parts.get((coll, rnd), [])
        if total is None or len(parts) < total:
            return
        if len(parts) > total:
            raise RuntimeError(f"a reduction over an inserted array got {len(parts)} contributions, but "
                               f"ckDoneInserting counted {total} elements")
        del self._ck_parts[(coll, rnd)]
        self._ck_deliver(parts)

    def _ck_deliver(self, parts):
        parts.sort(key=lambda p: p[0])
        blob = parts[0][1]
        for _, b, _ in parts[1:]:
            blob = reduction.combine(blob, b)
        target, value, empty = reduction.finish(blob)
        root_pe, root_fid = parts[0][2]
        if root_fid >= 0:
            futures.send_future(root_pe, root_fid, value)
        elif target is not None:
            if empty:
                target()
            else:
                target(value)

    def exit(self, exit_code=0):
        charm.exit(exit_code)

    def myPe(self):
        return _core.my_pe()

    def addReducer(self, func):
        reduction.Reducer.addReducer(func)

    def createArray(self, cls, dims=None, ndims=-1, args=None, map=None, useAtSync=False, cb=None):
        proxy = chare.Array(cls, dims, ndims, args if args is not None else [], map, useAtSync)
        if cb is not None:
            cb(proxy)
        return proxy

    def createGroup(self, cls, args=None, cb=None):
        proxy = chare.Group(cls, args)
        if cb is not None:
            cb(proxy)
        return proxy

    def rexec(self, code, module_name="__main__"):
        exec(code, sys.modules[module_name].__dict__)

    exec = rexec  # charm4py documents the remote method under this name (charm.thisProxy.exec)

    def eval(self, expression, module_name="__main__"):
        return eval(expression, sys.modules[module_name].__dict__)

    def printStats(self):
        pass


class _Charm:
    Future = futures.Future  # charm.Future(), as in charm4py

    def __init__(self):
        self._entry = None
        self._remote = None
        self.pool = pool.Pool()
        self.options = options.Options

    # -- start and end
    def start(self, entry=None, classes=None, modules=None, interactive=False):
        if interactive:  # charm4py's console on PE 0 (ucharm.interactive)
            from .interactive import _console_main
            entry = _console_main
        if entry is None:
            raise TypeError("charm.start(main): give the main function or the main chare class")
        self._entry = entry
        _keep_heap_pad()
        _core.set_python(_Hooks)
        _core.start(options.strip_lb_options(list(sys.argv)))

    def exit(self, exit_code=0):
        sys.stdout.flush()
        sys.stderr.flush()
        _core.exit(int(exit_code))

    def abort(self, message):
        sys.stdout.flush()
        _core.abort(str(message))

    # -- where we are
    def myPe(self):
        return _core.my_pe()

    def numPes(self):
        return _core.num_pes()

    # -- hosts (topology.py): the core's physical nodes
    def myHost(self):
        return topology.pe_host(_core.my_pe())

    def numHosts(self):
        return topology.num_hosts()

    def getHostPes(self, host):
        return topology.host_pes(host)

    def getHostNumPes(self, host):
        return topology.host_num_pes(host)

    def getHostFirstPe(self, host):
        return topology.host_first_pe(host)

    def getHostLastPe(self, host):
        return topology.host_last_pe(host)

    def getPeHost(self, pe):
        return topology.pe_host(pe)

    def getPeHostRank(self, pe):
        return topology.pe_host_rank(pe)

    def getTopoTreeEdges(self, pe, root_pe, pes=None, bfactor=4):
        """(parent, children) of `pe` in a spanning tree over `pes` (root_pe first; None: all
        PEs) that crosses between hosts once per host; parent is None at the root."""
        return topology.tree_edges(pe, root_pe, pes, bfactor)

    def getTopoSubtrees(self, root_pe, pes, bfactor=4):
        """The subtrees under root_pe of that tree over `pes` (root_pe first), each a list
        of its PEs, its root first."""
        return topology.subtrees(root_pe, pes, bfactor)

    # -- CCS: handlers that clients outside the job call through PE 0's server (++server)
    def CcsRegisterHandler(self, handlername, handler):
        """handler(data: bytes) runs on this PE for each CCS request naming `handlername`
        and this PE (or every PE); it answers with charm.CcsSendReply(bytes) or keeps the
        answer for later with charm.CcsDelayReply(). Register it on every PE a client names."""
        _core.ccs_register(str(handlername), handler)

    def CcsIsRemoteRequest(self):
        return _core.ccs_is_remote_request()

    def CcsSendReply(self, message):
        _core.ccs_send_reply(message)

    def CcsNoReply(self):
        _core.ccs_no_reply()

    def CcsDelayReply(self):
        """A token for charm.CcsSendDelayedReply(token, bytes), usable later, on any PE."""
        return _core.ccs_delay_reply()

    def CcsSendDelayedReply(self, d, message):
        _core.ccs_send_delayed_reply(d, message)

    def CcsEnabled(self):
        """True when the job runs a CCS server (started with ++server or +server)."""
        return _core.ccs_enabled()

    def CcsServer(self):
        """On PE 0: (address, port) of the CCS server, else None."""
        return _core.ccs_server()

    # -- timers (timers.py)
    def scheduleCallableAfter(self, callable_obj, secs, args=None):
        """Calls callable_obj(*args) on this PE once at least `secs` seconds have passed
        (a function, a Future, or a proxy method), between entry methods."""
        timers.schedule(callable_obj, secs, args)

    def sleep(self, secs):
        """In a coroutine: waits `secs` seconds while the PE runs other work; elsewhere
        time.sleep(secs)."""
        timers.sleep(secs)

    def wallTime(self):
        return _core.wall_time()

    @property
    def thisProxy(self):
        if self._remote is None:
            raise RuntimeError("charm.thisProxy is known once charm.start() has started the runtime")
        return self._remote

    # -- waiting
    def awaitCreation(self, *proxies):
        for p in proxies:
            if isinstance(p, sections.SectionProxy):
                f = p.__dict__.pop("_ck_creation", None)
                if f is not None and f.pe == _core.my_pe():
                    f.get()
                continue
            f = p._creation if isinstance(p, proxy.CollectionProxy) else chare._creations.pop(p._ref, None)
            if f is not None and f.pe == _core.my_pe():
                f.get()
                if isinstance(p, proxy.CollectionProxy):
                    p._creation = None

    def iwait(self, futures):
        pending = list(futures)
        while pending:
            ready = [f for f in pending if f.ready()]
            if not ready:
                g = getcurrent()
                for f in pending:
                    f._waiter = g
                try:
                    coroutines.suspend("charm.iwait()")
                finally:
                    for f in pending:
                        f._waiter = None
                continue
            for f in ready:
                pending.remove(f)
                yield f

    def iawait(self, futures):
        """As iwait: the futures as their values arrive."""
        return self.iwait(futures)

    def wait(self, futures):
        for f in futures:
            f.get()

    def startQD(self, callback):
        """Quiescence detection: `callback` (a Future, or a proxy method called with no
        arguments) fires once no message is queued or in flight anywhere."""
        if isinstance(callback, (futures.Future, futures._FutureRef)):
            _core.start_qd(callback.pe, callback.fid)
        elif isinstance(callback, proxy.Method) or callable(callback):
            f = futures.CallbackFuture(callback)
            _core.start_qd(f.pe, f.fid)
        else:
            raise TypeError(f"charm.startQD: give a Future or a proxy method, not {callback!r}")

    def printStats(self):
        print(f"ucharm: PE {_core.my_pe()}: no statistics are kept (charm.printStats)", flush=True)

    def LBTurnInstrumentOn(self):
        pass  # the core always measures entry-method time (it is cheap)

    def LBTurnInstrumentOff(self):
        pass

    # -- checkpoint and restart (checkpoint.py)
    def checkpoint(self, dir, resume=None):
        """Writes a checkpoint of the whole program to directory `dir` (created if missing;
        the previous checkpoint there stays whole until the new one is complete) and returns
        a Future that gets None once it is on disk: `charm.checkpoint(d).get()` in a
        coroutine. It first waits for quiescence (no message queued or in flight), so call
        it where the program waits for it, e.g. from the main chare between steps. Every
        chare (array elements, group branches, singleton chares, the main chare) is saved
        as its pickle (its attributes, or its class's __getstate__), as are the readonlies
        and charm.thisProxy. `resume`: a proxy method (self.thisProxy.resume) or a
        module-level function (or functools.partial of one): a run started with
        `+restart dir` (on any number of PEs) rebuilds every chare instead of calling the
        program's main, then calls resume() once on PE 0, in a coroutine. Coroutines and
        futures are not saved: only a coroutine waiting for this checkpoint's future may
        be waiting when it is written."""
        return checkpoint.checkpoint(dir, resume)

    def restartInfo(self):
        """How this run started: .restarted (with +restart), .old_num_pes (the PE count
        that wrote the checkpoint), .dir."""
        return checkpoint.RestartInfo(_core.restart_info())

    def waitQD(self):
        f = futures.Future()
        self.startQD(f)
        f.get()

    def createFuture(self, num_vals=1):
        return futures.Future(num_vals)

    # -- sections (sections.py)
    def split(self, proxy, numsections, section_func=None, elems=None, slicing=None):
        return sections.split(proxy, numsections, section_func, elems, slicing)

    def combine(self, *proxies):
        return sections.combine(*proxies)


charm = _Charm()


class _Hooks:
    """What _core calls."""
    construct = staticmethod(chare._construct)
    invoke_slow = staticmethod(_invoke.invoke_slow)
    after_entry = staticmethod(_invoke.after_entry)
    map_pe = staticmethod(chare._map_pe)
    flush_readonlies = staticmethod(readonly.flush)
    channel_message = staticmethod(channel.channel_message)
    channel_fast = staticmethod(channel.channel_fast)
    entry_kind = _invoke.entry_kind
    combine = staticmethod(reduction.combine)
    handle_exit = staticmethod(_invoke.handle_exit)
    about_to_migrate = staticmethod(migration.about_to_migrate)
    pack = staticmethod(migration.pack)
    arrived = staticmethod(migration.arrived)
    resume_from_sync = staticmethod(migration.resume_from_sync)
    restarted = staticmethod(checkpoint.restarted)

    @staticmethod
    def start(ptr, argv):
        # PE 0, once, inside the C++ main chare's constructor: the runtime's group, then the
        # program's main until it first waits. What the readonlies hold by then goes to
        # every PE with the core's readonly values, before any other message is handled.
        remote = chare.Group(CharmRemote)
        charm._remote = remote
        sys.argv[:] = argv
        entry = charm._entry
        readonly._in_start = True
        obj = None
        try:
            if isinstance(entry, type) and issubclass(entry, chare.Chare):
                obj = chare._construct_main(ptr, entry, argv)
            else:
                coroutines.spawn(_main_body, entry, argv)
        finally:
            readonly._in_start = False
        _core.set_readonly(pickle.dumps((remote, dict(vars(readonly.readonlies))), _wire.PROTOCOL))
        readonly._ro_dirty.clear()
        return obj

    @staticmethod
    def readonly_arrived(blob):
        # At start-up (remote, values); restarting, the value a checkpoint saved (remote,
        # values, resume): see checkpoint.py.
        try:
            value = pickle.loads(blob)
        except Exception as e:
            info = _core.restart_info()
            if info is None:
                raise
            raise RuntimeError(f"+restart {info[1]}: the readonlies of the checkpoint cannot be unpickled "
                               f"({type(e).__name__}: {e}): a class or function they refer to is not defined "
                               "by this program (they are found again by module and qualified name)") from e
        remote, values = value[0], value[1]
        charm._remote = remote
        readonly.readonlies.__dict__.update(values)
        if len(value) > 2:
            checkpoint.restored(value[2])

    @staticmethod
    def future_value(fid, msg):
        target = futures.registry.get(fid)
        if target is None:
            raise RuntimeError(f"a value arrived for future {fid} on PE {_core.my_pe()}, which is not waited for")
        kind = _core.value_kind(msg)
        if kind == 1:
            _, value, _ = reduction.finish(_core.reduction_value(msg))
        elif kind == 2:
            value = None
        else:
            head, bufs = _core.parse(msg, False)
            value = pickle.loads(head, buffers=bufs)
        target._deliver(value)

    @staticmethod
    def reduction_done(blob):
        target, value, empty = reduction.finish(blob)
        if target is None:
            return
        if empty:
            target()
        else:
            target(value)


def _main_body(entry, argv):
    try:
        entry(argv)
    except SystemExit as e:
        _invoke.handle_exit(e)
    except BaseException:
        _invoke.die("in the main function")
