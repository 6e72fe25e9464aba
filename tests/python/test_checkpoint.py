"""Checkpoint and restart of Python programs (charm.checkpoint, +restart DIR,
ucharmrun --restart-on-failure): programs/checkpoint.py, a lock-step computation over 1-D,
2-D and 6-D arrays, a group and a singleton chare driven by the main chare (or a main
function), checkpointing every 3 steps. Every restarted run must print the result line of
the uninterrupted run."""
import glob
import os
import subprocess

import pytest

from conftest import JOB_LIMIT_S, PYTHON, PROGRAMS, check_fails, check_ok, run, run_cmd, ucharmrun

STEPS = 10


def result_line(r):
    lines = [ln for ln in r.lines if ln.startswith("result ")]
    assert len(lines) == 1, "no single result line\n" + r.describe()
    return lines[0]


@pytest.fixture(scope="module")
def reference():
    """The uninterrupted run's result (2 PEs; it is the same on any PE count)."""
    return result_line(check_ok(run("checkpoint.py", 2, ["unused-dir", STEPS, "--every", 0])))


def stopped(tmp_path, pes, extra=()):
    d = str(tmp_path / "ck")
    r = run("checkpoint.py", pes, [d, STEPS, "--stop-after", 6, *extra])
    assert r.rc == 0 and "stopped at step 6" in r.lines, "the first run did not stop at its checkpoint\n" + \
        r.describe()
    assert os.path.exists(os.path.join(d, "manifest"))
    return d


@pytest.mark.parametrize("before,after", [(2, 2), (2, 4), (4, 2), (1, 3)])
def test_restart_other_pe_counts(tmp_path, reference, before, after):
    d = stopped(tmp_path, before)
    r = check_ok(run("checkpoint.py", after, [d, STEPS, "+restart", d]))
    assert f"restarted at step 6 (checkpoint of {before} PEs, now {after})" in r.lines, r.describe()
    assert "checkpoint at step 3" not in r.lines, "the restarted run started over\n" + r.describe()
    assert result_line(r) == reference, r.describe()


def test_restart_main_function(tmp_path, reference):
    # A main function (no main chare object): resume= is a functools.partial carrying its state.
    d = stopped(tmp_path, 4, ["--main-function"])
    r = check_ok(run("checkpoint.py", 2, [d, STEPS, "--main-function", "+restart", d]))
    assert "restarted at step 6 (checkpoint of 4 PEs, now 2)" in r.lines, r.describe()
    assert result_line(r) == reference, r.describe()


def test_restart_twice_from_newer_checkpoint(tmp_path, reference):
    # A restarted run writes the next checkpoints into the same directory; a second restart
    # goes on from the newest one.
    d = stopped(tmp_path, 2)
    r = run("checkpoint.py", 3, [d, STEPS, "--stop-after", 9, "+restart", d])
    assert r.rc == 0 and "stopped at step 9" in r.lines, r.describe()
    r = check_ok(run("checkpoint.py", 2, [d, STEPS, "+restart", d]))
    assert "restarted at step 9 (checkpoint of 3 PEs, now 2)" in r.lines, r.describe()
    assert result_line(r) == reference, r.describe()


def launcher_restarts():
    out = subprocess.run([ucharmrun(), "--help"], capture_output=True, text=True).stdout
    return "--restart-on-failure" in out


def test_kill9_automatic_restart(tmp_path, reference):
    if not launcher_restarts():
        pytest.skip("ucharmrun --help has no --restart-on-failure")
    d = str(tmp_path / "ck")
    cmd = [ucharmrun(), "-n", "2", "--timeout", str(JOB_LIMIT_S), "--restart-on-failure", "2", PYTHON,
           str(PROGRAMS / "checkpoint.py"), d, str(STEPS), "--crash-at", "7"]
    r = check_ok(run_cmd(cmd))
    assert "killed by signal 9" in r.err, "PE 1 was not killed\n" + r.describe()
    assert "restarted at step 6 (checkpoint of 2 PEs, now 2)" in r.lines, r.describe()
    assert result_line(r) == reference, r.describe()


@pytest.mark.parametrize("what", ["pe", "manifest"])
def test_corrupted_checkpoint(tmp_path, what):
    d = stopped(tmp_path, 2)
    path = os.path.join(d, "manifest") if what == "manifest" else sorted(glob.glob(os.path.join(d, "pe1.*")))[0]
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x5a]))
    r = run("checkpoint.py", 2, [d, STEPS, "+restart", d])
    check_fails(r, "damaged")
    assert "result " not in r.out, "a damaged checkpoint was loaded\n" + r.describe()


def test_restart_without_resume(tmp_path):
    d = stopped(tmp_path, 2, ["--no-resume"])
    check_fails(run("checkpoint.py", 2, [d, STEPS, "--no-resume", "+restart", d]),
                "the checkpoint names nothing to resume", "charm.checkpoint(dir, resume=...)")


def test_unpicklable_state(tmp_path):
    check_fails(run("checkpoint.py", 2, [str(tmp_path / "ck"), STEPS, "--unpicklable"]),
                "chare Acc cannot be checkpointed: its attribute 'log' (TextIOWrapper) cannot be pickled")
    assert not os.path.exists(tmp_path / "ck" / "manifest")


def test_waiting_coroutine(tmp_path):
    check_fails(run("checkpoint.py", 2, [str(tmp_path / "ck"), STEPS, "--busy"]),
                "element (0,) of Cell cannot be checkpointed while 1 coroutine(s) of it wait")


def test_restart_by_another_program(tmp_path):
    d = stopped(tmp_path, 2)
    check_fails(run("start_function.py", 2, ["+restart", d]),
                f"+restart {d}: a chare's class cannot be found", "Can't get attribute")
