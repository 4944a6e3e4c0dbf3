"""bench/plan80_traced_drift.py: registered plan 80's registration (the plain GEMM's DRAM bytes on a grid of drifts),
its judge on made-up calls whose traces drift by known amounts, and the calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import GZ_FAST, load_bench


@pytest.fixture(scope="module")
def p80():
    return load_bench("plan80_traced_drift")


@pytest.fixture(scope="module")
def registered(p80):
    return pd.read_csv(p80.REGISTERED / "predicted.csv")


def test_the_registration_is_what_the_model_gives(p80, registered):
    """Every (GPU, law, launch) holds the grid and the profile's drift; a spread of rows recomputed from the model."""
    from ctasim import costs
    from ctasim.spec import load_hardware

    sizes = registered.groupby(["gpu", "law", "m", "n", "k", "raster", "swizzle"]).size()
    assert len(sizes) == 2 * 2 * 16 and set(sizes) <= {len(p80.DRIFTS), len(p80.DRIFTS) + 1}
    assert (registered.groupby(["gpu", "law", "m", "n", "k", "raster", "swizzle"]).profile_drift.sum() == 1).all()
    for r in registered.iloc[::97].itertuples():
        hw = load_hardware(r.profile)
        t = costs.cutlass_traffic(p80.p79.layer(r.m, r.n, r.k), p80.with_drift(hw, r.drift, p80.LAWS[r.law]),
                                  p80.p78.ELEM, r.raster, r.swizzle)
        assert p80.p78.read_gb(t) == pytest.approx(r.read_gb, abs=5e-5)
    # the bytes rise with the drift, and the tile law charges long K at least what the absolute law does
    for _, g in registered.groupby(["gpu", "law", "m", "n", "k", "raster", "swizzle"]):
        assert np.all(np.diff(g.sort_values("drift").read_gb) >= -1e-4)
    w = registered.pivot_table(index=["gpu", "m", "n", "k", "raster", "swizzle", "drift"], columns="law",
                               values="read_gb")
    assert (w["tile"] >= w["absolute"] - 1e-4).all()
    k8 = w.xs(8192, level="k")
    assert np.allclose(k8["tile"], k8["absolute"])  # the two laws agree at K = 8192
    assert set(registered.trace) == {"along_n/1", "along_m/8", "along_n/8", "along_m/1"}


def _trace(drift: float, rounds: int = 10, ctas: int = 132, tile_ns: float = 300_000.0) -> pd.DataFrame:
    """A persistent grid whose start times spread by exactly ``drift`` tile times a round (as in
    tests/test_long_k_drift)."""
    z = np.linspace(-1.0, 1.0, ctas)
    z = (z - z.mean()) / z.std(ddof=1)
    r, c = np.meshgrid(np.arange(rounds), np.arange(ctas), indexing="ij")
    t = r * tile_ns * 1.01 + z[c] * drift * r * tile_ns
    return pd.DataFrame({"cta": c.ravel(), "t_acquire": t.ravel(), "t_mainloop_end": t.ravel() + tile_ns})


def _call(p80, registered, run, gpu: str, drifts: dict, counted_drift=None):
    """A made-up call on ``gpu``: traces drifting by ``drifts[(m, order)]`` in both passes, and counts that are the
    model's bytes under the profile's law at ``counted_drift(m, order)`` (default: the traced drift)."""
    from ctahw.tile_orders import trace_name

    run.mkdir(parents=True)
    for p in p80.PASSES:
        (run / p).mkdir()
        for (m, order), d in drifts.items():
            raster, swizzle = order.split("/")
            _trace(d).to_csv(
                run / p / f"tiles-{trace_name(m, 8192, raster, int(swizzle))}.csv.gz", index=False, compression=GZ_FAST)
    mine = registered[(registered.gpu == gpu) & (registered.profile_law == 1)]
    rows = []
    for key, g in mine.groupby(["m", "n", "k", "raster", "swizzle"]):
        m, n, k, raster, swizzle = key
        order = g.trace.iloc[0]
        d = drifts[(m, order)] if counted_drift is None else counted_drift(m, order)
        rows.append(dict(m=m, n=n, k=k, raster=raster, swizzle=swizzle, dram_read_bytes=p80.at_drift(g, d) * 1e9,
                         dram_write_bytes=1e9, duration_ns=1e7))
    pd.DataFrame(rows).to_csv(run / "counters.csv", index=False)
    (run / "env.txt").write_text(f"0, NVIDIA {gpu} 80GB HBM3, GPU-0\n")
    return run


DRIFTS = {(m, o): d for m in (8192, 16384) for o, d in
          (("along_n/1", 0.004), ("along_m/8", 0.006), ("along_n/8", 0.0055), ("along_m/1", 0.0005))}


def test_counts_at_the_traced_drifts_meet_every_claim(p80, registered, tmp_path):
    run = _call(p80, registered, tmp_path / "run", "H100", DRIFTS)
    c = p80.cases(registered, p80.measured(run))
    assert np.allclose(c.own_drift, [DRIFTS[(r.m, r.trace)] for r in c.itertuples()], rtol=1e-6)  # read back
    assert np.allclose(c.own_err_pct, 0, atol=1e-9)
    ok = c[np.isfinite(c.implied_drift)]
    assert len(ok) >= 12 and np.allclose(ok.implied_drift, ok.own_drift, atol=2e-4)
    cl = p80.claims(c, "test").set_index("claim")
    assert cl["met"].all(), cl


