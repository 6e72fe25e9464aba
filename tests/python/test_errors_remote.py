"""Errors inside entry methods, constructors and reducers (on any PE): a clear message
naming the cause, a traceback, and a non-zero exit of the whole job; an exception in a
ret=True call is re-raised by get() in the caller instead."""
import pytest

from conftest import check_fails, check_ok, run

# case of programs/errors.py -> the texts stderr must hold
CASES = {
    "unpicklable_in_entry": ["Target.take", "cannot be pickled", "lock"],
    "unpicklable_return": ["cannot be pickled", "lambda"],
    "wrong_argument_count": ["TypeError", "take()", "missing 1 required positional argument"],
    "get_in_plain_entry": ["RuntimeError", "Future.get()", "outside a coroutine", "blocking_get"],
    "recv_in_plain_entry": ["RuntimeError", "Channel.recv()", "outside a coroutine", "plain_recv"],
    "recv_host_message_into_numpy": ["Channel.recv", "buffer 0 is not a device array"],
    "bad_array_map": ["BadMap.procNum((3,)) returned", "not a PE in"],
    "raise_in_entry": ["Traceback", "ValueError: boom-42", "Target.explode"],
    "raise_in_constructor": ["Traceback", "RuntimeError: ctor-fail", "constructor"],
    "reducers_disagree": ["different reducers"],
}


@pytest.mark.parametrize("pes", [1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_error_in_entry_fails_clearly(case, pes):
    check_fails(run("errors.py", pes, args=[case]), *CASES[case])


def test_get_of_another_pes_future():
    check_fails(run("errors.py", 2, args=["get_foreign_future"]), "Future.get on PE 1",
                "belongs to PE 0")


@pytest.mark.parametrize("pes", [1, 2, 4])
def test_exception_in_ret_call_is_raised_by_get(pes):
    r = check_ok(run("errors.py", pes, args=["raise_ret"]))
    assert "boom-42" in r.err  # the callee's PE also says what it passed on


@pytest.mark.parametrize("pes", [4])
def test_exception_on_one_pe_ends_every_pe(pes):
    r = check_fails(run("errors.py", pes, args=["raise_in_entry"]), "ValueError: boom-42")
    assert f"PE {pes - 1}" in r.err


@pytest.mark.parametrize("pes", [1, 2])
def test_singleton_chare_contributes_alone(pes):
    # charm4py's singleton chares are one-element arrays: contribute() gives their own value.
    check_ok(run("errors.py", pes, args=["contribute_in_singleton_chare"]))
