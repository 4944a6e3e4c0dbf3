"""The chain kernel's protocol (one GPU, GPU scope; ctahw/kernels/ctapipe_sm90_bf16_chain.cu) under the model.

Both designs (tickets, static) pass a thousand or more distinct random-walk schedules; the two-GPU placement with
``.sys`` scopes and the tickets design without the load warp's second proxy fence pass too; every seeded bug of
:data:`~ctasim.protocol.chain.CHAIN_MUTANTS` ends at a violated invariant -- among them the same programs with
producer and consumer layers on two GPUs, where GPU scope is not enough.
"""

import random
from dataclasses import fields

import pytest

from ctasim.protocol.chain import (CHAIN_CORRECT, CHAIN_DEFERRED, CHAIN_MUTANTS, CHAIN_PASSING, CHAIN_RARE_MUTANTS,
                                   CHAIN_SPACES, CHAIN_STATIC, RARE_WITNESSES, ChainRun, ChainSetup, ChainSpace,
                                   topological_order)
from ctasim.protocol.walk import find_violation, replay, search_parallel

CHAIN_WALKS_CI = {"chain-tickets": 1_000, "chain-static": 1_500}
"""Walks per design in a CI run (spread over CHAIN_SPACES; a static walk costs about half a tickets walk); the
``long`` profile walks CHAIN_WALKS_LONG."""
CHAIN_WALKS_LONG = {"chain-tickets": 20_000, "chain-static": 30_000}
DISTINCT_SHARE = 0.97  # a few small setups repeat a schedule; the distinct count is what is asserted

EXPECTED_INVARIANTS = {
    "chain-tickets-cta-scope-red": {1, 3, 5, 6},  # no synchronisation (1, 6), or lost updates (3, 5)
    "chain-static-cta-scope-red": {1, 3, 5, 6},
    "chain-tickets-relaxed-poll": {1, 6},
    "chain-static-relaxed-poll": {1, 6},
    "chain-tickets-no-proxy-fence": {1, 6},
    "chain-tickets-no-take-fence": {1, 6},
    "chain-static-no-load-fence": {1, 6},
    "chain-static-no-syncwarp": {1, 3, 6},  # the TMA lane dispatches before the counter is complete (3)
    "chain-tickets-signal-before-storers": {1, 6},
    "chain-static-signal-before-storers": {1, 6},
    "chain-tickets-2gpu": {1, 6},  # stale data: a .gpu release / acquire pair across GPUs does not synchronise
    "chain-static-2gpu": {1, 6},
    "chain-tickets-ring": {1, 6},  # the same across a ring's GPUs
    "chain-static-not-resident": {5},  # deadlock
    "chain-tickets-deferred-no-flush": {5},  # deadlock: the held signal is the one the next tile waits for
    "chain-tickets-signal-warp-relaxed-handoff": {1, 6},  # the signal warp's release does not cover the stores
    "chain-tickets-signal-warp-before-storers": {1, 6},
    "chain-tickets-ring-signal-warp": {1, 6},
}
RARE_EXPECTED = {"chain-tickets-deferred-wait2": {1, 6}}  # a consumer reads the held tile before its stores land


@pytest.fixture(scope="module")
def seed0(protocol_profile):
    if protocol_profile == "ci":
        return 0
    s = random.SystemRandom().randrange(1 << 30)
    print(f"\nchain walk seed0 = {s}")
    return s


@pytest.mark.parametrize("variant", [CHAIN_CORRECT, CHAIN_STATIC], ids=lambda v: v.name)
def test_chain_design_passes_a_thousand_or_more_distinct_schedules(variant, seed0):
    st = search_parallel(variant.name, CHAIN_SPACES, CHAIN_WALKS_CI[variant.name], seed0=seed0)
    print(f"\n{variant.name}: {st.walks} walks, {st.distinct} distinct schedules, {st.decisions} decisions, "
          f"{st.seconds:.1f} s")
    assert st.violations == 0, f"violation: replay with walk.replay({variant.name!r}, <space>, {st.first_failure})"
    assert st.distinct >= DISTINCT_SHARE * CHAIN_WALKS_CI[variant.name]


@pytest.mark.parametrize("name", [n for n in CHAIN_PASSING if n not in (CHAIN_CORRECT.name, CHAIN_STATIC.name)])
def test_chain_variant_passes(name, seed0):
    """The two-GPU placement with .sys scopes; the tickets design without the load warp's own proxy fence."""
    st = search_parallel(name, ChainSpace(), 300, seed0=seed0)
    assert st.violations == 0, st.first_failure
    assert st.distinct >= DISTINCT_SHARE * 300


