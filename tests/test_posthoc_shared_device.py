"""bench/posthoc_shared_device.py: the committed post-hoc tables of the shared-device rings come out of the committed
traces and the model (the active-count table the sharing rule was read from, the ring pair's ticket spread, and the
rule's re-run beside the even split)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.helpers import load_bench

ROOT = Path(__file__).resolve().parent.parent
M = load_bench("posthoc_shared_device")
COMMITTED = ROOT / "bench/results/posthoc-shared-device"


def test_the_active_count_and_spread_tables_are_what_the_script_computes():
    a = M.active_table()
    pd.testing.assert_frame_equal(a, pd.read_csv(COMMITTED / "active.csv"), check_dtype=False)
    # what docs/validation.md reads off it: a kernel computing alone is faster than with every kernel computing
    alone, every = a[a.active == 1], a[a.active == a.kernels]
    assert alone.median_us.max() < 82 < every.median_us.max() and every.median_us.min() > alone.median_us.min()
    s = M.spread_table()
    pd.testing.assert_frame_equal(s, pd.read_csv(COMMITTED / "spread.csv"), check_dtype=False)
    grouped, rows = s[~s.strategy.str.endswith("g1")].rate.dropna(), s[s.strategy.str.endswith("g1")].rate.dropna()
    assert grouped.max() < rows.min()  # row order spreads faster than any group


def test_the_rule_beats_the_even_split_on_the_rows_it_was_read_from():
    t = pd.read_csv(COMMITTED / "sensitivity.csv").set_index("predictor")
    n = {reg: int(reg[-1]) for reg in M.RUNS}
    early = [r for r in M.RUNS if r.startswith("reg41")]  # the pair's 12 rows: a quick re-run of the committed rows
    got = M._summary(M.errors(lambda r: M._profile(n[r]), early), "x")
    assert got["rows"] == 12 and got["mape_pct"] < M._summary(
        M.errors(lambda r: M._profile(n[r], active=False), early), "y")["mape_pct"]
    assert t.loc["active, plans 40-41", "mape_pct"] < t.loc["even split, plans 40-41", "mape_pct"]
