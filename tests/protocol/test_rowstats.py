"""The row-statistics hand-off of a fused LayerNorm (ctasim.protocol.rowstats) under the weak-memory model.

The correct hand-off (queue and wait consumers, their kernel forms, the chain kernel's two designs) passes the
random walks and the Hypothesis search; every seeded bug of ``ROWSTATS_MUTANTS`` is caught by both; the checker's
invariants (7) and (8) fire on hand-broken traces.  The ``long`` marker runs 10x the walks and the Hypothesis
searches with shrinking (the shortest counterexamples of docs/protocol.md section 9).
"""

import dataclasses
import random
import re
from dataclasses import fields

import pytest

from ctasim.protocol.grid import Chain
from ctasim.protocol.harness import Setup
from ctasim.protocol.invariants import CounterUpdate, InputRead, ProtocolViolation
from ctasim.protocol.rowstats import (ROWSTATS_MUTANTS, ROWSTATS_PASSING, WORDS, RandomChooser, RowStatsChecker,
                                      RowStatsRun, StatsMemory, StatsRead, StatsUpdate, check_rowstats_trace,
                                      find_violation, make_run, run_schedule, search_parallel, space_of, spaces_of)
from ctasim.protocol.rowstats_explore import hypothesis_search, search_settings
from ctasim.protocol.system import DrainPolicy

WALKS_CI = {"rowstats": 600}
"""Random walks per passing variant in a CI run (others: WALKS_OTHERS), shared over the variant's spaces."""
WALKS_OTHERS = 250
HYPOTHESIS_PASSING_CI = 100  # examples of each passing variant
HYPOTHESIS_MUTANT_CI = 1_000  # the budget of a mutant search; it stops at the first violation

EXPECTED_INVARIANTS = {
    "rowstats-add-after-signal": {7},
    "rowstats-wait-add-after-signal": {7},
    "rowstats-chain-add-after-signal": {7},
    "rowstats-no-signal-fence": {1, 6, 7},  # tile data and statistics travel on the same release
    "rowstats-wait-relaxed-red": {1, 6, 7},
    "rowstats-plain-rmw": {7, 8},  # a lost update lands (8) before a consumer can read it (7)
    "rowstats-chain-plain-rmw": {7, 8},
    "rowstats-cta-scope-red": {7, 8},
    "rowstats-wait-read-before-acquire": {7},
    "rowstats-chain-read-before-acquire": {7},
    "rowstats-chain-ring-add-after-signal": {7},
    "rowstats-chain-ring-read-before-acquire": {7},
    "rowstats-single-buffer": {7},
}


def invariant_of(message: str) -> int:
    return int(re.search(r"invariant \((\d+)\)", message).group(1))


@pytest.fixture(scope="module")
def seed0(protocol_profile):
    if protocol_profile == "ci":
        return 0
    s = random.SystemRandom().randrange(1 << 30)
    print(f"\nrowstats walk seed0 = {s}")
    return s


# ------------------------------------------------------------------------------------------------ the checker
SETUP = Setup(Chain(1, (2, 1), 1), epochs=3, slots=(2, 1))


@pytest.fixture(scope="module")
def good():
    run = RowStatsRun(SETUP)
    assert run.finish().finished
    return list(run.trace)


def check(trace):
    return check_rowstats_trace(trace, 1, (2, 1), 1, 3)


def first(trace, kind, **match):
    for i, ev in enumerate(trace):
        if isinstance(ev, kind) and all(getattr(ev, k) == v for k, v in match.items()):
            return i
    raise LookupError(kind)


def fires(trace, invariant, words=""):
    with pytest.raises(ProtocolViolation) as info:
        check(trace)
    assert info.value.invariant == invariant, str(info.value)
    assert words in str(info.value), str(info.value)


def test_correct_trace_passes(good):
    assert check(good).ended
    assert sum(isinstance(ev, StatsRead) for ev in good) == 3 * len(WORDS)
    assert any(isinstance(ev, StatsUpdate) and not ev.rmw for ev in good)  # the resets of the other buffer


def test_7_stats_read_lacking_a_contribution(good):
    i = first(good, StatsRead)
    fires(good[:i] + [dataclasses.replace(good[i], value=0b10)] + good[i + 1:], 7, "producer tiles [(0, 0)]")


def test_7_stats_read_before_the_counter_completed(good):
    i = first(good, StatsRead, epoch=1)
    j = first(good, CounterUpdate, epoch=1)
    fires(good[:j] + [good[i]] + [ev for k, ev in enumerate(good[j:], j) if k != i], 7, "0 of 2 producer tiles")


def test_7_tile_completes_without_reading_the_stats(good):
    i = first(good, StatsRead, word="rsq")
    fires(good[:i] + good[i + 1:], 7, "completed without reading rsq")


