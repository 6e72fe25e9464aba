"""What the Python ping-pongs share with each other and with the C++ ones
(benchmarks/common/sizes.h, benchmarks/converse/pingpong.cpp): byte counts with k/M
suffixes, fewer round trips for large sizes, and the output table."""
import argparse


class Payload:
    """A small object that every Python transport pickles (--payload object): one
    attribute holding the bytes."""

    def __init__(self, data):
        self.data = data


def payload(kind, size):
    """The object a ping-pong sends: the bytes, a list holding them, or a Payload."""
    data = b'\1' * size
    if kind == 'list':
        return [data]
    if kind == 'object':
        return Payload(data)
    return data


def parse_bytes(text):
    """'8', '64k', '4M' -> bytes."""
    mult = {'k': 1 << 10, 'K': 1 << 10, 'm': 1 << 20, 'M': 1 << 20}.get(text[-1:], 1)
    digits = text[:-1] if mult > 1 else text
    if not digits.isdigit():
        raise argparse.ArgumentTypeError(f"bad byte count '{text}' (a number, optionally with k or M)")
    return int(digits) * mult


def iterations_for(size, iters):
    # As sizes.h: a whole table stays a few seconds long.
    if size >= 1 << 20:
        return max(iters // 100, 50)
    if size >= 64 << 10:
        return max(iters // 10, 200)
    return iters


def sizes(lo, hi):
    s = lo
    while True:
        yield s
        if s >= hi:
            return
        s = 1 if s == 0 else s * 2


def add_size_options(p, iters=1000, warmup=100):
    p.add_argument('--min', type=parse_bytes, default=1, help='smallest message in bytes (suffix k or M)')
    p.add_argument('--max', type=parse_bytes, default=4 << 20, help='largest message in bytes (suffix k or M)')
    p.add_argument('--iters', type=int, default=iters, help='round trips per small size')
    p.add_argument('--warmup', type=int, default=warmup, help='round trips before timing, per size')


def header(title):
    print(f'# {title}')
    print(f'{"# size(B)":<12} {"latency(us)":>14} {"bandwidth(MB/s)":>16}', flush=True)


def row(size, round_trips, seconds):
    """One-way latency is half the round trip; bandwidth is size / one-way latency."""
    us = seconds * 1e6 / (2.0 * round_trips)
    print(f'{size:<12} {us:14.3f} {size / us:16.2f}', flush=True)
