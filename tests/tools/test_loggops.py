"""tools/loggops.py: the LogGOPS fit recovers known parameters from synthetic sweeps."""
import importlib.util
import os
import random

import pytest

_path = os.path.join(os.path.dirname(__file__), '..', '..', 'tools', 'loggops.py')
_spec = importlib.util.spec_from_file_location('loggops', _path)
loggops = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(loggops)

SIZES = [8 << i for i in range(20)]  # 8 B - 4 MiB, as run_peers.sh
# Known parameters (us, us/B): a shared-memory-like layer with a rendezvous step at 64 KiB.
L, o, g, G, O, S_COST, S = 0.05, 0.04, 0.06, 0.00025, 0.0001, 1.5, 64 << 10


def sweeps(noise=0.0, outliers=(), seed=1):
    rnd = random.Random(seed)
    jitter = lambda v: v * (1 + rnd.uniform(-noise, noise))
    lat = {s: jitter(L + 2 * o + (G + 2 * O) * s + (S_COST if s >= S else 0.0)) for s in SIZES}
    # streaming: tau(s) = max(g, o) + max(G, O) s, reported as MB/s = B/us
    bw = {s: s / jitter(max(g, o) + max(G, O) * s) for s in SIZES}
    for s in outliers:
        lat[s] *= 20  # a size slowed down by a neighbour's job
    return lat, bw


def test_exact_data_gives_the_parameters():
    p = loggops.fit_loggops(*sweeps())
    assert p['L2o'] == pytest.approx(L + 2 * o, rel=1e-6)
    assert p['g'] == pytest.approx(g, rel=1e-6)
    assert p['G'] == pytest.approx(G, rel=1e-6)
    assert p['O'] == pytest.approx(O, rel=1e-6)
    assert p['GO2'] == pytest.approx(G + 2 * O, rel=1e-6)
    assert p['T0large'] == pytest.approx(L + 2 * o + S_COST, rel=1e-6)
    assert p['Lmin'] == pytest.approx(max(0.0, L + 2 * o - 2 * g), abs=1e-9)


@pytest.mark.parametrize('slow', [64, 1 << 20])
def test_noise_and_one_slow_size_do_not_move_the_fit(slow):
    p = loggops.fit_loggops(*sweeps(noise=0.03, outliers=(slow,)))
    assert p['L2o'] == pytest.approx(L + 2 * o, rel=0.08)
    assert p['g'] == pytest.approx(g, rel=0.08)
    assert p['G'] == pytest.approx(G, rel=0.1)
    assert p['O'] == pytest.approx(O, rel=0.3)


def test_latency_only_layer_gets_what_can_be_fitted():
    lat, _ = sweeps()
    p = loggops.fit_loggops(lat)
    assert p['L2o'] == pytest.approx(L + 2 * o, rel=1e-6)
    assert p['GO2'] == pytest.approx(G + 2 * O, rel=1e-6)
    assert p['g'] is None and p['G'] is None and p['O'] is None and p['Lmin'] is None
    single = loggops.fit_loggops({8: 1.25})
    assert single['L2o'] == 1.25 and single['GO2'] is None


def test_table_and_png_from_a_run_directory(tmp_path):
    lat, bw = sweeps()
    with open(tmp_path / 'raw.tsv', 'w') as f:
        f.write('rep\tlayer\ttest\tsize\tvalue\n')
        for rep in (1, 2, 3):
            for layer, scale in (('converse', 1.2), ('raw', 1.0)):
                for s in SIZES:
                    f.write(f'{rep}\t{layer}\tlat\t{s}\t{lat[s] * scale}\n')
                    f.write(f'{rep}\t{layer}\tbw\t{s}\t{bw[s] / scale}\n')
    png = tmp_path / 'l.png'
    pytest.importorskip('matplotlib')
    assert loggops.main([str(tmp_path), '--png', str(png)]) == 0
    assert png.stat().st_size > 1000
