"""Jacobi3D with ucharm's Python bindings (charm4py's API): the problem of ../jacobi3d.cpp
(same grid, boundary values, block decomposition and arithmetic, so the result equals the
C++ one bit for bit). A 3-D chare array of blocks; each block runs its iterations in a
@coro entry method and exchanges halos with up to six neighbours through one Channel each:
  direct   (--gpu) halos as CuPy device arrays, sent device to device
  staging  (--gpu) halos copied to host NumPy arrays, sent, copied back to the GPU
Without --gpu the kernels are NumPy and halos NumPy arrays in both modes.
Load balancing (as ../jacobi3d.cpp): --imbalance K makes the first --heavy fraction of the
blocks (by linear index) repeat their kernels K times (same result); --lb-period N makes
every block call AtSync after every N-th iteration (useAtSync=True) and continue in
resumeFromSync, maybe on another PE (its grids and channels travel with it). Blocks that
migrate need host halos: not --gpu --mode direct.
Checkpoints (as ../jacobi3d.cpp): --checkpoint-every K runs the iterations in chunks that
end at every K-th iteration; after each the driver writes a checkpoint to --checkpoint-dir
(charm.checkpoint, resume= a functools.partial carrying the driver's state). A run started
with `+restart DIR` (any PE count) goes on from the last one to the same residual and
checksum. The "checksum:" line is the C++ version's (a sum of per-cell hashes of the exact
bits): the same for the C++ and Python programs, interrupted or not.
    ucharmrun -n 4 python3 jacobi3d.py --grid 96 --blocks 8 --iters 100 [--gpu --mode direct] [--verify]
    ucharmrun -n 2 python3 jacobi3d.py --blocks 16 --imbalance 4 --lb-period 10 +balancer GreedyLB +LBDebug
    ucharmrun -n 2 python3 jacobi3d.py --iters 40 --checkpoint-every 10 --stop-after-checkpoint 20
    ucharmrun -n 4 python3 jacobi3d.py +restart jacobi3d.ckpt
"""
import argparse
import functools
import math
import os
import sys
import time

import numpy as np

from ucharm import Array, Channel, Chare, Future, Reducer, charm, coro

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grid  # noqa: E402