def test_8_lost_update(good):
    i = first(good, StatsUpdate, value=3)  # the second add: 0b10 -> 0b11; make it overwrite instead
    fires(good[:i] + [dataclasses.replace(good[i], value=1)] + good[i + 1:], 8, "lost update")


def test_8_adds_onto_a_buffer_never_reset(good):
    resets = [i for i, ev in enumerate(good) if isinstance(ev, StatsUpdate) and not ev.rmw and ev.buffer == 0]
    fires([ev for i, ev in enumerate(good) if i not in resets], 8, "not reset")


def test_8_reset_erases_partial_sums(good):
    i = first(good, StatsUpdate, epoch=1, rmw=True)
    reset = dataclasses.replace(good[i], value=0, rmw=False)
    fires(good[:i + 1] + [reset] + good[i + 1:], 8, "reset while")


# ------------------------------------------------------------------------------------------------ the programs
def _ops_by_thread(run):
    """Run to the end under the default drain; each thread's operations in program order."""
    sys_ = run.system
    ops, step = {}, sys_.step

    def record(thr, pick=0, defer=False):
        key = (thr.unit.gpu, thr.unit.epoch, thr.unit.index, thr.index)
        seq = ops.setdefault(key, [])
        if not seq or seq[-1] is not thr.op:  # a spin or an atomic's return steps the same operation again
            seq.append(thr.op)
        return step(thr, pick, defer)

    sys_.step = record
    assert run.finish(DrainPolicy()).finished
    return ops


@pytest.mark.parametrize("name", [n for n in ROWSTATS_PASSING])
def test_statistics_ops_are_added_to_the_unchanged_protocol(name):
    """With one tile per layer every thread's program is fixed: the row-statistics run issues the base protocol's
    operations, in the same order, plus the statistics operations (red.add before the signal barrier, the reads
    before the first input load, the resets)."""
    from ctasim.protocol.chain import ChainRun, ChainSetup
    from ctasim.protocol.harness import Run

    v = ROWSTATS_PASSING[name]
    setup = ChainSetup(3, 1, 1, 1, 2, 1) if v.chain else Setup(Chain(1, (1, 1, 1), 2), epochs=2)
    base = (ChainRun if v.chain else Run)(setup, v.base)
    got, want = _ops_by_thread(make_run(setup, v)), _ops_by_thread(base)
    assert got.keys() == want.keys()
    added = []
    for key in want:
        assert [op for op in got[key] if getattr(op, "loc", ("",))[0] not in WORDS] == want[key], key
        added += [op.ptx() for op in got[key] if getattr(op, "loc", ("",))[0] in WORDS]
    scope = v.scope
    assert f"red.add.relaxed.{scope} [rsum@gpu1[0,0]], 1" in added and "ld.weak [rsq@gpu2[0,1]]" in added
    assert f"st.relaxed.{scope} [rsum@gpu1[0,1]], 0" in added  # launch 0 resets launch 1's buffer


def test_stats_words_land_in_issue_order_because_a_floor_holds_one_write(monkeypatch):
    """Why :class:`StatsMemory` exists.  A schedule that keeps the adds in flight and lands the later-issued one
    first breaks the correct program on the plain model: the consumer's view keeps one of the two unordered
    pending adds as its floor and reads it while the other, which also happened before the read, is in flight
    (PTX forbids that read).  If memory.py's views learn to hold several pending writes, this test fails: then
    drop the issue-order landing."""
    def adversarial(run, rng):
        sys_ = run.system
        try:
            while not sys_.finished():
                acts = sys_.actions()
                stats = [a for a in acts if a[0] == "land" and a[1].loc[0] in WORDS]
                other = [a for a in acts if a not in stats]
                if stats and (not other or rng.random() < 0.05):
                    sys_.apply(max(stats, key=lambda a: a[1].wid))  # the newest-issued add first
                else:
                    sys_.apply(rng.choice(other))
        except ProtocolViolation as err:
            return err
        return None

    setup = Setup(Chain(1, (2, 1), 1), slots=(2, 1))
    assert all(adversarial(make_run(setup, "rowstats"), random.Random(s)) is None for s in range(20))
    from ctasim.protocol.memory import Memory

    monkeypatch.setattr(StatsMemory, "landable", Memory.landable)
    errors = [adversarial(make_run(setup, "rowstats"), random.Random(s)) for s in range(20)]
    assert any(e is not None and e.invariant == 7 for e in errors)


# ------------------------------------------------------------------------------------------------ searches
@pytest.mark.parametrize("name", list(ROWSTATS_PASSING))
def test_variant_passes_the_random_walks(name, seed0):
    n = WALKS_CI.get(name, WALKS_OTHERS)
    st = search_parallel(name, spaces_of(name), n, seed0=seed0)
    print(f"\n{name}: {st.walks} walks, {st.distinct} distinct schedules, {st.decisions} decisions, {st.seconds:.1f} s")
    assert st.violations == 0, f"replay with rowstats.replay({name!r}, <seed>, <space>): {st.first_failure}"
    assert st.distinct >= 0.97 * n


