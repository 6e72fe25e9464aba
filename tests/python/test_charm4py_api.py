"""charm4py API pieces: ArrayMap groups built with arguments, ckInsert(onPE=) (calls that
reach the element before it moves run after its constructor), charm.thisProxy.exec,
@register."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_map_args_insert_onpe_exec(pes):
    check_ok(run("insert_onpe.py", pes))
