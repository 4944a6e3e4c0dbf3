"""bench/posthoc_h100_rounds.py: each order's mainloop over groups of 8's, round by round, on the H100s and the H200s
(the committed tables are what the committed traces give; the rounds and spans of a made-up run) (no GPU)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def ph():
    return load_bench("posthoc_h100_rounds")


def test_the_committed_tables_are_what_the_committed_traces_give(ph):
    d = ph.ROOT / "bench/results/posthoc-h100-rounds"
    r = ph.rounds()
    pd.testing.assert_frame_equal(r, pd.read_csv(d / "rounds.csv"), check_exact=False, atol=2e-4)
    pd.testing.assert_frame_equal(ph.summary(r), pd.read_csv(d / "summary.csv"), check_exact=False, atol=2e-4)
    assert set(r["gpu"]) == {"H100", "H200"} and ph.REFERENCE not in set(r["order"])
    assert set(r["span"]) == set(ph.SPANS)


def test_the_h100_row_order_is_slower_from_the_first_round(ph):
    """What docs/validation.md quotes (post-hoc): row order over groups of 8 already in round 0 (the H100s' median
    1.12, the H200s' 1.03), and by round 3 every H100 run above every H200 run."""
    s = pd.read_csv(ph.ROOT / "bench/results/posthoc-h100-rounds/summary.csv").set_index(["gpu", "order", "span"])
    assert s.at[("H100", "intragpu-row", "0"), "median"] > 1.1 > 1.03 > s.at[("H200", "intragpu-row", "0"), "median"]
    assert s.at[("H100", "intragpu-row", "3"), "low"] > s.at[("H200", "intragpu-row", "3"), "high"]


def test_rounds_are_each_ctas_tiles_by_acquire_and_the_later_ones_pooled(ph):
    """A made-up run: 2 CTAs, 6 tiles each; groups of 8 take 10 µs a tile, the other order 11 in rounds 0-3 and 13
    after; a case without groups of 8 gives nothing."""
    def trace(ml_of_round):
        rows = [dict(cta=c, t_acquire=1000 * (100 * r + c), t_mainloop_end=1000 * (100 * r + c) + 1000 * ml_of_round(r))
                for c in (0, 1) for r in range(6)]
        return SimpleNamespace(tiles=pd.DataFrame(rows))

    runs = [(("m=1", "intragpu"), trace(lambda r: 10)), (("m=1", "intragpu-row"), trace(lambda r: 11 if r < 4 else 13)),
            (("m=2", "intragpu-row"), trace(lambda r: 11))]
    got = ph.case_rounds(runs).set_index("span")
    assert list(got.index) == list(ph.SPANS) and set(got["case"]) == {"m=1"}
    assert got.loc[["0", "1", "2", "3"], "ratio"].tolist() == pytest.approx([1.1] * 4)
    assert got.at["later", "ratio"] == pytest.approx(1.3) and got.at["later", "reference_us"] == pytest.approx(10)
