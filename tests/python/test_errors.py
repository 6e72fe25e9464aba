"""Bad input at the call site (the main function): a clear Python exception message on
stderr naming the cause, and a non-zero exit (never a hang). Errors inside entry
methods: test_errors_remote.py."""
import pytest

from conftest import check_fails, run

# case of programs/errors.py -> the texts stderr must hold
CASES = {
    "unpicklable_lambda": ["TypeError", "Target.take", "cannot be pickled", "lambda"],
    "unpicklable_lock": ["TypeError", "Target.take", "cannot be pickled", "lock"],
    "unknown_method_broadcast": ["AttributeError", "Target", "no entry method 'nosuch'"],
    "unknown_method_element": ["AttributeError", "Target", "no entry method 'nosuch'"],
    "array_index_out_of_bounds": ["IndexError", "index 4", "bounds (4,)"],
    "array_index_negative": ["IndexError", "index -1", "bounds (4,)"],
    "array_index_dimensions": ["IndexError", "(1, 2)"],
    "group_index_out_of_range": ["IndexError", "group element", "out of range"],
    "chare_on_pe_out_of_range": ["onPE=", "out of range"],
    "not_a_chare_class": ["TypeError", "not a subclass of Chare"],
    "array_too_many_dimensions": ["1 to 6"],
    "insert_into_fixed_array": ["ckInsert", "fixed size"],
    "local_chare_class": ["Local", "module level"],
    "map_not_an_array_map": ["TypeError", "map=", "ArrayMap"],
    "raise_in_main": ["Traceback", "KeyError: 'main-fail'", "main function"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_call_fails_clearly(case):
    check_fails(run("errors.py", 2, args=[case]), *CASES[case])


@pytest.mark.parametrize("case", ["unpicklable_lambda", "group_index_out_of_range"])
def test_bad_call_fails_clearly_on_one_pe(case):
    check_fails(run("errors.py", 1, args=[case]), *CASES[case])