class Block(Chare):
    def __init__(self, cfg):
        xp = np
        if cfg['gpu']:
            import cupy as xp  # only with --gpu: CPU runs need no CuPy
            xp.cuda.Device(charm.myPe() % xp.cuda.runtime.getDeviceCount()).use()
        self.xp = xp
        self.gpu = cfg['gpu']
        self.direct = cfg['gpu'] and cfg['mode'] == 'direct'
        self.st = grid.BlockState(xp, cfg['grid'], cfg['dims'], tuple(self.thisIndex))
        dims, (x, y, z) = cfg['dims'], self.thisIndex
        self.reps = cfg['imbalance'] if (x * dims[1] + y) * dims[2] + z < cfg['heavy'] else 1
        self.lb_period = cfg['lb_period']
        self.end = 0  # the iteration (st.cur) the current run ends at
        # Channels are opened once and keep message order: no iteration tags needed.
        self.ch = {f: Channel(self, remote=self.thisProxy[grid.neighbour(self.thisIndex, f)]) for f in self.st.faces}
        if self.direct:
            # Send buffers by iteration parity: a neighbour can be one iteration behind in
            # receiving, never two (as in the C++ version). One receive buffer per face:
            # each is unpacked before the next receive into it is posted.
            count = self.st.face_count
            self.send_buf = [{f: xp.empty(count(f)) for f in self.st.faces} for _ in range(2)]
            self.recv_buf = {f: xp.empty(count(f)) for f in self.st.faces}
            self.sync()

    def __getstate__(self):  # migration (--lb-period): the module is not state
        d = {k: v for k, v in self.__dict__.items() if k != 'xp'}
        return d

    def __setstate__(self, d):
        self.__dict__.update(d)
        self.xp = self.st.xp
        if self.gpu:
            self.xp.cuda.Device(charm.myPe() % self.xp.cuda.runtime.getDeviceCount()).use()

    def sync(self):
        if self.gpu:
            self.xp.cuda.get_current_stream().synchronize()

    def send_halos(self):
        st = self.st
        if self.direct:
            bufs = self.send_buf[st.cur % 2]
            for f in st.faces:
                st.pack(f, bufs[f])
            self.sync()  # the packs are done before the data leaves
            for f in st.faces:
                self.ch[f].send(bufs[f])
        else:
            for f in st.faces:
                halo = st.pack(f)  # a new array: the sent one is never written again
                self.ch[f].send(self.xp.asnumpy(halo) if self.gpu else halo)

    def recv_halos(self):
        st = self.st
        for f in st.faces:
            if self.direct:
                self.ch[f].recv(self.recv_buf[f])
                st.unpack(f, self.recv_buf[f])
            else:
                halo = self.ch[f].recv()
                st.unpack(f, self.xp.asarray(halo) if self.gpu else halo)

    def run(self, iterations, done):
        """`iterations` more sweeps; then the largest change of the last one, reduced with
        max over all blocks, goes to the future `done` (it also says all blocks finished)."""
        self.end = self.st.cur + iterations
        self.done = done
        self.thisProxy[self.thisIndex].go()

    @coro
    def go(self):
        residual = 0.0
        st = self.st
        while st.cur < self.end:
            self.send_halos()
            for _ in range(self.reps):  # a heavy block repeats its kernels (same output)
                st.update_interior()  # overlaps with the halos in flight
            self.recv_halos()
            for _ in range(self.reps):
                st.update_shell()
            if st.cur == self.end - 1:
                residual = st.residual()
            st.advance()
            p = self.lb_period
            if p and st.cur % p == 0 and st.cur < self.end:
                # Balance: leave the coroutine (a waiting one cannot travel); the balancer
                # may move this block, then resumeFromSync goes on.
                self.sync()
                self.AtSync()
                return
        self.sync()
        self.contribute(residual, Reducer.max, self.done)

    def resumeFromSync(self):
        self.thisProxy[self.thisIndex].go()

    def cells(self):
        return self.st.cells()

    def checksum(self, grid_size, done):
        self.contribute(grid.checksum(self.st.cells(), self.st.origin, grid_size), Reducer.sum, done)


