"""bench/posthoc_spread_by_order.py: the chain kernel's ticket spread per tile order on the committed traced runs, and
the order penalties with each order's own spread; the committed tables are what the script computes (one run's
spreads and one experiment's what-if simulated again here, the summaries from the committed rows), its adopted rows
are bench/posthoc_order_mainloop.py's, and the figures docs/validation.md quotes hold (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "posthoc-spread-by-order"
DEEP = ROOT / "bench/results/hw/2026-12-02-registered10-1gpu/reg10-chain-order-deep/ctapipe_traces.trace.npz"


@pytest.fixture(scope="module")
def psb(bench_module):
    return bench_module("posthoc_spread_by_order")


def test_the_committed_spreads_are_what_the_traces_give(psb):
    committed = pd.read_csv(COMMITTED / "spread.csv")
    got = psb.spreads([DEEP])
    want = committed[(committed.run == got.run.iloc[0]) & (committed.experiment == "reg10-chain-order-deep")]
    assert len(got) == len(want) == 4  # groups of 8, 4, pairs and row order
    got, want = (d.sort_values("order").reset_index(drop=True) for d in (got, want))
    assert got.order.tolist() == want.order.tolist() and got.windows.tolist() == want.windows.tolist()
    assert got.span_rate.to_numpy() == pytest.approx(want.span_rate.to_numpy(), rel=1e-5)
    pd.testing.assert_frame_equal(psb.by_order(committed), pd.read_csv(COMMITTED / "by-order.csv"), check_dtype=False)
    b = pd.read_csv(COMMITTED / "by-order.csv").set_index("order").span_rate_median
    # groups of 8 spread at the profile's rate (measured on plan 3's groups of 8); pairs and row order faster
    from ctasim.spec import load_hardware

    assert abs(b["intragpu"] - load_hardware("h200-x1-calibrated").config(128, 256).ticket_spread) < 0.0005
    assert b["intragpu-g2"] > 1.2 * b["intragpu"] and b["intragpu-row"] > 1.9 * b["intragpu"]


def test_the_committed_what_if_is_what_the_script_computes_and_the_docs_quote(psb):
    committed = pd.read_csv(COMMITTED / "what-if.csv")
    spread = pd.read_csv(COMMITTED / "by-order.csv").set_index("order").span_rate_median.to_dict()
    got = psb.what_if(spread, [DEEP])
    want = committed[(committed.experiment == "reg10-chain-order-deep") & (committed.run == got.run.iloc[0])]
    assert len(got) == len(want) == 3 * 3  # three predictors x three orders against groups of 8
    key = ["predictor", "case", "order"]
    got, want = (d.sort_values(key).reset_index(drop=True) for d in (got, want))
    pd.testing.assert_frame_equal(got[key], want[key], check_dtype=False)
    for col in ("mainloop_err", "makespan_err"):
        assert got[col].to_numpy() == pytest.approx(want[col].to_numpy(), abs=1e-4)
    s = pd.read_csv(COMMITTED / "what-if-summary.csv")
    pd.testing.assert_frame_equal(psb.P.summary(committed), s, check_dtype=False)
    # the adopted rows are posthoc_order_mainloop's adopted summary
    om = pd.read_csv(ROOT / "bench/results/posthoc-order-mainloop/summary.csv")
    om = om[om.predictor == "adopted (survival, 1.019)"].drop(columns="predictor").reset_index(drop=True)
    ad = s[s.predictor == "adopted"].drop(columns="predictor").reset_index(drop=True)
    pd.testing.assert_frame_equal(ad, om, check_dtype=False)
    own = s[s.predictor == "own spread per order"].set_index("order")
    doc = (ROOT / "docs" / "validation.md").read_text()
    for figure in (f"{own.loc['intragpu-g2', 'mainloop_err']:+.2f}", f"{own.loc['intragpu-row', 'mainloop_err']:+.2f}"):
        assert figure.replace("-", "−") in doc, figure


def test_named_bundles_give_their_own_spreads_and_bad_ones_are_refused(psb, tmp_path, capsys):
    """``--bundles``: registered plan 75's H100 call and plan 51's H200 call at H = 6656, as committed
    (bench/results/posthoc-spread-plan75); on the H100 pairs and row order spread at least twice as fast as groups of 8
    at M = 4096 and 8192, on the H200 within 1.3 times. A missing or unreadable bundle: one line, exit 2, nothing
    written."""
    committed = psb.ROOT / "bench/results/posthoc-spread-plan75"
    bundles = [psb.ROOT / "bench/results/hw-h100/2026-12-06-registered75-1gpu/reg51-chain-order-h6656" / psb.P.BUNDLE,
               psb.ROOT / "bench/results/hw/2026-12-04-registered51-1gpu/reg51-chain-order-h6656" / psb.P.BUNDLE]
    assert psb.main(["--bundles", *map(str, bundles), "--out", str(tmp_path / "o")]) == 0
    for name in ("spread.csv", "by-order.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "o" / name), pd.read_csv(committed / name))
    s = pd.read_csv(committed / "spread.csv")
    s["gpu"] = s["run"].map(lambda r: "H100" if "hw-h100" in r else "H200")
    w = s.pivot_table(index=["gpu", "case"], columns="order", values="span_rate")
    for case in ("m=4096", "m=8192"):
        h100, h200 = w.loc[("H100", case)], w.loc[("H200", case)]
        assert min(h100["intragpu-g2"], h100["intragpu-row"]) > 2 * h100["intragpu"]
        assert max(h200["intragpu-g2"], h200["intragpu-row"]) < 1.3 * h200["intragpu"]
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"junk")
    for bad in (tmp_path / "none.npz", junk):
        with pytest.raises(SystemExit) as e:
            psb.main(["--bundles", str(bad), "--out", str(tmp_path / "bad")])
        assert e.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
        assert not (tmp_path / "bad").exists()
