"""AtSync load balancing from Python (Array(C, n, useAtSync=True), self.AtSync(),
resumeFromSync()) with charm4py's +balancer names: an imbalanced program's elements move
(+LBDebug says so) and resume correctly; pinned elements stay; +LBOff; a bad balancer
name fails clearly. With CHARM4PY_SRC set to a charm4py checkout, its migration and AtSync
test programs also run here with only their import line changed."""
import os
import pathlib
import re

import pytest

from conftest import check_fails, check_ok, run, run_cmd, ucharmrun, PYTHON

MOVES = re.compile(r"ucharm LB step \d+ \((\w+)\): (\d+) of (\d+) elements moved")


@pytest.mark.parametrize("pes", [2, 4])
@pytest.mark.parametrize("balancer", ["GreedyLB", "GreedyRefineLB", "MetisLB"])
def test_imbalanced_elements_move_and_resume(pes, balancer):
    r = check_ok(run("lb_atsync.py", pes, args=["+balancer", balancer, "+LBDebug"]))
    steps = [m.groups() for m in map(MOVES.search, r.lines) if m]
    assert steps and all(s[0] == balancer for s in steps), r.describe()
    if balancer == "GreedyLB":  # places every element afresh: some always move
        assert sum(int(s[1]) for s in steps) > 0, r.describe()


def test_pinned_elements_stay():
    r = check_ok(run("lb_atsync.py", 4, args=["pin", "+balancer", "RandCentLB", "+LBDebug"]))
    assert any(MOVES.search(ln) for ln in r.lines), r.describe()


def test_lb_off_resumes_without_balancing():
    r = check_ok(run("lb_atsync.py", 2, args=["+LBOff", "+LBDebug"]))
    assert not any(MOVES.search(ln) for ln in r.lines), r.describe()
    assert r.lines[-2].startswith("0 of 8 elements"), r.describe()


def test_unknown_balancer_fails_clearly():
    check_fails(run("lb_atsync.py", 2, args=["+balancer", "NoSuchLB"]), "NoSuchLB", "no such load balancer")


CHARM4PY = os.environ.get("CHARM4PY_SRC")
PROGRAMS = ["tests/migration/chare_migration.py", "tests/migration/test_migrate.py",
            "tests/migration/test_nonmigratables.py"]


@pytest.mark.skipif(not CHARM4PY, reason="CHARM4PY_SRC (a charm4py checkout) is not set")
@pytest.mark.parametrize("prog", PROGRAMS)
def test_charm4py_program_with_import_changed(prog, tmp_path):
    src = pathlib.Path(CHARM4PY) / prog
    text = src.read_text().replace("from charm4py import", "from ucharm import")
    dst = tmp_path / src.name
    dst.write_text(text)
    for pes in (2, 4):
        r = run_cmd([ucharmrun(), "-n", str(pes), "--timeout", "50", PYTHON, str(dst), "+balancer", "GreedyLB"])
        assert r.rc == 0 and "Traceback" not in r.err, r.describe()
