"""GPU test of the L2 survival probe (ctahw.l2probe): a line another SM read stays in L2 while little streams past
it and is gone after three L2s of it (marked `hw`; skipped with a reason elsewhere)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.hw


def test_the_probe_sees_a_kept_target_and_a_flushed_one(cp):
    from ctahw import l2probe

    rows, raw = l2probe.measure(fractions=(0.0, 0.125, 3.0), reps=2, touches=(1,))
    by = {(r["kind"], r["b_l2"]): [] for r in rows}
    for r in rows:
        by[(r["kind"], r["b_l2"])].append(r["survival"])
    assert min(by[("trial", 0.0)]) > 0.9 and min(by[("trial", 0.125)]) > 0.9  # 1/8 of the L2 streamed: kept
    assert max(by[("trial", 3.0)]) < 0.1 and max(by[("cold", 0.0)]) < 0.1  # three L2s streamed, or never touched
    assert 200 < rows[0]["threshold_cycles"] < 2000 and all(len(v) == rows[0]["lines"] for v in raw.values())


def test_a_hot_set_that_fits_with_the_target_leaves_it_in_l2(cp):
    """Plan 57's hot set: 1/8 of the L2 re-read through 1/8 of an L2 streamed keeps a target that nothing pushes out
    under either reading (taken-in or touched), and every trial row records the hot set."""
    from ctahw import l2probe

    rows, _ = l2probe.measure(fractions=(0.0, 0.125, 3.0), reps=2, touches=(1,), hot_bytes=7864320, hot_rounds=4)
    kept = [r["survival"] for r in rows if r["kind"] == "trial" and r["b_l2"] == 0.125]
    gone = [r["survival"] for r in rows if r["kind"] == "trial" and r["b_l2"] == 3.0]
    assert min(kept) > 0.9 and max(gone) < 0.1 and {r["hot_bytes"] for r in rows} == {7864320}
