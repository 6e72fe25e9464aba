"""Ping-pong between two chares on PEs 0 and 1 with ucharm's Python bindings (charm4py's
API); the table of benchmarks/converse_pingpong (size, one-way latency, bandwidth).
Modes, by what travels:
  proxy-bytes   a bytes object as the argument of an entry method call
  channel-bytes a bytes object through a Channel
  numpy         a NumPy array through a Channel (an out-of-band pickle-5 buffer)
  cupy-direct   a CuPy array through a Channel, device to device, into a posted buffer
  cupy-staging  a CuPy array copied to host, sent as NumPy, copied to the GPU on arrival
Each side sends back what it received: no copy or allocation beyond the transport's.
--payload list|object (proxy-bytes, channel-bytes): a one-element list holding the bytes
(ucharm's fast wire format takes it, as it takes the bytes; mpi4py pickles both), or a
small object holding them (common.Payload: both pickle it, like with like).
The host modes call the channel in the timed loop directly, as mpi4py_pingpong.py calls
comm.send/recv.
    PYTHONPATH=build/bindings/python ucharmrun -n 2 python3 pingpong.py --mode channel-bytes [--min 1] [--max 4M]
"""
import argparse
import os
import sys
import time

from ucharm import Channel, Chare, Future, Group, charm, coro

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

MODES = ['proxy-bytes', 'channel-bytes', 'numpy', 'cupy-direct', 'cupy-staging']


class Peer(Chare):
    """One per PE (a Group); only those on PEs 0 and 1 play."""

    def __init__(self, mode, max_size, payload='bytes'):
        self.mode = mode
        self.payload_kind = payload
        if self.thisIndex > 1:
            return
        self.ch = Channel(self, remote=self.thisProxy[1 - self.thisIndex])
        self.cp = None
        if mode.startswith('cupy'):
            import cupy  # only in the GPU modes
            cupy.cuda.Device(charm.myPe() % cupy.cuda.runtime.getDeviceCount()).use()
            self.cp = cupy
            self.d_send = cupy.ones(max_size, dtype=cupy.uint8)
            self.d_recv = cupy.zeros(max_size, dtype=cupy.uint8)
            if mode == 'cupy-staging':
                import cupyx  # pinned host memory: the fast copies an application would use
                self.h_send = cupyx.zeros_pinned(max_size, dtype='uint8')

    def payload(self, size):
        if self.mode in ('proxy-bytes', 'channel-bytes'):
            return common.payload(self.payload_kind, size)
        if self.mode == 'numpy':
            import numpy
            return numpy.ones(size, dtype=numpy.uint8)
        return self.d_send[:size]

    @coro
    def stream(self, size, rounds, window):
        """OSU's bandwidth test: `rounds` times, PE 0 sends `window` messages back to back and
        PE 1 answers the last with a small ack; PE 0 returns the seconds it took."""
        if self.thisIndex > 1:
            return None
        data = self.payload(size)
        ack = b'a'
        t0 = time.perf_counter()
        for _ in range(rounds):
            if self.thisIndex == 0:
                for _ in range(window):
                    self.send(data)
                self.ch.recv()
            else:
                for _ in range(window):
                    self.recv(size)
                self.ch.send(ack)
        return time.perf_counter() - t0

    @coro
    def run(self, size, round_trips):
        """round_trips ping-pongs of `size` bytes; PE 0 returns the seconds they took."""
        if self.thisIndex > 1:
            return None
        data = self.payload(size)
        if self.mode == 'proxy-bytes':
            if self.thisIndex == 1:
                return None  # PE 1 only bounces, in ping()
            self.left, self.done = round_trips, Future()
            t0 = time.perf_counter()
            self.thisProxy[1].ping(data)
            self.done.get()
            return time.perf_counter() - t0
        if self.mode in ('channel-bytes', 'numpy'):  # host objects: the channel itself, no wrapper
            ch = self.ch
            t0 = time.perf_counter()
            if self.thisIndex == 0:
                for _ in range(round_trips):
                    ch.send(data)
                    data = ch.recv()
            else:
                for _ in range(round_trips):
                    ch.send(ch.recv())
            return time.perf_counter() - t0
        t0 = time.perf_counter()
        if self.thisIndex == 0:
            for _ in range(round_trips):
                self.send(data)
                data = self.recv(size)
        else:
            for _ in range(round_trips):
                self.send(self.recv(size))
        return time.perf_counter() - t0

    # ---- proxy-bytes: entry method calls both ways ----
    def ping(self, data):
        self.thisProxy[0].pong(data)

    def pong(self, data):
        self.left -= 1
        if self.left:
            self.thisProxy[1].ping(data)
        else:
            self.done.send(None)

    # ---- channel modes ----
    def send(self, data):
        if self.mode == 'cupy-staging':
            h = self.h_send[:data.size]
            data.get(out=h)  # device to host, waits for the copy
            self.ch.send(h)
        else:
            self.ch.send(data)

    def recv(self, size):
        if self.mode == 'cupy-direct':
            return self.ch.recv(self.d_recv[:size])  # lands in the posted device buffer
        data = self.ch.recv()
        if self.mode == 'cupy-staging':
            d = self.d_recv[:size]
            d.set(data)  # host to device
            self.cp.cuda.get_current_stream().synchronize()
            return d
        return data


def main(args):
    p = argparse.ArgumentParser(prog='pingpong.py', description='ping-pong between chares on PEs 0 and 1')
    p.add_argument('--mode', choices=MODES, default='channel-bytes')
    p.add_argument('--test', choices=['lat', 'bw'], default='lat',
                   help='lat: ping-pong; bw: windows of back-to-back sends, then an ack (channel modes)')
    p.add_argument('--window', type=int, default=64, help='messages per window in the bw test')
    p.add_argument('--payload', choices=['bytes', 'list', 'object'], default='bytes',
                   help='proxy-bytes/channel-bytes: the bytes, a list holding them, or an object holding them')
    common.add_size_options(p)
    try:
        a = p.parse_args(args[1:])
    except SystemExit as e:
        charm.exit(e.code or 0)
        return
    if charm.numPes() < 2:
        print('pingpong.py needs 2 PEs (ucharmrun -n 2 ...)', file=sys.stderr)
        charm.exit(1)
        return
    peers = Group(Peer, args=[a.mode, a.max, a.payload])
    charm.awaitCreation(peers)
    common.header(f'ucharm Python ping-pong, mode {a.mode}, PE 0 <-> PE 1, {charm.numPes()} PEs')
    if a.test == 'bw' and a.mode == 'proxy-bytes':
        print('pingpong.py: --test bw is for the channel modes', file=sys.stderr)
        charm.exit(1)
        return
    for size in common.sizes(a.min, a.max):
        n = common.iterations_for(size, a.iters)
        if a.test == 'bw':
            n = max(n // a.window, 4)
        for count, timed in ((max(a.warmup // (a.window if a.test == 'bw' else 1), 1), False), (n, True)):
            if a.test == 'bw':
                other = peers[1].stream(size, count, a.window, ret=True)
                seconds = peers[0].stream(size, count, a.window, ret=True).get()
            else:
                other = peers[1].run(size, count, ret=True)
                seconds = peers[0].run(size, count, ret=True).get()
            other.get()
            if timed and a.test == 'bw':
                # one-way time per message, and the bandwidth of the stream
                us = seconds * 1e6 / (n * a.window)
                print(f'{size:<12} {us:14.3f} {size / us:16.2f}', flush=True)
            elif timed:
                common.row(size, n, seconds)
    charm.exit(0)


charm.start(main)
