"""bench/posthoc_exposure_by_load.py: the plain GEMM's error against its HBM load under the adopted profile; the
committed per-run rows are what the script computes (the M = 2048 runs of both probes re-predicted here), the tables
are what those rows give, and docs/validation.md quotes them (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from ctasim import calibration as C

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "bench" / "results" / "posthoc-exposure-by-load"


@pytest.fixture(scope="module")
def peb(bench_module):
    return bench_module("posthoc_exposure_by_load")


@pytest.fixture(scope="module")
def rows():
    return pd.read_csv(COMMITTED / "runs.csv")


def test_the_committed_runs_are_what_the_script_computes(peb, rows):
    k = peb.constants()
    assert (k["rate"], k["exposed"], k["drift_form"]) == (6.72, 0.19, "interleaved")  # the profile the docs name
    for probe, path in peb.PROBES.items():
        runs = C.tile_order_table(pd.read_csv(path), str(path))
        assert len(rows[rows.probe == probe]) == len(runs) == 324
        sub = runs[runs.m == 2048].reset_index(drop=True)
        got = peb.run_rows(probe, sub, k)
        want = rows[(rows.probe == probe) & (rows.m == 2048)].reset_index(drop=True)
        pd.testing.assert_frame_equal(got[["m", "n", "k", "order"]], want[["m", "n", "k", "order"]], check_dtype=False)
        assert got.rho.to_numpy() == pytest.approx(want.rho.to_numpy(), abs=1e-4)
        assert got.err_pct.to_numpy() == pytest.approx(want.err_pct.to_numpy(), abs=1e-4)


def test_the_tables_are_what_the_rows_give_and_the_docs_quote(peb, rows):
    load = pd.read_csv(COMMITTED / "by-load.csv")
    order = pd.read_csv(COMMITTED / "by-order.csv")
    pd.testing.assert_frame_equal(peb.by_load(rows).reset_index(drop=True), load, check_dtype=False)
    pd.testing.assert_frame_equal(peb.by_order(rows).reset_index(drop=True), order, check_dtype=False)
    # the reading: between a load of 0.3 and 0.8 the error does not fall as the load rises (within 0.5 point)
    mid = load[load.load.isin(["[0.3, 0.4)", "[0.4, 0.5)", "[0.5, 0.6)", "[0.6, 0.8)"])]
    for _, g in mid.groupby("probe"):
        assert len(g) == 4 and g.err_pct.max() - g.err_pct.min() < 0.5
        assert g.sort_values("rho").err_pct.iloc[-1] > g.sort_values("rho").err_pct.iloc[0] - 0.2
    doc = (ROOT / "docs" / "validation.md").read_text()
    o = order.set_index(["probe", "order"]).err_pct
    for probe in peb.PROBES:
        quoted = ", ".join(f"{o[(probe, f'along_m/swizzle{s}')]:+.2f}" for s in (2, 4, 8))
        assert quoted.replace("-", "−") in doc, quoted
