"""ucharm.ray (charm4py's Ray layer): tasks, actors, object references, get/put/wait."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_ray_api(pes):
    r = check_ok(run("ray_api.py", pes))
    assert "remote function fails raised ValueError: bad input 7" in r.err, r.describe()
