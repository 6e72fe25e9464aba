"""One-sided windows from Python (ucharm.Window): put, get, put_notify and wait_notify,
fetch_add, compare_swap, flush on host memory; errors raised in Python."""
import pytest

from conftest import check_ok, run


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("case", ["ops", "errors", "out_of_range"])
def test_window(case, pes):
    check_ok(run("windows.py", pes, args=[case]))