def parse(argv):
    p = argparse.ArgumentParser(prog='jacobi3d.py', description='Jacobi3D: 7-point stencil on a 3-D chare array')
    p.add_argument('--grid', type=int, nargs='+', default=[64], metavar='N',
                   help='cells per dimension: N (a cube) or X Y Z')
    p.add_argument('--blocks', type=int, default=charm.numPes(), help='number of blocks (default: one per PE)')
    p.add_argument('--iters', type=int, default=100, help='timed iterations')
    p.add_argument('--warmup', type=int, default=10, help='untimed iterations first')
    p.add_argument('--mode', choices=['direct', 'staging'], default='direct',
                   help='GPU halo path (--gpu); CPU runs send NumPy arrays either way')
    p.add_argument('--gpu', action='store_true', help='CuPy arrays and kernels on the GPU (PE p uses GPU p mod count)')
    p.add_argument('--verify', action='store_true', help='compare with a serial NumPy run, bit for bit')
    p.add_argument('--imbalance', type=int, default=1, metavar='K',
                   help='heavy blocks run their kernels K times per iteration')
    p.add_argument('--heavy', type=float, default=0.25, metavar='F',
                   help='fraction of the blocks (the first by index) that are heavy')
    p.add_argument('--lb-period', type=int, default=0, metavar='N',
                   help='blocks call AtSync after every N-th iteration (0: never)')
    p.add_argument('--checkpoint-every', type=int, default=0, metavar='K',
                   help='write a checkpoint after every K-th iteration (0: never); restart with +restart DIR')
    p.add_argument('--checkpoint-dir', default='jacobi3d.ckpt', metavar='DIR', help='where checkpoints go')
    p.add_argument('--stop-after-checkpoint', type=int, default=-1, metavar='S',
                   help='end the run (exit 0) after the checkpoint at iteration S')
    a = p.parse_args(argv)
    if a.imbalance < 1 or not 0 <= a.heavy <= 1 or a.lb_period < 0:
        p.error('--imbalance must be >= 1, --heavy in [0, 1] and --lb-period >= 0')
    if a.lb_period and a.gpu and a.mode == 'direct':
        p.error('--lb-period with --gpu --mode direct: blocks that migrate need host halos (--mode staging)')
    if len(a.grid) not in (1, 3):
        p.error('--grid takes 1 or 3 numbers')
    if a.iters < 1 or a.warmup < 0:
        p.error('--iters must be positive and --warmup not negative')
    if a.checkpoint_every < 0 or not a.checkpoint_dir:
        p.error('--checkpoint-every must not be negative and --checkpoint-dir not empty')
    if a.checkpoint_every and a.gpu and a.mode == 'direct':
        p.error('--checkpoint-every with --gpu --mode direct: checkpointed blocks need host halos (--mode staging)')
    total = a.warmup + a.iters
    if a.stop_after_checkpoint >= 0 and not (a.checkpoint_every and a.stop_after_checkpoint % a.checkpoint_every == 0
                                             and 0 < a.stop_after_checkpoint < total):
        p.error(f'--stop-after-checkpoint {a.stop_after_checkpoint}: no checkpoint is written at that iteration '
                f'(checkpoints come after every --checkpoint-every K-th iteration, before the last one, {total})')
    a.grid = tuple(a.grid * 3 if len(a.grid) == 1 else a.grid)
    return a


def sweep(blocks, iterations):
    done = Future()
    blocks.run(iterations, done)  # broadcast
    return done.get()


