"""The correct protocol passes every generated schedule; every seeded-bug variant is caught.

The correct protocol runs the eight searches of ``CORRECT_SEARCHES`` with one profile budget each (CI: 8 x 1,250
= 10,000 schedules), spread over the machine's cores.
"""

import pytest

from ctasim.protocol.explore import (CORRECT_SEARCHES, MUTANT_SEARCH, PROFILES, Stats, find_violation,
                                     run_correct_searches)
from ctasim.protocol.programs import CORRECT, MUTANTS, WAIT, WAIT_MUTANTS

CORRECT_SCHEDULES_CI = 10_000


def test_ci_budget_covers_ten_thousand_schedules():
    assert len(CORRECT_SEARCHES) * PROFILES["ci"]["max_examples"] >= CORRECT_SCHEDULES_CI


def test_correct_protocol_passes_every_schedule(protocol_profile, protocol_settings):
    results = run_correct_searches(protocol_profile)
    for r in results:
        print(f"{r.name}: {r.passed} schedules passed, {r.choices} scheduler choices, {r.seconds:.1f} s")
    assert not [r.error for r in results if r.error]
    assert all(r.violations == 0 for r in results)
    assert all(r.passed >= protocol_settings.max_examples for r in results)
    total = sum(r.passed for r in results)
    print(f"correct protocol: {total} schedules, no violation")
    if protocol_profile == "ci":
        assert total >= CORRECT_SCHEDULES_CI


ALL_MUTANTS = {**MUTANTS, **WAIT_MUTANTS}
"""The queue protocol's seeded bugs and the wait consumer's (``WAIT_MUTANTS``), one search each."""
assert len(ALL_MUTANTS) == len(MUTANTS) + len(WAIT_MUTANTS), "a wait mutant shares a queue mutant's name"


@pytest.mark.parametrize("name", list(ALL_MUTANTS))
def test_mutant_is_caught(name, protocol_settings):
    stats = Stats()
    cx = find_violation(ALL_MUTANTS[name], MUTANT_SEARCH, settings_=protocol_settings, stats=stats)
    assert cx is not None, f"mutant {name} ({ALL_MUTANTS[name].bug}) survived {stats.passed} schedules"
    print(f"\n{name}: caught; shortest counterexample ({cx.n_choices} scheduler choices):\n{cx.render()}")
    assert 1 <= cx.error.invariant <= 6
    if name == "wait-early":  # every schedule dispatches at threshold - 1: the checker's counter rule fires
        assert cx.error.invariant == 3, cx.error


def test_mutants_differ_from_correct_in_one_knob():
    from dataclasses import fields

    knobs = [f.name for f in fields(CORRECT) if f.name not in ("name", "bug")]
    for v in MUTANTS.values():
        changed = [k for k in knobs if getattr(v, k) != getattr(CORRECT, k)]
        assert len(changed) == 1, (v.name, changed)


def test_wait_consumer_protocol_passes_the_mutant_search(protocol_settings):
    """The no-queue variant (ctahw's wait consumer): red.release.sys counts, ld.acquire.sys waits."""
    stats = Stats()
    cx = find_violation(WAIT, MUTANT_SEARCH, settings_=protocol_settings, stats=stats)
    assert cx is None, cx.render()
    assert stats.passed >= protocol_settings.max_examples


def test_wait_mutants_differ_from_the_wait_protocol_in_one_knob():
    from dataclasses import fields

    knobs = [f.name for f in fields(WAIT) if f.name not in ("name", "bug")]
    assert [k for k in knobs if getattr(WAIT, k) != getattr(CORRECT, k)] == ["consumer"]
    assert len(WAIT_MUTANTS) == 5
    for v in WAIT_MUTANTS.values():
        changed = [k for k in knobs if getattr(v, k) != getattr(WAIT, k)]
        assert len(changed) == 1, (v.name, changed)