@pytest.mark.parametrize("name", list(CHAIN_MUTANTS))
def test_chain_mutant_is_caught(name, seed0):
    st = find_violation(name, ChainSpace(), budget=3_000, seed0=seed0)
    assert st.violations == 1, f"mutant {name} ({CHAIN_MUTANTS[name].bug}) survived {st.walks} schedules"
    seed, setup, message = st.first_failure
    print(f"\n{name}: caught after {st.walks} schedules (seed {seed}, {setup}): {message}")
    invariant = int(message.split("(")[1].split(")")[0])
    assert invariant in EXPECTED_INVARIANTS[name], message


def test_every_chain_mutant_has_an_expected_invariant():
    assert set(EXPECTED_INVARIANTS) == set(CHAIN_MUTANTS)


def test_chain_mutants_differ_from_their_design_in_one_knob():
    knobs = [f.name for f in fields(CHAIN_CORRECT) if f.name not in ("name", "bug")]
    for v in list(CHAIN_MUTANTS.values()) + list(CHAIN_PASSING.values()):
        base = CHAIN_CORRECT if v.design == "tickets" else CHAIN_STATIC
        changed = [k for k in knobs if getattr(v, k) != getattr(base, k)]
        if v.name.endswith("2gpu-sys"):
            assert changed == ["counter_scope", "poll_acquire", "gpus"], v.name
        elif v.name == "chain-tickets-ring":
            assert changed == ["gpus", "placement"], v.name
        elif v.name == "chain-tickets-ring-sys":
            assert changed == ["counter_scope", "poll_acquire", "gpus", "placement"], v.name
        elif v.name == "chain-tickets-ring-sys-deferred":
            assert changed == ["counter_scope", "poll_acquire", "gpus", "placement", "defer_signal"], v.name
        elif v.name in ("chain-tickets-signal-warp-relaxed-handoff", "chain-tickets-signal-warp-before-storers"):
            design = CHAIN_PASSING["chain-tickets-signal-warp"]  # one knob away from the signal-warp design
            one = [k for k in knobs if getattr(v, k) != getattr(design, k)]
            assert one == (["handoff_release"] if "relaxed" in v.name else ["signal_waits_for_storers"]), (v.name, one)
        elif v.name == "chain-tickets-ring-signal-warp":
            assert changed == ["gpus", "placement", "signal_by"], v.name
        elif v.name == "chain-tickets-ring-sys-signal-warp":
            assert changed == ["counter_scope", "poll_acquire", "gpus", "placement", "signal_by"], v.name
        elif v.name == "chain-tickets-no-proxy-fence":
            assert changed == ["take_fence", "load_fence"], v.name
        elif v in (CHAIN_CORRECT, CHAIN_STATIC):
            assert changed == [], v.name
        else:
            assert len(changed) == 1, (v.name, changed)


def test_two_gpu_placement_fails_where_one_gpu_passes(seed0):
    """(e): the schedule that breaks the two-GPU placement is a walk of the same programs; on one GPU the same
    setups pass, and with .sys scopes the two-GPU placement passes."""
    st = find_violation("chain-tickets-2gpu", ChainSpace(), budget=3_000, seed0=seed0)
    assert st.violations == 1
    seed = st.first_failure[0]
    for ok in ("chain-tickets", "chain-tickets-2gpu-sys"):
        assert replay(ok, ChainSpace(), seed, log=None).error is None, ok


def test_orders_are_topological_and_random():
    rng = random.Random(3)
    seen = set()
    for _ in range(200):
        order = topological_order(3, 2, 2, rng)
        seen.add(order)
        pos = {g: i for i, g in enumerate(order)}
        for g in order:
            l, r = g // 4, (g % 4) // 2
            if l:
                assert all(pos[(l - 1) * 4 + r * 2 + c] < pos[g] for c in range(2))
    assert len(seen) > 20


def test_fixed_chain_setups_finish_under_every_drain_policy():
    from ctasim.protocol.system import DrainPolicy

    for v in CHAIN_PASSING.values():
        for land in ("oldest", "newest"):
            for stale in (False, True):
                for setup in (ChainSetup(3, 2, 2, 2, 2, 3), ChainSetup(2, 1, 2, 1, 3, 2, slots=1),
                              ChainSetup(3, 1, 2, 1, 1, 4, order=topological_order(3, 1, 2, random.Random(5)))):
                    assert ChainRun(setup, v).finish(DrainPolicy(land, stale)).finished, (v.name, setup)


@pytest.mark.long
@pytest.mark.parametrize("variant", [CHAIN_CORRECT, CHAIN_STATIC], ids=lambda v: v.name)
def test_long_chain_walks(variant, seed0):
    st = search_parallel(variant.name, CHAIN_SPACES | {"chain-4-layers": ChainSpace(max_layers=4, max_grid=4)},
                         CHAIN_WALKS_LONG[variant.name], seed0=seed0 + 11)
    assert st.violations == 0, st.first_failure
    assert st.distinct >= DISTINCT_SHARE * CHAIN_WALKS_LONG[variant.name]


