"""Exit codes (sys.exit / exit / charm.exit from entry methods and main) and
quiescence detection (charm.waitQD)."""
import pytest

from conftest import PES, check_ok, run

CASES = [
    ("sys_exit_entry", 3),        # sys.exit(3) in an entry method on the last PE
    ("exit_entry", 3),            # the builtin exit(3) in an array element
    ("charm_exit_entry", 5),      # charm.exit(5) in an entry method
    ("charm_exit_main", 5),       # charm.exit(5) in the main function
    ("sys_exit_main", 3),         # sys.exit(3) in the main function
    ("sys_exit_zero_entry", 0),   # sys.exit() with no code: success
]


@pytest.mark.parametrize("pes", PES)
@pytest.mark.parametrize("case,code", CASES)
def test_exit_code(case, code, pes):
    r = run("exit_codes.py", pes, args=[case])
    assert r.rc == code, r.describe()


@pytest.mark.parametrize("pes", PES)
def test_wait_qd(pes):
    check_ok(run("quiescence.py", pes))
