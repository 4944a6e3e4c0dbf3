"""bench/chain_tile_rate.py: the chain kernel's per-tile mainloop and cycle over the model's compute, from plans 51 and
52's committed traces; the committed tables are what the script computes and the figures docs/validation.md quotes
hold (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "chain-tile-rate"


@pytest.fixture(scope="module")
def ctr(bench_module):
    return bench_module("chain_tile_rate")


def test_the_committed_tables_are_what_the_script_computes(ctr):
    s, w = ctr.tables()
    pd.testing.assert_frame_equal(s, pd.read_csv(COMMITTED / "summary.csv"), check_dtype=False)
    pd.testing.assert_frame_equal(w, pd.read_csv(COMMITTED / "per-wave.csv"), check_dtype=False)


def test_one_layer_and_two_run_alike_and_the_docs_quote_it():
    """docs/validation.md (plan 52): steady mainloop 1.039-1.056x the model's compute in one-layer runs, 1.016-1.069x
    in two-layer ones; layer 1 less layer 0 at steady state -0.8 to +2.3 points, +0.15 on average; the gap from a
    mainloop's end to the CTA's next tile 2.43-2.62 us everywhere; the first waves 1.2 points under steady on average."""
    s = pd.read_csv(COMMITTED / "summary.csv")
    one, two = s[s["layers"] == 1], s[s["layers"] == 2]
    assert (one["mainloop_steady"].min(), one["mainloop_steady"].max()) == (1.0387, 1.0557)
    assert (two["mainloop_steady"].min(), two["mainloop_steady"].max()) == (1.0161, 1.0694)
    p = two.pivot_table(index=["machine", "experiment", "m"], columns="layer", values="mainloop_steady")
    d = 100 * (p[1] - p[0])
    assert round(d.min(), 1) == -0.8 and round(d.max(), 1) == 2.3 and round(d.mean(), 2) == 0.15
    assert s["gap_us"].between(2.43, 2.63).all()
    assert round(100 * (s["mainloop_steady"] - s["mainloop_w1_3"]).mean(), 1) == 1.2


def test_a_trace_with_tiles_missing_is_refused(ctr):
    from ctasim.trace import load_traces

    tr = next(t for t in load_traces(ctr.HW / ctr.RUNS[0][1] / "ctapipe_traces.trace.npz").values()
              if t.meta.get("strategy") == ctr.STRATEGY)
    tr.tiles = tr.tiles.iloc[1:]
    with pytest.raises(ValueError, match="expected 1 x"):
        ctr.tiles(tr)
