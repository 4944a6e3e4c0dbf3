"""GPU test of the L2-to-SM read-rate probe (ctahw.l2rate): every case lands the buffer's bytes where they belong
(the kernel's own check, and a ProbeError otherwise), the whole grid runs at once, and a multicast case sends the
L2 fewer bytes than land (marked `hw`; skipped with a reason elsewhere)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.hw


def test_every_case_lands_its_bytes_and_the_rates_are_plausible(cp):
    from ctahw import l2rate

    rows = l2rate.measure(reps=2, iters=200)
    assert {r["case"] for r in rows} == {c.name for c in l2rate.CASES}
    assert all(r["mismatched_words"] == 0 and r["sms"] == r["blocks"] for r in rows)
    table = l2rate.summary(rows)
    for r in table:
        assert 500 < r["l2_gbps"] < 50_000, r  # between an HBM's rate / 6 and far past any L2's
    by = {r["case"]: r for r in table}
    assert by["2-all"]["delivered_gbps"] == pytest.approx(2 * by["2-all"]["l2_gbps"])


def test_the_tile_probe_lands_the_gemms_boxes(cp):
    """The row-order first wave by tensor copies: every CTA's last stage sums to its source boxes (else a
    ProbeError), the grid one CTA an SM, and a rate between an HBM's and far past any L2's."""
    from ctahw import l2rate

    cases = (l2rate.TILE_CASES[3], l2rate.TILE_MORE_CASES[2])
    rows = l2rate.measure_tiles(cases=cases, reps=2, iters=200)
    assert [r["case"] for r in rows] == [c.name for c in cases] * 2
    for r in l2rate.summary(rows):
        assert 500 < r["l2_gbps"] < 50_000, r
