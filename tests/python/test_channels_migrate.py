"""Channels that follow migration: host data travels in entry messages, and a channel's
receive queue and sequence numbers move with its element (both ends may move). A ring
exchanges ordered messages while elements move with self.migrate(); an AtSync array's
channels survive the balancer's moves (zero-copy-eligible buffers go inside messages
there); a channel that carried zero-copy data pins its element (clear error); the shape
of charm4py's particle example balances with GreedyRefineLB, and with CHARM4PY_SRC set
charm4py's own examples/particle/particle.py runs with only its import changed."""
import os
import pathlib
import re

import pytest

from conftest import check_fails, check_ok, run, run_cmd, ucharmrun, PYTHON

MOVES = re.compile(r"ucharm LB step \d+ \((\w+)\): (\d+) of (\d+) elements moved")


def moved(r):
    return sum(int(m.group(2)) for m in map(MOVES.search, r.lines) if m)


@pytest.mark.parametrize("pes", [1, 2, 4])
def test_ring_messages_follow_moving_ends(pes):
    r = check_ok(run("channels_migrate.py", pes))
    if pes > 1:
        assert " 0 moves" not in r.out, r.describe()


@pytest.mark.parametrize("pes", [2, 4])
def test_atsync_channels_move_with_the_balancer(pes):
    r = check_ok(run("channels_migrate.py", pes, args=["atsync_zero_copy", "+balancer", "GreedyLB", "+LBDebug"]))
    assert moved(r) > 0, r.describe()


def test_zero_copy_channel_pins_its_element():
    check_fails(run("channels_migrate.py", 2, args=["pinned"]), "cannot migrate", "zero-copy host buffers")


@pytest.mark.parametrize("pes", [2, 4])
def test_particle_shape_balances(pes):
    r = check_ok(run("particles_lb.py", pes, args=["+balancer", "GreedyRefineLB", "+LBDebug"]))
    assert moved(r) > 0, r.describe()


CHARM4PY = os.environ.get("CHARM4PY_SRC")


@pytest.mark.skipif(not CHARM4PY, reason="CHARM4PY_SRC (a charm4py checkout) is not set")
@pytest.mark.parametrize("pes", [2, 4])
def test_charm4py_particle_example_with_import_changed(pes, tmp_path):
    src = pathlib.Path(CHARM4PY) / "examples" / "particle" / "particle.py"
    dst = tmp_path / "particle.py"
    dst.write_text(src.read_text().replace("from charm4py import", "from ucharm import"))
    r = run_cmd([ucharmrun(), "-n", str(pes), "--timeout", "50", PYTHON, str(dst), "8", "4", "300",
                 "+balancer", "GreedyRefineLB", "+LBDebug"])
    assert r.rc == 0 and "Traceback" not in r.err, r.describe()
    assert "Particle simulation done" in r.out and moved(r) > 0, r.describe()
