"""The mpi4py peer of pingpong.py: ranks 0 and 1, the same table (size, one-way latency,
bandwidth) and the same round-trip counts. Modes:
  pickle  comm.send/comm.recv of a bytes object (pickled, as a Python object travels);
          --payload list|object: a one-element list holding it, or a common.Payload
  buffer  comm.Send/comm.Recv of a NumPy array (the buffer itself, no pickling)
    mpirun -np 2 python3 mpi4py_pingpong.py --mode pickle [--min 1] [--max 4M] [--iters 1000]
"""
import argparse
import os
import sys
import time

from mpi4py import MPI

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def round_trips(comm, mode, size, count, payload='bytes'):
    """count ping-pongs; the seconds they took (rank 0's view)."""
    rank = comm.Get_rank()
    other = 1 - rank
    if mode == 'pickle':
        data = common.payload(payload, size)
    else:
        import numpy  # only here: the pickle mode needs no NumPy
        data = numpy.ones(size, dtype=numpy.uint8)
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(count):
        if mode == 'pickle':
            if rank == 0:
                comm.send(data, dest=other)
                data = comm.recv(source=other)
            else:
                comm.send(comm.recv(source=other), dest=other)
        elif rank == 0:
            comm.Send(data, dest=other)
            comm.Recv(data, source=other)
        else:
            comm.Recv(data, source=other)
            comm.Send(data, dest=other)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(prog='mpi4py_pingpong.py', description='mpi4py ping-pong between ranks 0 and 1')
    p.add_argument('--mode', choices=['pickle', 'buffer'], default='pickle')
    p.add_argument('--payload', choices=['bytes', 'list', 'object'], default='bytes')
    common.add_size_options(p)
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        sys.exit('mpi4py_pingpong.py needs 2 ranks (mpirun -np 2 ...)')
    # Ranks 0 and 1 only (a communicator of their own, for the barriers); others leave.
    pair = comm.Split(0 if comm.Get_rank() < 2 else MPI.UNDEFINED, comm.Get_rank())
    if pair == MPI.COMM_NULL:
        return
    if pair.Get_rank() == 0:
        common.header(f'mpi4py ping-pong, mode {a.mode}, rank 0 <-> rank 1, {comm.Get_size()} ranks, '
                      f'{MPI.Get_library_version().split(",")[0]}')
    for size in common.sizes(a.min, a.max):
        n = common.iterations_for(size, a.iters)
        if a.warmup:
            round_trips(pair, a.mode, size, a.warmup, a.payload)
        seconds = round_trips(pair, a.mode, size, n, a.payload)
        if pair.Get_rank() == 0:
            common.row(size, n, seconds)


if __name__ == '__main__':
    main()