def test_counts_at_the_profile_drift_miss_a_and_b_and_a_drifting_unswizzled_order_misses_d(p80, registered, tmp_path):
    """Traces that say 0.003 everywhere while the machine read the profile's bytes (0.0078): the own drift is the worse
    predictor; and an unswizzled order traced drifting as the swizzled ones misses (d)."""
    flat = {key: 0.003 for key in DRIFTS}
    run = _call(p80, registered, tmp_path / "a", "H100", flat, counted_drift=lambda m, o: 0.0078)
    cl = p80.claims(p80.cases(registered, p80.measured(run)), "test").set_index("claim")
    assert not cl.at["a", "met"] and not cl.at["b", "met"] and not cl.at["d", "met"]
    assert cl.at["d", "value"].endswith("(1.00x)")
    # counts below what either law charges at the traced drift fail (e)
    low = _call(p80, registered, tmp_path / "b", "H200", DRIFTS, counted_drift=lambda m, o: 0.0)
    cl = p80.claims(p80.cases(registered, p80.measured(low)), "test").set_index("claim")
    assert not cl.at["e", "met"] and cl.at["e", "value"] == "0 of 6"


def test_the_judge_refuses_a_call_without_its_second_pass(p80, registered, tmp_path, capsys):
    run = _call(p80, registered, tmp_path / "run", "H100", DRIFTS)
    for f in (run / p80.PASSES[1]).iterdir():
        f.unlink()
    assert p80.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "order-traces-2/tiles-8192x8192-along_n-swizzle1.csv.gz" in err and not (tmp_path / "o").exists()


@pytest.mark.parametrize("sub, run", [("", "2026-12-06-registered80-1gpu"),
                                      ("run2", "2026-12-06-registered80-1gpu-run2")])
def test_the_committed_call_judges_as_committed(p80, registered, sub, run):
    """Each committed call re-judged from its traces, counters and env.txt: the cases and claims as committed."""
    out = p80.ROOT / "bench/results/validation-registered80" / sub
    c = p80.cases(registered, p80.measured(p80.ROOT / "bench/results/hw-h100" / run))
    pd.testing.assert_frame_equal(c.round(4), pd.read_csv(out / "cases.csv").round(4), check_dtype=False, atol=2e-4)
    cl = p80.claims(c, "x").set_index("claim")
    committed = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl["value"].tolist() == committed["value"].tolist() and cl["rule"].tolist() == committed["rule"].tolist()
    assert cl["met"].tolist() == committed["met"].tolist()
    assert cl.at["d", "met"] and cl.at["f", "met"] and not cl.at["a", "met"]


def _made_up(p80, own=5.0, profile=6.0, median=7.0, k8_near=8, unswizzled=0.0005):
    """A cases table made up to sit at the rules' edges: 16 launches (8 at K = 8192), every launch's own error ``own``
    (the first ``8 - k8_near`` at K = 8192 at 6%), the profile's and the median's ``profile`` and ``median``, the
    compulsory's 90%, along M / 1's traced drift ``unswizzled`` against 0.006, and the long-K counts between the
    laws."""
    rows = []
    for i, (m, n, k, raster, swizzle) in enumerate(p80.p79.CASES):
        trace = p80.trace_order(m, n, raster, swizzle)
        err = 6.0 if k == 8192 and i < 2 * (8 - k8_near) and i % 2 == 0 else own
        rows.append(dict(m=m, n=n, k=k, raster=raster, swizzle=swizzle, trace=trace, read_gb=10.0,
                         own_drift=unswizzled if trace == "along_m/1" else 0.006, own_err_pct=err,
                         median_err_pct=median, profile_err_pct=profile, lockstep_err_pct=30.0,
                         compulsory_err_pct=-90.0, own_absolute_read_gb=9.0, own_tile_read_gb=11.0))
    return pd.DataFrame(rows)


def test_the_claims_rules_at_their_edges(p80):
    """Each rule flips where its registered threshold says: (b) needs both the profile and the median beaten, (c) 6 of
    8, (d) 0.3 times, (f) half the compulsory's."""
    met = lambda c: p80.claims(c, "x").set_index("claim")["met"]  # noqa: E731
    assert met(_made_up(p80)).all()
    assert not met(_made_up(p80, median=4.0))["b"] and not met(_made_up(p80, profile=4.0))["b"]
    assert met(_made_up(p80, k8_near=6))["c"] and not met(_made_up(p80, k8_near=5))["c"]
    assert (_made_up(p80, k8_near=5).query("k == 8192").own_err_pct <= 5).sum() == 5
    assert met(_made_up(p80, unswizzled=0.0018))["d"] and not met(_made_up(p80, unswizzled=0.0019))["d"]
    assert met(_made_up(p80, own=45.0, profile=50, median=50))["f"]
    assert not met(_made_up(p80, own=46.0, profile=50, median=50))["f"]
