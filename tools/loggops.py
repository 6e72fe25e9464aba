#!/usr/bin/env python3
"""LogGOPS parameters of every layer and peer from benchmarks/run_peers.sh's sweeps.

    .venv/bin/python tools/loggops.py OUT [--png docs/loggops.png]

OUT is the directory run_peers.sh wrote: raw.tsv holds one line per measurement
(rep, layer, test, size, value); the medians over the repetitions are used. Two kinds of
sweep per layer, at every power of two from 8 B to 4 MiB:
  lat  ping-pong, one-way latency T(s) in us (half the round trip);
  bw   streaming, windows of 64 messages, MB/s (1e6 B/s): time per message tau(s) = s / bw.

The model (LogGOPS, Hoefler et al.; seed 000 of this project uses its LogGOP part): a message
of s bytes costs the sender o + s*O of CPU time, the wire L + s*G (G: gap per byte), the
receiver o + s*O; two messages leave at least g + s*G apart; above the rendezvous threshold
S a message waits for a handshake. Hence

  ping-pong   T(s)   = (L + 2o) + (G + 2O) * s      (+ a handshake above S)
  streaming   tau(s) = max(g, o) + max(G, O) * s     (sender and receiver overlap)

How each parameter is obtained:
  L + 2o   the intercept of a robust line (Theil-Sen: median of pairwise slopes, median
           intercept; one slow size does not move it) through T(s) over the small sizes
           (s <= --small-max, 256 B by default), its slope kept within [0, G + 2O].
           L and o cannot be separated by these two measurements: both enter the
           ping-pong only as L + 2o, and the stream shows only max(g, o). What follows is
           a bound: o <= g gives L >= (L + 2o) - 2g (printed as "L >=").
  g        the same kind of intercept through tau(s) over the small sizes: the smallest
           interval between messages of a stream, i.e. max(g, o) (o is not separable).
  G        slope of a robust line through tau(s) over the large sizes (s >= --large-min,
           256 KiB by default):
           max(G, O), taken as G (a stream is limited by the per-byte gap; the per-byte
           overheads of the two ends overlap in a stream but add up in a ping-pong).
  O        from the ping-pong's robust slope over the large sizes, G + 2O: O = (slope - G) / 2,
           0 when the stream is slower per byte than the ping-pong (then O is hidden).
  S        not fitted: the handshake shows only as a step in T(s); the large-size line's
           intercept (printed "T0 large") minus L + 2o is its cost.
A layer with only a ping-pong sweep (group, array) gets L + 2o and G + 2O; one with a single
size (the Python rows) gets T(8 B) only.
"""
import argparse
import collections
import os
import statistics
import sys

# Layers: (name in raw.tsv, label, the peer it is measured against or None)
LAYERS = [
    ('converse', 'ucharm Converse', 'raw'),
    ('raw', 'raw UCX (ucx_perftest)', None),
    ('group', 'ucharm group', 'converse'),
    ('array', 'ucharm array', 'converse'),
    ('ampi', 'ucharm AMPI', 'ompi_ucx'),
    ('ompi_ucx', 'OpenMPI pml ucx', None),
    ('ompi_ob1', 'OpenMPI ob1 + vader', None),
    ('py_proxy', 'ucharm Python proxy call', 'mpi4py'),
    ('py_channel', 'ucharm Python Channel', 'mpi4py'),
    ('mpi4py', 'mpi4py pickled', None),
]


def line_fit(points):
    """Robust line through (x, y) points (Theil-Sen: the median of the pairwise slopes, then
    the median intercept; one slow run on a shared machine does not tilt it):
    (intercept, slope); one point: (y, None)."""
    if not points:
        return None, None
    if len(points) == 1:
        return points[0][1], None
    slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(points)
              for x2, y2 in points[i + 1:] if x2 != x1]
    if not slopes:
        return statistics.median(y for _, y in points), None
    slope = statistics.median(slopes)
    return statistics.median(y - slope * x for x, y in points), slope


def intercept(points, slope_max):
    """The small-size constant: the intercept of a robust line whose slope is kept within
    [0, slope_max] (the per-byte cost of the large sizes bounds that of the small ones)."""
    if not points:
        return None
    c, slope = line_fit(points)
    if slope is None:
        return c
    slope = max(0.0, slope if slope_max is None else min(slope, slope_max))
    return statistics.median(y - slope * x for x, y in points)


def fit_loggops(lat, bw=None, small_max=256, large_min=256 << 10):
    """Fit one layer. lat: {size: one-way us}; bw: {size: MB/s} or None.

    Returns a dict (times in us, per-byte costs in us/B; None where not obtainable):
      L2o      L + 2o          (ping-pong intercept, small sizes)
      GO2      G + 2O          (ping-pong slope, large sizes)
      T0large  intercept of the large-size ping-pong line (L + 2o + the handshake)
      g        max(g, o)       (stream intercept, small sizes)
      G        max(G, O)       (stream slope, large sizes)
      O        (GO2 - G) / 2, at least 0
      Lmin     L + 2o - 2g, at least 0: a lower bound of L (o <= g)
    """
    large = [(s, t) for s, t in sorted(lat.items()) if s >= large_min]
    T0large, GO2 = line_fit(large) if len(large) >= 2 else (None, None)
    L2o = intercept([(s, t) for s, t in sorted(lat.items()) if s <= small_max], GO2)
    r = dict(L2o=L2o, GO2=GO2, T0large=T0large, g=None, G=None, O=None, Lmin=None)
    if bw:
        tau = {s: s / v for s, v in bw.items() if v > 0}
        stream_large = [(s, t) for s, t in sorted(tau.items()) if s >= large_min]
        _, G = line_fit(stream_large) if len(stream_large) >= 2 else (None, None)
        g = intercept([(s, t) for s, t in sorted(tau.items()) if s <= small_max], G)
        r['g'], r['G'] = g, G
        if G is not None and GO2 is not None:
            r['O'] = max(0.0, (GO2 - G) / 2)
        if g is not None and L2o is not None:
            r['Lmin'] = max(0.0, L2o - 2 * g)
    return r


