"""bench/plan74_h100_blocks.py: registered plan 74's registration (the H100 datasheet profile and its tile-law twin on
MLP blocks and a GeLU chain, beside the naive line and the H200s' measured medians), its claims on made-up runs, and
its judge on calls it must refuse or can read (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import h200_calls_as, load_bench


@pytest.fixture(scope="module")
def p74():
    return load_bench("plan74_h100_blocks")


@pytest.fixture(scope="module")
def registered(p74):
    return pd.read_csv(p74.REGISTERED / "predicted.csv")


def test_the_registration_is_what_its_sources_give(p74, registered):
    pd.testing.assert_frame_equal(p74.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    counts = registered.groupby("source").size()
    assert set(counts.index) == set(p74.SOURCES) and counts.nunique() == 1 and counts.iloc[0] == 20
    # the twin differs from the model only by the drift's law: the same at K = 8192 (the reference, the square
    # chains: the chain kernel keeps cta_drift), apart on the blocks, whose down GEMMs have K = 17920-28672
    w = registered.pivot_table(index=["experiment", "case", "strategy"], columns="source", values="predicted_ms")
    blocks = w.index.get_level_values("experiment").isin(p74.BLOCKS)
    assert (w["tile"][~blocks] == w["model"][~blocks]).all()
    assert (w["tile"][blocks] != w["model"][blocks]).all()


def _timed(registered, source, scale=1.0):
    m = registered[registered["source"] == source][["experiment", "case", "strategy", "predicted_ms"]]
    return m.rename(columns={"predicted_ms": "measured_ms"}).assign(measured_ms=lambda d: d["measured_ms"] * scale,
                                                                     kind="timed")


def test_an_h100_as_the_model_priced_it_meets_every_timed_claim(p74, registered):
    cl = p74.claims(p74.cases(registered, _timed(registered, "model")), "test").set_index("claim")
    assert cl.loc[list("abcde"), "met"].all(), cl
    assert not cl.loc["f", "met"]  # no traced run: not met


def test_an_h100_as_the_tile_law_priced_it_misses_e(p74, registered):
    cl = p74.claims(p74.cases(registered, _timed(registered, "tile")), "test").set_index("claim")
    assert not cl.loc["e", "met"] and cl.loc["d", "met"]


def test_an_h100_four_percent_faster_than_the_model_misses_a_and_b(p74, registered):
    cl = p74.claims(p74.cases(registered, _timed(registered, "model", 1 / 1.04)), "test").set_index("claim")
    assert not cl.loc[["a", "b"], "met"].any()


def test_the_chain_claim_reads_the_chain_experiment_only(p74, registered):
    """The chain kernel measured 5% and 1 ms slower than the model's: (d) misses at M = 10240, where the model put it
    ahead (at M = 3072 it put sequential ahead, or within the tie); the blocks, one strategy each, never count."""
    meas = _timed(registered, "model")
    chain = (meas["experiment"] == p74.CHAIN) & (meas["strategy"] == "intragpu")
    meas.loc[chain, "measured_ms"] = meas.loc[chain, "measured_ms"] * 1.05 + 1
    cl = p74.claims(p74.cases(registered, meas), "test").set_index("claim")
    assert not cl.loc["d", "met"] and cl.loc["d", "value"] == "2 of 4"


def test_a_case_without_its_timing_is_refused(p74, registered):
    meas = _timed(registered, "model")
    drop = (meas["experiment"] == "reg26-llama3.1-70b-1gpu") & (meas["case"] == "m=36864")
    with pytest.raises(p74.JudgeError, match="reg26-llama3.1-70b-1gpu: no timed run of m=36864 sequential"):
        p74.cases(registered, meas[~drop])


H200_CALLS = {"reg49-reference": "2026-12-05-registered59-1gpu",
              "reg21-phi3-medium-1gpu": "2026-12-02-registered21-1gpu",
              "reg21-gpt-neox-20b-1gpu": "2026-12-02-registered21-1gpu",
              "reg22-opt-30b-1gpu": "2026-12-03-registered22-1gpu",
              "reg26-llama3.1-70b-1gpu": "2026-12-03-registered26-1gpu",
              "reg18-chain-gelu": "2026-12-02-registered18-1gpu"}


def _call(p74, tmp_path, gpu, traces=True):
    """The six experiments as H200 calls timed (and traced) them, under an env.txt naming ``gpu``."""
    files = ("results.csv", "ctapipe_traces.trace.npz") if traces else ("results.csv",)
    return h200_calls_as(H200_CALLS, tmp_path / gpu.replace(" ", "-"), gpu, files)


def test_the_judge_refuses_an_h200_call_and_a_chain_without_traces(p74, tmp_path, capsys):
    out = tmp_path / "o"
    assert p74.main(["--judge", str(_call(p74, tmp_path, "NVIDIA H200")), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not an H100" in err and len(err.strip().splitlines()) == 1 and not out.exists()
    bare = _call(p74, tmp_path / "bare", "NVIDIA H100 80GB HBM3", traces=False)
    assert p74.main(["--judge", str(bare), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "reg18-chain-gelu" in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_the_judge_reads_a_call_named_an_h100(p74, tmp_path):
    """The H200s' own timings under an H100's name: post-hoc (no H100 call is committed after the registration), the
    model's H100 memory prices them slow, so (c) misses; the chain kernel's traced runs are read against the model's
    schedules."""
    out = tmp_path / "o"
    assert p74.main(["--judge", str(_call(p74, tmp_path, "NVIDIA H100 80GB HBM3")), "--out", str(out)]) == 0
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert list(cl.index) == list(p74.CLAIMS) and cl["provenance"].str.startswith("post-hoc").all()
    assert not cl.loc["c", "met"]
    starts = pd.read_csv(out / "starts.csv")
    assert len(starts) == 4 and (starts["experiment"] == p74.CHAIN).all()
    assert cl.loc["f", "value"].endswith("over 4 traced runs")


def test_a_registration_missing_a_source_or_a_column_is_refused(p74, registered):
    meas = _timed(registered, "model")
    with pytest.raises(p74.JudgeError, match="0 rows of source 'tile', 20 of another"):
        p74.cases(registered[registered["source"] != "tile"], meas)
    with pytest.raises(p74.JudgeError, match="predicted.csv lacks predicted_ms"):
        p74.cases(registered.drop(columns="predicted_ms"), meas)


def test_a_damaged_trace_bundle_is_refused_in_one_line(p74, tmp_path, capsys):
    run = _call(p74, tmp_path, "NVIDIA H100 80GB HBM3")
    (run / p74.CHAIN / "ctapipe_traces.trace.npz").write_bytes(b"not a bundle")
    assert p74.main(["--judge", str(run), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "its trace bundle cannot be read" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()