@pytest.mark.parametrize("name", list(ROWSTATS_PASSING))
def test_variant_passes_the_hypothesis_search(name, protocol_profile):
    found = hypothesis_search(name, search_settings(HYPOTHESIS_PASSING_CI, protocol_profile))
    assert found.error is None, found.render()
    assert found.passed >= HYPOTHESIS_PASSING_CI


@pytest.mark.parametrize("name", list(ROWSTATS_MUTANTS))
def test_mutant_is_caught_by_the_hypothesis_search(name, protocol_profile):
    found = hypothesis_search(name, search_settings(HYPOTHESIS_MUTANT_CI, protocol_profile))
    assert found.error is not None, f"{name} ({ROWSTATS_MUTANTS[name].bug}) survived {found.passed} schedules"
    print(f"\n{name}: caught after {found.passed} passing schedules: {found.error}")
    assert found.error.invariant in EXPECTED_INVARIANTS[name], str(found.error)


@pytest.mark.parametrize("name", list(ROWSTATS_MUTANTS))
def test_mutant_is_caught_by_the_random_walks(name, seed0):
    st = find_violation(name, budget=2_000, seed0=seed0)
    assert st.violations == 1, f"{name} ({ROWSTATS_MUTANTS[name].bug}) survived {st.walks} schedules"
    assert invariant_of(st.first_failure[2]) in EXPECTED_INVARIANTS[name], st.first_failure


@pytest.mark.parametrize("name", ["rowstats-no-signal-fence", "rowstats-wait-relaxed-red"])
def test_release_mutants_are_caught_by_the_statistics_alone(name, seed0):
    """With the tile-data invariants (1), (6) switched off, the statistics invariant (7) still catches the
    release that was removed: the statistics need the release as much as the data do."""

    class StatsOnly(RowStatsChecker):
        def _on_InputRead(self, ev: InputRead) -> None:
            self._inputs[ev.cta].add((ev.src, ev.elem))

    for seed in range(seed0, seed0 + 2_000):
        rng = random.Random(seed)
        setup = space_of(name).draw(rng)
        run = make_run(setup, name)
        ch = setup.chain
        run.checker = StatsOnly(ch.m_tiles, ch.n_tiles, ch.elems, setup.epochs, queue=run.checker.queue)
        err = run_schedule(run, RandomChooser(rng))[2]
        if err is not None:
            assert err.invariant == 7, str(err)
            return
    raise AssertionError(f"{name} survived 2,000 schedules without the data invariants")


def test_every_mutant_has_an_expected_invariant():
    assert set(EXPECTED_INVARIANTS) == set(ROWSTATS_MUTANTS)


def test_mutants_differ_from_their_variant_in_one_knob():
    knobs = [f.name for f in fields(ROWSTATS_PASSING["rowstats"]) if f.name not in ("name", "bug", "base")]
    for v in ROWSTATS_MUTANTS.values():
        def distance(b):
            base_knobs = [f.name for f in fields(b.base) if f.name not in ("name", "bug")]
            if type(b.base) is not type(v.base):
                return 99
            return (sum(getattr(v, k) != getattr(b, k) for k in knobs)
                    + sum(getattr(v.base, k) != getattr(b.base, k) for k in base_knobs))
        assert min(distance(b) for b in ROWSTATS_PASSING.values()) == 1, v.name


# ------------------------------------------------------------------------------------------------ long
@pytest.mark.long
@pytest.mark.parametrize("name", list(ROWSTATS_PASSING))
def test_long_walks(name, seed0):
    n = 10 * WALKS_CI.get(name, WALKS_OTHERS)
    st = search_parallel(name, spaces_of(name), n, seed0=seed0 + 13)
    print(f"\n{name}: {st.walks} walks, {st.distinct} distinct schedules, {st.seconds:.1f} s")
    assert st.violations == 0, st.first_failure


@pytest.mark.long
@pytest.mark.parametrize("name", list(ROWSTATS_PASSING))
def test_long_hypothesis_search_of_the_correct_variants(name):
    found = hypothesis_search(name, search_settings(1_250, "ci"))
    assert found.error is None, found.render()


@pytest.mark.long
@pytest.mark.parametrize("name", list(ROWSTATS_MUTANTS))
def test_long_hypothesis_shrinks_each_mutant(name):
    found = hypothesis_search(name, search_settings(HYPOTHESIS_MUTANT_CI, "ci", shrink=True))
    assert found.error is not None
    print("\n" + found.render())
    assert found.error.invariant in EXPECTED_INVARIANTS[name]
