"""Array elements that migrate (self.migrate, migrated(), setMigratable) while others send
to them: nothing lost or duplicated, each sender's order kept, NumPy state and
self-references intact, constructors not run again; bad migrations fail clearly."""
import pytest

from conftest import check_fails, check_ok, run


@pytest.mark.parametrize("pes", [1, 2, 4, 8])  # 8: oversubscribed on a small machine
def test_migrate_under_message_storm(pes):
    r = check_ok(run("migration.py", pes))
    if pes > 1:
        assert any(" moves, " in ln and not ln.endswith(" 0 moves, now on PE 0") for ln in r.lines), r.describe()


CASES = {
    "pinned": ["not migratable", "setMigratable(False)"],
    "bad_pe": ["PE out of range"],
    "waiting": ["cannot migrate while", "coroutine"],
    "unpicklable": ["cannot migrate", "cannot be pickled", "__getstate__"],
    "group": ["only chare array elements migrate"],
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_migration_fails_clearly(case):
    check_fails(run("migration_errors.py", 2, args=[case]), *CASES[case])
