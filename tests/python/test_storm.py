"""Many messages at once, and a few programs on 8 PEs (oversubscribed on small hosts)."""
import pytest

from conftest import check_ok, run


@pytest.mark.parametrize("pes", [1, 2, 4, 8])
def test_message_storm(pes):
    check_ok(run("storm.py", pes))


@pytest.mark.parametrize("prog", ["creation.py", "reductions.py", "channels.py"])
def test_on_eight_pes(prog):
    check_ok(run(prog, 8))