def main(args):
    try:
        a = parse(args[1:])
        dims = grid.decompose(*a.grid, a.blocks)
    except SystemExit as e:  # argparse's usage errors and --help
        charm.exit(e.code or 0)
        return
    except ValueError as e:
        print('jacobi3d:', e, file=sys.stderr)
        charm.exit(1)
        return
    if a.gpu:
        try:
            import cupy  # noqa: F401  (checked here, once, for a clear message)
        except ImportError:
            print('jacobi3d: --gpu needs CuPy, which is not installed', file=sys.stderr)
            charm.exit(1)
            return
    gx, gy, gz = a.grid
    shape = tuple(g // d for g, d in zip(a.grid, dims))
    print(f'Jacobi3D (Python): grid {gx}x{gy}x{gz}, {a.blocks} blocks ({dims[0]}x{dims[1]}x{dims[2]}) of '
          f'{shape[0]}x{shape[1]}x{shape[2]}, {charm.numPes()} PEs, mode {a.mode if a.gpu else "host"}, '
          f'{"CuPy" if a.gpu else "NumPy"} kernels')
    t = time.time()
    heavy = math.ceil(a.heavy * a.blocks) if a.imbalance > 1 else 0
    if heavy:
        print(f'imbalance: blocks 0-{heavy - 1} (by linear index) of {a.blocks} run their kernels '
              f'{a.imbalance} times per iteration')
    if a.lb_period:
        print(f'load balancing: AtSync after every {a.lb_period} iterations')
    if a.checkpoint_every:
        print(f'checkpoints: after every {a.checkpoint_every} iterations, to {a.checkpoint_dir}')
    cfg = {'grid': a.grid, 'dims': dims, 'gpu': a.gpu, 'mode': a.mode, 'imbalance': a.imbalance, 'heavy': heavy,
           'lb_period': a.lb_period}
    blocks = Array(Block, dims, args=[cfg], useAtSync=a.lb_period > 0)
    charm.awaitCreation(blocks)
    print(f'start-up: {time.time() - t:.3f} s (array creation)')
    Driver(a, dims, shape, blocks).run()


class Driver:
    """The main function's state: the iterations done, timing. A checkpoint saves it
    inside its resume= callable (resume(driver)); a restarted run goes on in run()."""

    def __init__(self, a, dims, shape, blocks):
        self.a, self.dims, self.shape, self.blocks = a, dims, shape, blocks
        self.done = 0          # iterations every block has done
        self.timed = 0         # timed iterations (after the warm-up) run, and their time
        self.elapsed = 0.0
        self.residual = None
        self.checkpoints = 0
        self.ck_time = 0.0

    def run(self):
        """Chunks to the next stop: the end of the warm-up, a checkpoint, or the end."""
        a = self.a
        total = a.warmup + a.iters
        every = a.checkpoint_every
        while self.done < total:
            end = a.warmup if self.done < a.warmup else total
            if every:
                end = min(end, (self.done // every + 1) * every)
            t = time.time()
            self.residual = sweep(self.blocks, end - self.done)
            if self.done >= a.warmup:
                self.elapsed += time.time() - t
                self.timed += end - self.done
            self.done = end
            if every and self.done % every == 0 and self.done < total:
                t = time.time()
                self.checkpoints += 1  # (before: resume= saves the driver as it is now)
                charm.checkpoint(a.checkpoint_dir, resume=functools.partial(resume, self)).get()
                dt = time.time() - t
                self.ck_time += dt
                print(f'checkpoint at iteration {self.done}: {dt:.3f} s')
                if self.done == a.stop_after_checkpoint:
                    print(f'stopped after the checkpoint at iteration {self.done} (continue with +restart '
                          f'{a.checkpoint_dir})')
                    charm.exit(0)
                    return
        self.finish()

    def finish(self):
        a = self.a
        print(f'iterations: {a.iters} (after {a.warmup} warm-up)')
        print(f'time per iteration: {self.elapsed / self.timed * 1e3:.4f} ms'
              f'{" (checkpoints excluded)" if self.checkpoints else ""}')
        if self.checkpoints:
            print(f'checkpoints: {self.checkpoints}, {self.ck_time:.3f} s in all')
        print(f'residual: {self.residual:.6e} (largest change in the last iteration)')
        done = Future()
        self.blocks.checksum(a.grid, done)
        gx, gy, gz = a.grid
        print(f'checksum: {done.get() % (1 << 64):016x} ({gx * gy * gz} cells after {self.done} iterations)')
        code = 0
        if a.verify:
            code = verify(self.blocks, a, self.dims, self.shape)
        charm.exit(code)


def resume(driver):
    """After a restart (+restart DIR): the checkpoint's driver goes on."""
    info = charm.restartInfo()
    print(f'restarted from {info.dir} at iteration {driver.done} (checkpoint of {info.old_num_pes} PEs, now '
          f'{charm.numPes()})')
    driver.run()


def verify(blocks, a, dims, shape):
    """Gathers every block's cells and compares them with a serial run, bit for bit."""
    gx, gy, gz = a.grid
    lx, ly, lz = shape
    futures = {(x, y, z): blocks[(x, y, z)].cells(ret=True)
               for x in range(dims[0]) for y in range(dims[1]) for z in range(dims[2])}
    got = np.empty((gz, gy, gx))
    for (x, y, z), f in futures.items():
        got[z * lz:(z + 1) * lz, y * ly:(y + 1) * ly, x * lx:(x + 1) * lx] = f.get()
    ref = grid.serial_reference(gx, gy, gz, a.warmup + a.iters)[1:-1, 1:-1, 1:-1]
    wrong = int(np.count_nonzero(got != ref))
    if wrong:
        print(f'verify: FAILED, {wrong} of {got.size} cells differ from the serial reference')
        return 1
    print(f'verify: ok, all {got.size} cells equal the serial reference after {a.warmup + a.iters} iterations')
    return 0


charm.start(main)
