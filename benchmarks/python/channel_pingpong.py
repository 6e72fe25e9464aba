"""Channel ping-pong and bandwidth between chares on PEs 0 and 1 with ucharm's Python
bindings, the peer of the C++ Channel benchmark (`osu --mode channel [--mem cuda]`):
the same tests, sizes and table (size, one-way latency in us, bandwidth in MB/s; --test bw:
size, us per message, MB/s).
  --api buffer   Channel.isend / irecv (only the bytes travel; every receive posted before
                 the peer's send, as the C++ benchmark posts them)
  --api message  Channel.send(array) / recv(buffer) (a message with the array's
                 description, the data over the core's channel for device arrays)
  --device       CuPy arrays, one GPU per PE (default: NumPy arrays in host memory)
    PYTHONPATH=build/bindings/python ucharmrun -n 2 python3 channel_pingpong.py [--device]
        [--api buffer|message] [--test lat|bw] [--window 64] [--min 8] [--max 16M]
"""
import argparse
import os
import sys
import time

from ucharm import Channel, Chare, Group, charm, coro, waitall

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


class Peer(Chare):
    """One per PE (a Group); only those on PEs 0 and 1 play."""

    def __init__(self, device, max_size):
        if self.thisIndex > 1:
            return
        self.ch = Channel(self, remote=self.thisProxy[1 - self.thisIndex])
        if device:
            import cupy  # only with --device
            cupy.cuda.Device(charm.myPe() % cupy.cuda.runtime.getDeviceCount()).use()
            xp = cupy
        else:
            import numpy
            xp = numpy
        self.xp = xp
        self.device = device
        self.sbuf = xp.ones(max(max_size, 1), dtype=xp.uint8)
        self.rbuf = xp.zeros(max(max_size, 1), dtype=xp.uint8)
        self.ack_out = xp.ones(1, dtype=xp.uint8)
        self.ack_in = xp.zeros(1, dtype=xp.uint8)
        self.views = {}

    def bufs(self, size):
        """The send and receive arrays of `size` bytes, made once (no per-call slicing)."""
        v = self.views.get(size)
        if v is None:
            v = self.views[size] = (self.sbuf[:size], self.rbuf[:size])
        return v

    @coro
    def lat(self, api, size, round_trips):
        """round_trips ping-pongs; PE 0 returns the seconds they took."""
        if self.thisIndex > 1:
            return None
        ch = self.ch
        s, r = self.bufs(size)
        # message api: host arrays travel inside the message (recv() returns a new one),
        # device arrays land in the buffer given
        rargs = (r,) if self.device else ()
        t0 = time.perf_counter()
        if api == 'buffer':
            if self.thisIndex == 0:
                for _ in range(round_trips):
                    rq = ch.irecv(r)   # posted before the peer's reply leaves
                    sq = ch.isend(s)
                    rq.wait()
                    sq.wait()
            else:
                rq, sq = ch.irecv(r), None
                for i in range(round_trips):
                    rq.wait()
                    if sq is not None:
                        sq.wait()  # the previous reply (long done: nothing waits here)
                    if i + 1 < round_trips:
                        rq = ch.irecv(r)  # the next one, before replying
                    sq = ch.isend(s)
                if sq is not None:
                    sq.wait()
        else:
            if self.thisIndex == 0:
                for _ in range(round_trips):
                    ch.send(s)
                    ch.recv(*rargs)
            else:
                for _ in range(round_trips):
                    ch.recv(*rargs)
                    ch.send(s)
        return time.perf_counter() - t0

    @coro
    def bw(self, api, size, rounds, window):
        """OSU's bandwidth test: `rounds` times, PE 0 sends `window` messages back to back
        and PE 1, having posted the window's receives, answers with a 1-byte ack."""
        if self.thisIndex > 1:
            return None
        ch = self.ch
        s, r = self.bufs(size)
        rargs = (r,) if self.device else ()
        t0 = time.perf_counter()
        if api == 'buffer':
            if self.thisIndex == 0:
                for _ in range(rounds):
                    ack = ch.irecv(self.ack_in)
                    for _ in range(window):
                        ch.isend(s)
                    ack.wait()
                ch.waitall()
            else:
                for _ in range(rounds):
                    waitall([ch.irecv(r) for _ in range(window)])
                    ch.isend(self.ack_out)
                ch.waitall()
        else:
            if self.thisIndex == 0:
                for _ in range(rounds):
                    for _ in range(window):
                        ch.send(s)
                    ch.recv()
            else:
                for _ in range(rounds):
                    for _ in range(window):
                        ch.recv(*rargs)
                    ch.send(b'a')
        return time.perf_counter() - t0


def main(args):
    p = argparse.ArgumentParser(prog='channel_pingpong.py', description='Channel ping-pong between PEs 0 and 1')
    p.add_argument('--api', choices=['buffer', 'message'], default='buffer')
    p.add_argument('--device', action='store_true', help='CuPy arrays (one GPU per PE)')
    p.add_argument('--test', choices=['lat', 'bw'], default='lat')
    p.add_argument('--window', type=int, default=64, help='messages per window in the bw test')
    common.add_size_options(p)
    p.set_defaults(min=8, max=16 << 20)
    try:
        a = p.parse_args(args[1:])
    except SystemExit as e:
        charm.exit(e.code or 0)
        return
    if charm.numPes() < 2:
        print('channel_pingpong.py needs 2 PEs (ucharmrun -n 2 ...)', file=sys.stderr)
        charm.exit(1)
        return
    peers = Group(Peer, args=[a.device, a.max])
    charm.awaitCreation(peers)
    mem = 'CuPy (device)' if a.device else 'NumPy (host)'
    common.header(f'ucharm Python Channel {a.test}, api {a.api}, {mem}, PE 0 <-> PE 1, {charm.numPes()} PEs')
    for size in common.sizes(a.min, a.max):
        n = common.iterations_for(size, a.iters)
        if a.test == 'bw':
            n = max(n // a.window, 4)
            warm = max(a.warmup // a.window, 1)
        else:
            warm = a.warmup
        for count, timed in ((warm, False), (n, True)):
            if a.test == 'bw':
                other = peers[1].bw(a.api, size, count, a.window, ret=True)
                seconds = peers[0].bw(a.api, size, count, a.window, ret=True).get()
            else:
                other = peers[1].lat(a.api, size, count, ret=True)
                seconds = peers[0].lat(a.api, size, count, ret=True).get()
            other.get()
            if timed and a.test == 'bw':
                us = seconds * 1e6 / (n * a.window)
                print(f'{size:<12} {us:14.3f} {size / us:16.2f}', flush=True)
            elif timed:
                common.row(size, n, seconds)
    charm.exit(0)


charm.start(main)
