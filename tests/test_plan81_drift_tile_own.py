"""bench/plan81_drift_tile_own.py: registered plan 81's registration (the GEMM's time and bytes on a grid of drifts),
its judge on made-up calls whose traces drift by known amounts, and a call it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import GZ_FAST, load_bench
from tests.test_plan80_traced_drift import _trace


@pytest.fixture(scope="module")
def p81():
    return load_bench("plan81_drift_tile_own")


@pytest.fixture(scope="module")
def registered(p81):
    return pd.read_csv(p81.REGISTERED / "predicted.csv")


def test_the_registration_is_what_the_model_gives(p81, registered):
    from ctasim import costs
    from ctasim.spec import load_hardware

    keys = ["gpu", "law", "m", "n", "k", "raster", "swizzle"]
    assert registered.groupby(keys).ngroups == 2 * 2 * 20
    assert (registered.groupby(keys).profile_drift.sum() == 1).all()
    for r in registered.iloc[::211].itertuples():
        hw = p81.p80.with_drift(load_hardware(r.profile), r.drift, p81.p80.LAWS[r.law])
        lay = p81.p79.layer(r.m, r.n, r.k)
        ms = costs.cutlass_waves(lay, hw, 2, r.raster, r.swizzle)[2].sum() / 1e6
        assert ms == pytest.approx(r.model_ms, abs=5e-5)
        assert p81.p78.read_gb(costs.cutlass_traffic(lay, hw, 2, r.raster, r.swizzle)) == pytest.approx(r.read_gb,
                                                                                                       abs=5e-5)
    # the tile law charges long K more time than the absolute law at the same drift; the two agree at K = 8192
    w = registered.pivot_table(index=["gpu", "m", "n", "k", "raster", "swizzle", "drift"], columns="law",
                               values="model_ms")
    assert (w["tile"] >= w["absolute"] - 1e-4).all()
    assert np.allclose(w.xs(8192, level="k")["tile"], w.xs(8192, level="k")["absolute"])


DRIFTS = {(m, o): d for m in (8192, 12288, 16384) for o, d in
          (("along_n/1", 0.0045), ("along_m/8", 0.006), ("along_n/8", 0.0055), ("along_m/1", 0.003))}


def _call(p81, registered, run, gpu="H100", ms=lambda g, law, d: None, read=lambda g, law, d: None):
    """A made-up call: traces drifting by DRIFTS; each launch timed and counted at the registered grid's figures
    under ``own_by_order``'s law at its traced drift (or what ``ms`` / ``read`` return)."""
    from ctahw.tile_orders import trace_name

    for p in p81.p80.PASSES:
        (run / p).mkdir(parents=True)
        for (m, order), d in DRIFTS.items():
            raster, swizzle = order.split("/")
            _trace(d).to_csv(
                run / p / f"tiles-{trace_name(m, 8192, raster, int(swizzle))}.csv.gz", index=False, compression=GZ_FAST)
    rows, timed = [], []
    mine = registered[registered.gpu == gpu]
    for key, g in mine.groupby(["m", "n", "k", "raster", "swizzle"]):
        m, n, k, raster, swizzle = key
        d = DRIFTS[(m, g.trace.iloc[0])]
        law = "tile" if swizzle > 1 else "absolute"
        grid = g[g.law == law]
        t = ms(grid, law, d) or p81.p80.at_drift(grid, d, "model_ms")
        b = read(grid, law, d) or p81.p80.at_drift(grid, d)
        rows.append(dict(m=m, n=n, k=k, raster=raster, swizzle=swizzle, dram_read_bytes=b * 1e9,
                         dram_write_bytes=1e9, duration_ns=t * 1e6))
        timed.append(dict(m=m, n=n, k=k, backend="cutlass", order=f"{raster}/swizzle{swizzle}", median_ms=t))
    pd.DataFrame(rows).to_csv(run / "counters.csv", index=False)
    pd.DataFrame(timed).to_csv(run / "gemm_shapes.csv", index=False)
    (run / "env.txt").write_text(f"0, NVIDIA {gpu} 80GB HBM3, GPU-0\n")
    return run


def test_a_call_at_the_by_order_figures_meets_its_claims_and_one_at_the_profile_misses_them(p81, registered, tmp_path):
    c = p81.cases(registered, p81.measured(_call(p81, registered, tmp_path / "a")))
    assert np.allclose(c.own_by_order_ms_err_pct, 0, atol=1e-9) and np.allclose(c.own_by_order_read_err_pct, 0)
    cl = p81.claims(c, "test").set_index("claim")
    assert cl.loc[["b", "c", "d", "e"], "met"].all() and not cl.at["a", "met"]  # the tile law overcharges unswizzled
    # a machine that ran at the profile's times (the absolute law at 0.0078): the by-order predictor misses b and c
    c = p81.cases(registered, p81.measured(_call(p81, registered, tmp_path / "b")))
    c = c.assign(measured_ms=c.profile_ms)
    for src in (*p81.PREDICTORS, "naive"):
        c[f"{src}_ms_err_pct"] = (c[f"{src}_ms"] / c["measured_ms"] - 1) * 100
    cl = p81.claims(c, "test").set_index("claim")
    assert not cl.at["b", "met"] and not cl.at["c", "met"] and cl.at["c", "value"].endswith("against 0.00%")


def test_the_judge_refuses_a_launch_timed_twice(p81, registered, tmp_path, capsys):
    run = _call(p81, registered, tmp_path / "run")
    t = pd.read_csv(run / "gemm_shapes.csv")
    pd.concat([t, t.iloc[[3]]]).to_csv(run / "gemm_shapes.csv", index=False)
    assert p81.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "timed twice" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_the_judge_refuses_a_call_without_its_timings(p81, registered, tmp_path, capsys):
    run = _call(p81, registered, tmp_path / "run")
    (run / "gemm_shapes.csv").unlink()
    assert p81.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "gemm_shapes.csv" in capsys.readouterr().err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("sub, run, met", [("", "2026-12-06-registered81-1gpu", "------"),
                                           ("run2", "2026-12-06-registered81-1gpu-run2", "----e-"),
                                           ("run3", "2026-12-06-registered81-1gpu-run3", "----e-"),
                                           ("run4", "2026-12-06-registered81-1gpu-run4", "a--d--"),
                                           ("run5", "2026-12-06-registered81-1gpu-run5", "----e-"),
                                           ("run6", "2026-12-06-registered81-1gpu-run6", "----e-")])
def test_the_committed_call_judges_as_committed(p81, registered, sub, run, met):
    """Each committed call re-judged from its traces, timings, counters and env.txt: cases and claims as committed."""
    out = p81.ROOT / "bench/results/validation-registered81" / sub
    c = p81.cases(registered, p81.measured(p81.ROOT / "bench/results/hw-h100" / run))
    pd.testing.assert_frame_equal(c.round(4), pd.read_csv(out / "cases.csv").round(4), check_dtype=False, atol=2e-4)
    cl = p81.claims(c, "x").set_index("claim")
    committed = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl["value"].tolist() == committed["value"].tolist() and cl["rule"].tolist() == committed["rule"].tolist()
    assert "".join(k if m else "-" for k, m in cl["met"].items()) == met == "".join(
        k if m else "-" for k, m in committed["met"].items())
    pd.testing.assert_frame_equal(p81.summary(c).round(4), pd.read_csv(out / "summary.csv").round(4),
                                  check_dtype=False, atol=2e-4)
