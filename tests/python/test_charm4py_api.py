"""charm4py API pieces: ArrayMap groups built with arguments, ckInsert(onPE=) (calls that
reach the element before it moves run after its constructor), charm.thisProxy.exec,
@register; the `wait` module (parse_cond_str), _numthreads, ckDoneInserting after
insertions on every PE. With CHARM4PY_SRC set (a charm4py checkout), charm4py's own tests
of these run with only their import changed."""
import os
import pathlib

import pytest

from conftest import PES, check_ok, run

CHARM4PY = os.environ.get("CHARM4PY_SRC")


@pytest.mark.parametrize("pes", PES)
def test_map_args_insert_onpe_exec(pes):
    check_ok(run("insert_onpe.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_wait_module_and_numthreads(pes):
    check_ok(run("wait_numthreads.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_done_inserting_counts_every_pe(pes):
    check_ok(run("insert_many_pes.py", pes))


def _method_args(sig):  # "(self, a, b)" -> {"a": 0, "b": 1}
    names = [s.strip() for s in sig.strip("()").split(",")][1:]
    return {name: i for i, name in enumerate(names)}


@pytest.mark.parametrize("cond, kind, detail", [
    ("self.iterations == iter", "MsgTagCond", ("iterations", 0)),
    ("self.x == x", "MsgTagCond", ("x", 1)),
    ("y    ==    self.x  ", "MsgTagCond", ("x", 2)),
    ("self.x == x + y", "ChareStateMsgCond", None),
    ("x < y", "ChareStateMsgCond", None),
    ("y == y", "ChareStateMsgCond", None),
    ("iter", "ChareStateMsgCond", None),
    ("self.x == x.real", "ChareStateMsgCond", None),
    ("self.x", "ChareStateCond", None),
    ("self.x + self.y == 3", "ChareStateCond", None),
    ("self.x > (self.y + 2/3 + self.z + error)", "ChareStateCond", None),
])
def test_parse_cond_str(cond, kind, detail):
    from ucharm import wait
    c = wait.parse_cond_str(cond, __name__, _method_args("(self, iter, x, y)"))
    assert type(c).__name__ == kind
    if detail:
        assert (c.attrib_name, c.arg_idx) == detail


def test_conditions_evaluate_and_pickle():
    import pickle
    import types

    import ucharm
    from ucharm import wait
    assert ucharm.wait is wait
    obj = types.SimpleNamespace(x=3, y=4)
    args = {"a": 0, "b": 1}
    tag = wait.parse_cond_str("self.x == b", __name__, args)
    msg = wait.parse_cond_str("self.x + a == self.y * b", __name__, args)
    state = wait.parse_cond_str("self.x < LIMIT", __name__, args)
    assert tag.evaluateWhen(obj, (0, 3)) and not tag.evaluateWhen(obj, (3, 0))
    assert msg.evaluateWhen(obj, (1, 1)) and not msg.evaluateWhen(obj, (2, 1))
    assert state.evaluateWhen(obj, (0, 0))
    for c in (tag, msg, state):  # conditions travel with a migrating chare in charm4py
        c2 = pickle.loads(pickle.dumps(c))
        assert type(c2) is type(c) and c2.cond_str == c.cond_str
    assert pickle.loads(pickle.dumps(msg)).evaluateWhen(obj, (1, 1))
    with pytest.raises(SyntaxError, match="self.x =="):
        wait.parse_cond_str("self.x ==", __name__, args)


LIMIT = 5  # read by the condition "self.x < LIMIT" above, from this module's globals


def charm4py_test(tmp_path, rel):
    src = pathlib.Path(CHARM4PY) / "tests" / rel
    dst = tmp_path / src.name
    dst.write_text(src.read_text().replace("from charm4py import", "from ucharm import"))
    return str(dst)


@pytest.mark.skipif(not CHARM4PY, reason="CHARM4PY_SRC (a charm4py checkout) is not set")
@pytest.mark.parametrize("rel, pes", [("thread_entry_methods/test1.py", 2), ("thread_entry_methods/test2.py", 4),
                                      ("thread_entry_methods/test_wait.py", 2), ("when/test_when_syntax.py", 1),
                                      ("when/when_test.py", 4), ("reductions/logical_ops.py", 4),
                                      ("reductions/bench_reductions.py", 2)])
def test_charm4py_tests(rel, pes, tmp_path):
    # when_test.py needs 3 PEs or more (it says so); logical_ops.py's xor results hold for a
    # multiple of 4 PEs (charm4py's test_config.json runs both at 4). bench_reductions.py:
    # 5000 reductions of 160 KiB arrays (seconds, with the heap padding of charm.start).
    r = run(charm4py_test(tmp_path, rel), pes)
    assert r.rc == 0, r.describe()
