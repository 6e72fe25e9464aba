"""charm4py's sections (charm.split with elems= and section_func=, proxy[slices],
charm.combine, Group(C, onPEs=...)): broadcasts reach members once, reductions over a
section, also while its members migrate; arrays of 4 to 6 dimensions."""
import pytest

from conftest import PES, check_ok, run


@pytest.mark.parametrize("pes", PES)
def test_sections(pes):
    check_ok(run("sections.py", pes))


@pytest.mark.parametrize("pes", [1, 3])
def test_arrays_of_up_to_six_dimensions(pes):
    check_ok(run("array_6d.py", pes))


@pytest.mark.parametrize("pes", PES)
def test_group_slices_section_allreduce_and_combined_sections(pes):
    # g[::2], slicing an inserted array, allreduce(section=), a section method as a
    # reduction target, issec/section, combine of a group and an array
    check_ok(run("sections_more.py", pes))
