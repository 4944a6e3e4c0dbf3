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
