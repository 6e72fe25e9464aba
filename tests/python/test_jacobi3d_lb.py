"""The Python Jacobi3D (examples/jacobi3d/python) with load balancing: --imbalance makes a
quarter of the blocks heavy, --lb-period makes the blocks call AtSync; GreedyLB moves
blocks (their grids and open halo channels travel with them) and --verify still finds
every cell equal to the serial reference. Bad combinations fail clearly."""
import pathlib
import re

from conftest import run_cmd, ucharmrun, PYTHON

PROG = str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "jacobi3d" / "python" / "jacobi3d.py")
MOVES = re.compile(r"ucharm LB step \d+ \(GreedyLB\): (\d+) of 8 elements moved")
ARGS = ["--grid", "24", "--blocks", "8", "--iters", "12", "--warmup", "2", "--verify"]


def job(pes, *args):
    return run_cmd([ucharmrun(), "-n", str(pes), "--timeout", "50", PYTHON, PROG, *ARGS, *args])


def test_imbalanced_blocks_move_and_verify():
    r = job(2, "--imbalance", "4", "--lb-period", "4", "+balancer", "GreedyLB", "+LBDebug")
    assert r.rc == 0, r.describe()
    moved = [int(m.group(1)) for m in map(MOVES.search, r.out.splitlines()) if m]
    assert len(moved) == 3 and sum(moved) > 0, r.describe()  # AtSync after iterations 4, 8, 12
    assert "verify: ok" in r.out, r.describe()


def test_lb_period_with_direct_gpu_halos_is_an_error():
    r = job(1, "--gpu", "--mode", "direct", "--lb-period", "4")
    assert r.rc != 0 and "--mode staging" in r.err, r.describe()
