"""bench/plan64_h100_datasheet.py: registered plan 64's registration (the H100 datasheet profile's predictions beside
the naive line, the H200 profile's and the H200s' measured medians), its claims on made-up runs, and its judge on an
H200 call it must refuse and on the same call relabelled an H100 (no GPU)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import load_bench

ROOT = Path(__file__).resolve().parent.parent
CALL = ROOT / "bench/results/hw/2026-12-05-registered59-1gpu"
"""An H200 call that ran all four experiments, traced (plan 59's)."""


@pytest.fixture(scope="module")
def p64():
    return load_bench("plan64_h100_datasheet")


@pytest.fixture(scope="module")
def registered(p64):
    return pd.read_csv(p64.REGISTERED / "predicted.csv")


def test_the_registration_is_what_its_sources_give(p64, registered):
    got = p64.register()
    pd.testing.assert_frame_equal(got.reset_index(drop=True), registered, check_exact=False, rtol=0, atol=5e-5,
                                  check_dtype=False)
    counts = registered.groupby("source").size()
    assert set(counts.index) == set(p64.SOURCES) and counts.nunique() == 1 and counts.iloc[0] == 37


def test_the_profile_is_the_h200s_with_the_datasheets_memory(p64):
    from ctasim.spec import load_hardware

    h100, h200 = load_hardware(p64.PROFILE), load_hardware("h200-x1-calibrated")
    assert h100.l2_bytes == 50 * 2**20 and h100.hbm_gbps == pytest.approx(h200.hbm_gbps * 3.35 / 4.8, abs=1e-3)
    assert (h100.sm_count, h100.kernel_configs[0].sm_tflops) == (h200.sm_count, h200.kernel_configs[0].sm_tflops)
    assert not h100.measured


def test_the_h200_measured_line_is_the_median_over_the_committed_calls(p64, tmp_path):
    for i, f in enumerate((1.0, 1.1, 1.3)):
        d = tmp_path / f"call{i}" / "reg49-reference"
        d.mkdir(parents=True)
        pd.DataFrame({"case": ["m=16384"], "strategy": ["sequential"], "status": ["ok"],
                      "makespan_ms": [2.7 * f]}).to_csv(d / "results.csv", index=False)
    m = p64.h200_measured(tmp_path)
    assert m["predicted_ms"].tolist() == pytest.approx([2.97]) and m["n_runs"].tolist() == [3]
    with pytest.raises(p64.JudgeError, match="no committed H200 run"):
        p64.h200_measured(tmp_path / "nothing")


def _timed(registered, source):
    """Made-up timings: every case as ``source`` predicted it."""
    m = registered[registered["source"] == source][["experiment", "case", "strategy", "predicted_ms"]]
    return m.rename(columns={"predicted_ms": "measured_ms"}).assign(kind="timed")


def test_an_h100_as_the_model_priced_it_meets_every_makespan_claim(p64, registered):
    c = p64.cases(registered, _timed(registered, "model"))
    cl = p64.claims(c, "test").set_index("claim")
    assert cl.loc[list("abcdef"), "met"].all(), cl
    assert not cl.loc["g", "met"]  # no traced run: not met


def test_an_h100_that_runs_as_an_h200_fails_the_claims_that_ask_the_memory(p64, registered):
    """Timed as the H200s' medians: the H200 line is exact, so (c)-(f) cannot all hold; the model is off by what the
    datasheet moved (3-39%), so (a) misses."""
    c = p64.cases(registered, _timed(registered, "h200-measured"))
    cl = p64.claims(c, "test").set_index("claim")
    assert not cl.loc[["a", "d", "f"], "met"].any(), cl
    pen = c.attrs["penalties"]
    assert len(pen[pen["source"] == "model"]) == 7
    assert pen[pen["source"] == "h200-measured"]["error_points"].abs().max() < 1e-9


def test_a_case_without_its_timing_is_refused(p64, registered):
    meas = _timed(registered, "model")
    drop = (meas["experiment"] == "reg58-gap-law-h8448") & (meas["case"] == "m=16384") & \
        (meas["strategy"] == "intragpu-row")
    with pytest.raises(p64.JudgeError, match="reg58-gap-law-h8448: no timed run of m=16384 intragpu-row"):
        p64.cases(registered, meas[~drop])


def _relabelled(tmp_path, name="NVIDIA H100 80GB HBM3"):
    run = tmp_path / "call"
    for e in ("reg49-reference", "reg59-adopted-h5632", "reg58-gap-law-h7424", "reg58-gap-law-h8448"):
        shutil.copytree(CALL / e, run / e)
    (run / "env.txt").write_text((CALL / "env.txt").read_text().replace("NVIDIA H200", name))
    return run


def test_the_judge_refuses_a_call_on_an_h200(p64, tmp_path, capsys):
    run = _relabelled(tmp_path, name="NVIDIA H200")
    assert p64.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "not an H100" in err and "H200" in err and not (tmp_path / "o").exists()
    (run / "env.txt").unlink()
    assert p64.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "env.txt" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_the_judge_on_an_h200_call_relabelled(p64, tmp_path):
    """Plan 59's H200 call named an H100: the H200s' medians include that call (its only run at H = 5632), and the
    model (the H100's memory) prices it slow, so (c) and (d) miss; every traced run's start error is read."""
    out = tmp_path / "v"
    assert p64.main(["--judge", str(_relabelled(tmp_path)), "--out", str(out)]) == 0
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert not cl.loc[["c", "d"], "met"].any() and not cl["provenance"].str.startswith("registered").any()
    starts = pd.read_csv(out / "starts.csv")
    assert len(starts) == 28 and starts["start_median_frac"].notna().all()
    cases = pd.read_csv(out / "cases.csv")
    h5632 = cases[(cases["experiment"] == "reg59-adopted-h5632") & (cases["source"] == "h200-measured")]
    assert h5632["error_pct"].abs().max() < 1e-2