def model_latency(p, s, large_min=256 << 10):
    """One-way ping-pong time of the fitted model at size s: L + 2o + (G + 2O) s below
    large_min, the large-size line (handshake included) from there."""
    if p['GO2'] is None or p['T0large'] is None:
        return p['L2o']
    return (p['L2o'] if s < large_min else p['T0large']) + p['GO2'] * s


def load_medians(out):
    """raw.tsv -> {(layer, test): {size: median}}."""
    vals = collections.defaultdict(list)
    with open(os.path.join(out, 'raw.tsv')) as f:
        header = f.readline().split()
        if header[:5] != ['rep', 'layer', 'test', 'size', 'value']:
            sys.exit(f'loggops.py: {out}/raw.tsv is not run_peers.sh output (header {header})')
        for line in f:
            parts = line.split()
            if len(parts) == 5:
                vals[(parts[1], parts[2], int(parts[3]))].append(float(parts[4]))
    med = collections.defaultdict(dict)
    for (layer, test, size), v in vals.items():
        med[(layer, test)][size] = statistics.median(v)
    return med


def fmt(v, scale=1.0, digits=3):
    return '-' if v is None else f'{v * scale:.{digits}g}'


def table(fits, med):
    rows = ['| layer | L + 2o (µs) | g = max(g, o) (µs) | L ≥ (µs) | G (ns/B) | O (ns/B) '
            '| G + 2O ping-pong (ns/B) | stream peak (GB/s) |',
            '|---|---:|---:|---:|---:|---:|---:|---:|']
    for name, label, peer in LAYERS:
        if name not in fits:
            continue
        p = fits[name]
        bw = med.get((name, 'bw'))
        peak = max(bw.values()) / 1e3 if bw else None
        l2o = fmt(p['L2o'])
        if len(med.get((name, 'lat'), {})) == 1:
            l2o += ' (T at 8 B)'
        rows.append(f"| {label}{'' if peer is None else ' (vs ' + dict((n, l) for n, l, _ in LAYERS)[peer] + ')'} "
                    f"| {l2o} | {fmt(p['g'])} | {fmt(p['Lmin'])} | {fmt(p['G'], 1e3)} | {fmt(p['O'], 1e3)} "
                    f"| {fmt(p['GO2'], 1e3)} | {fmt(peak)} |")
    return '\n'.join(rows)


def plot(fits, med, png, large_min=256 << 10):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    colors = dict(converse='tab:blue', raw='black', group='tab:green', array='tab:olive', ampi='tab:red',
                  ompi_ucx='tab:purple', ompi_ob1='tab:brown')
    for name, label, peer in LAYERS:
        lat = med.get((name, 'lat'), {})
        if len(lat) < 2 or name not in colors:
            continue
        xs = sorted(lat)
        style = '-' if peer is not None else '--'
        ax1.plot(xs, [lat[s] for s in xs], style, marker='o', ms=3, color=colors[name], label=label)
        ax1.plot(xs, [model_latency(fits[name], s, large_min) for s in xs], ':', color=colors[name], lw=0.8)
        bw = med.get((name, 'bw'), {})
        if bw:
            xs = sorted(bw)
            ax2.plot(xs, [bw[s] for s in xs], style, marker='o', ms=3, color=colors[name], label=label)
    ax1.set(xscale='log', yscale='log', xlabel='message size (B)', ylabel='one-way latency (µs)',
            title='ping-pong (dotted: LogGOPS fit)')
    ax2.set(xscale='log', yscale='log', xlabel='message size (B)', ylabel='MB/s',
            title='streaming, windows of 64')
    for ax in (ax1, ax2):
        ax.set_xscale('log', base=2)
        ax.grid(True, which='both', alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle('ucharm layers (solid) against their peers (dashed)')
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('out', help="run_peers.sh's OUT directory (raw.tsv)")
    ap.add_argument('--png', help='draw latency and bandwidth curves to this PNG')
    ap.add_argument('--small-max', type=int, default=256, help='largest size of the small-message fits (B)')
    ap.add_argument('--large-min', type=int, default=256 << 10, help='smallest size of the per-byte fits (B)')
    a = ap.parse_args(argv)
    if not os.path.exists(os.path.join(a.out, 'raw.tsv')):
        sys.exit(f'loggops.py: no raw.tsv in {a.out} (run benchmarks/run_peers.sh with OUT={a.out} first)')
    med = load_medians(a.out)
    fits = {}
    for name, _, _ in LAYERS:
        lat = med.get((name, 'lat'))
        if lat:
            fits[name] = fit_loggops(lat, med.get((name, 'bw')), a.small_max, a.large_min)
    if not fits:
        sys.exit(f'loggops.py: no latency sweep in {a.out}/raw.tsv')
    print(table(fits, med))
    print(f'\nFits: small sizes <= {a.small_max} B, per-byte slopes from >= {a.large_min} B; '
          'L and o are not separable here (see the docstring).')
    if a.png:
        plot(fits, med, a.png, a.large_min)
        print(f'wrote {a.png}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
