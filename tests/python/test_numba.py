"""Numba in programs: jitted kernels in entry methods, coroutines and charm.pool tasks (at
1, 2 and 4 PEs). With CHARM4PY_SRC set (a charm4py checkout), charm4py's LeanMD miniapp
(jitted pair forces, computes inserted from every PE with ckInsert(onPE=), section
multicasts, channels, AtSync load balancing) runs a short simulation, with its import
changed, and reports conservation of energy. Skipped without Numba (tools/setup.sh
installs it)."""
import os
import pathlib

import pytest

from conftest import PES, check_ok, run

pytest.importorskip("numba")

CHARM4PY = os.environ.get("CHARM4PY_SRC")


@pytest.fixture(scope="module")
def numba_cache(tmp_path_factory):
    # numba's cache (cache=True) goes to a folder of this module's tests, not next to the
    # programs; the first job compiles, the others load what it cached
    return {"NUMBA_CACHE_DIR": str(tmp_path_factory.mktemp("numba-cache"))}


@pytest.mark.parametrize("pes", PES)
def test_jitted_kernels(pes, numba_cache):
    check_ok(run("numba_kernels.py", pes, env=numba_cache))


@pytest.mark.skipif(not CHARM4PY, reason="CHARM4PY_SRC (a charm4py checkout) is not set")
@pytest.mark.parametrize("pes, extra", [(1, []), (2, []), (4, ["+balancer", "RotateLB"])])
def test_charm4py_leanmd(pes, extra, tmp_path, numba_cache):
    src = pathlib.Path(CHARM4PY) / "examples" / "miniapps" / "LeanMD" / "main.py"
    prog = tmp_path / "leanmd.py"
    text = src.read_text()
    assert "from charm4py import *" in text
    prog.write_text(text.replace("from charm4py import *", "from ucharm import *"))
    # cells 2x2x2, 8 steps, load balancing from step 3 every 3 steps
    r = run(str(prog), pes, args=["2", "2", "2", "8", "3", "3", *extra], env=numba_cache)
    assert r.rc == 0, r.describe()
    assert "SIMULATION SUCCESSFUL" in r.out, r.describe()