@pytest.mark.parametrize("rule, names", [
    ("scopes", ["chain-tickets-cta-scope-red", "chain-static-2gpu"]),
    ("proxies", ["chain-tickets-no-take-fence", "chain-static-no-load-fence"]),
])
def test_mutants_are_caught_by_the_model_rule_they_break(rule, names, monkeypatch):
    """With the rule taken out of the model (scopes: every strong pair morally strong, M2; proxies: one proxy, M8)
    the same searches let the mutant through: the catches above come from that rule."""
    import ctasim.protocol.memory as M

    for n in names:
        assert find_violation(n, ChainSpace(), budget=40).violations == 1, n
    if rule == "scopes":
        monkeypatch.setattr(M, "in_scope", lambda scope, a, b: True)
    else:
        load, issue, readable = M.Memory.load, M.Memory.issue, M.Memory.readable
        monkeypatch.setattr(M.Memory, "load", lambda self, t, loc, **kw: load(
            self, t, loc, **{**kw, "proxy": "generic"}))
        monkeypatch.setattr(M.Memory, "issue", lambda self, t, loc, value=None, **kw: issue(
            self, t, loc, value, **{**kw, "proxy": "generic"}))
        monkeypatch.setattr(M.Memory, "readable", lambda self, t, loc, proxy="generic": readable(self, t, loc))
        monkeypatch.setattr(M.Memory, "can_read", lambda self, t, loc, proxy="generic": bool(readable(self, t, loc)))
    for n in names:
        assert find_violation(n, ChainSpace(), budget=40).violations == 0, f"{n} caught without the {rule} rule"


# ---- a deferred signal (a design not built in the kernel: docs/hardware.md, "hiding a ring tile's NVLink stores")


def _executed(name: str, space, seeds, text: str) -> int:
    """How often the walks of ``seeds`` executed an operation whose PTX contains ``text``."""
    n = 0
    for seed in seeds:
        lines: list = []
        replay(name, space, seed, log=lines.append)
        n += sum(text in line for line in lines)
    return n


def test_the_deferred_signal_s_walks_hold_signals():
    """The deferred design's passing walks are not all flushes: some tiles' signals wait for the next tile's end
    (wait_group 1), which is what the wait_group 2 mutant breaks."""
    assert _executed(CHAIN_DEFERRED.name, ChainSpace(), range(40), "wait_group 1") >= 5
    assert _executed(CHAIN_CORRECT.name, ChainSpace(), range(10), "commit_group") == 0  # the kernel's design


@pytest.mark.parametrize("name", list(CHAIN_RARE_MUTANTS))
def test_rare_mutant_breaks_on_its_witness(name):
    """A recorded schedule breaks it (the expected invariant); the correct deferred design on the same walk seed
    does not; it differs from that design in one knob."""
    space, seed = RARE_WITNESSES[name]
    r = replay(name, CHAIN_SPACES[space], seed, log=None)
    assert r.error is not None, f"{name}: its witness (seed {seed}) no longer breaks it"
    assert int(str(r.error).split("(")[1].split(")")[0]) in RARE_EXPECTED[name], str(r.error)
    assert replay(CHAIN_DEFERRED.name, CHAIN_SPACES[space], seed, log=None).error is None
    knobs = [f.name for f in fields(CHAIN_DEFERRED) if f.name not in ("name", "bug")]
    assert [k for k in knobs if getattr(CHAIN_RARE_MUTANTS[name], k) != getattr(CHAIN_DEFERRED, k)] == ["defer_pending"]


LAZY_BULK = 0.98
"""The walks' bias for the rare mutants: bulk stores withheld at 98% of steps (uniform walks hit ``wait_group 2``
about once in 30,000; these in a few percent)."""


@pytest.mark.parametrize("name", list(CHAIN_RARE_MUTANTS))
def test_rare_mutant_is_caught_by_walks_that_keep_bulk_stores_pending(name, seed0):
    st = find_violation(name, ChainSpace(), budget=1_500, seed0=seed0, lazy_bulk=LAZY_BULK)
    assert st.violations == 1, f"mutant {name} survived {st.walks} lazy schedules"
    assert int(st.first_failure[2].split("(")[1].split(")")[0]) in RARE_EXPECTED[name], st.first_failure


@pytest.mark.parametrize("name", ["chain-tickets-deferred", "chain-tickets-ring-sys-deferred", CHAIN_CORRECT.name])
def test_deferred_designs_pass_walks_that_keep_bulk_stores_pending(name, seed0):
    """The same bias finds nothing in the correct deferred designs (nor in the kernel's design)."""
    from ctasim.protocol.walk import search

    st = search(name, ChainSpace(), range(seed0, seed0 + 300), lazy_bulk=LAZY_BULK)
    assert st.violations == 0, st.first_failure
