"""bench/plan79_gemm_bytes.py: registered plan 79's registration (the plain CUTLASS GEMM's DRAM bytes per tile order,
with and without the drift's re-reads), its claims on made-up counts and its judge on calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def p79():
    return load_bench("plan79_gemm_bytes")


@pytest.fixture(scope="module")
def registered(p79):
    return pd.read_csv(p79.REGISTERED / "predicted.csv")


def test_the_registration_is_what_the_model_gives(p79, registered):
    pd.testing.assert_frame_equal(p79.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    assert registered.groupby("gpu").size().to_dict() == {"H100": 16, "H200": 16}
    # the drift adds re-reads to every launch; the H200's profile (the same share of a tile at every K) more at long K
    assert (registered.model_read_gb >= registered.lockstep_read_gb).all()
    w = registered.pivot_table(index=["m", "n", "k", "raster", "swizzle"], columns="gpu", values="model_read_gb")
    long_k = w.xs(45056, level="k")
    assert (long_k["H200"] > long_k["H100"]).all()


def counted(registered, gpu, source="model"):
    """A made-up call on ``gpu``: every launch read ``source``'s bytes, wrote the model's stores."""
    p = registered[registered.gpu == gpu]
    return pd.DataFrame({"gpu": gpu, **{k: p[k] for k in ("m", "n", "k", "raster", "swizzle")},
                         "read_gb": p[f"{source}_read_gb"], "write_gb": p.model_write_gb, "duration_ns": 1e7})


def claims(p79, registered, meas):
    return p79.claims(p79.cases(registered, meas), "test").set_index("claim")


def test_the_model_own_bytes_meet_every_claim_and_lockstep_bytes_miss_the_drift_claim(p79, registered):
    cl = claims(p79, registered, counted(registered, "H100"))
    assert cl["met"].all() and cl.at["d", "value"].startswith("8 of 8")
    lock = claims(p79, registered, counted(registered, "H100", "lockstep"))
    assert not lock.at["d", "met"] and lock.at["d", "value"].startswith("0 of 8")
    assert not lock.at["a", "met"]  # the drift's re-reads are 3.5-58% of the model's bytes on the H100 rows


def test_the_compulsory_bytes_miss_a_b_and_the_order_effect(p79, registered):
    cl = claims(p79, registered, counted(registered, "H200", "compulsory"))
    assert not cl.at["a", "met"] and not cl.at["b", "met"] and not cl.at["c", "met"]
    r = p79.order_ratios(p79.cases(registered, counted(registered, "H200", "compulsory")))
    assert len(r) == 12 and (r.counted == 1).all()


def test_the_judge_refuses_a_call_without_counters_or_with_a_launch_missing(p79, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    assert p79.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "no " in capsys.readouterr().err and not (tmp_path / "o").exists()
    pd.DataFrame({"m": [16384], "n": [8192], "k": [8192], "raster": ["along_m"], "swizzle": [8],
                  "dram_read_bytes": [1e9], "dram_write_bytes": [1e8], "duration_ns": [1e6]}).to_csv(
        run / "counters.csv", index=False)
    (run / "env.txt").write_text("0, NVIDIA H200, GPU-0\n")
    assert p79.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "no counted launch of 16384x8192x8192 heuristic/1 (15 missing)" in capsys.readouterr().err


def test_writes_past_the_stores_miss_e(p79, registered):
    dirty = counted(registered, "H100").assign(write_gb=lambda d: d.write_gb * 1.1)
    assert not claims(p79, registered, dirty).at["e", "met"]
    short = counted(registered, "H100").assign(write_gb=lambda d: d.write_gb - 2 * 0.0524)
    assert not claims(p79, registered, short).at["e", "met"]  # more than the L2 left unwritten


@pytest.mark.parametrize("sub, run", [("", "2026-12-06-registered79-1gpu"), ("run2", "2026-12-06-registered79-1gpu-run2"),
                                      ("run3", "2026-12-06-registered80-1gpu"),
                                      ("run4", "2026-12-06-registered80-1gpu-run2")])
def test_the_committed_call_judges_as_committed(p79, sub, run):
    """Each committed call re-judged from its counters and env.txt: the cases and claims as committed (a change of the
    bytes per GB, of the GPU read from env.txt or of a claim's rule would fail here)."""
    run = p79.ROOT / "bench/results/hw-h100" / run
    out = p79.ROOT / "bench/results/validation-registered79" / sub
    pred = pd.read_csv(p79.REGISTERED / "predicted.csv")
    c = p79.cases(pred, p79.measured(run))
    pd.testing.assert_frame_equal(c.round(4), pd.read_csv(out / "cases.csv").round(4), check_dtype=False, atol=2e-4)
    cl = p79.claims(c, "x").set_index("claim")
    committed = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl["value"].tolist() == committed["value"].tolist() and cl["met"].tolist() == committed["met"].tolist()
    assert cl["met"].tolist() == [False, True, False, True, True]
