"""bench/plan68_chain_reuse.py: registered plan 68's registration (each GPU's profile and its reuse twin beside the
naive line on chains where the reuse laws part), its claims and veto on made-up runs, and its judge on calls it must
refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def p68():
    return load_bench("plan68_chain_reuse")


@pytest.fixture(scope="module")
def registered(p68):
    return pd.read_csv(p68.REGISTERED / "predicted.csv")


def test_the_registration_is_what_its_sources_give(p68, registered):
    pd.testing.assert_frame_equal(p68.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    counts = registered.groupby(["gpu", "source"]).size()
    assert set(counts.index.get_level_values("source")) == set(p68.SOURCES) and (counts == 20).all()
    w = registered.pivot_table(index=["gpu", "experiment", "case", "strategy"], columns="source",
                               values="predicted_ms")
    gap = (w["twin"] / w["model"] - 1) * 100
    # the twin loses reuse the LRU keeps, in sequential and in every order, on both GPUs
    assert (gap > 0.5).all() and gap.max() < 6.0, gap.describe()


def _as(registered, source, gpu):
    m = registered[(registered["source"] == source) & (registered["gpu"] == gpu)]
    return m[["experiment", "case", "strategy", "predicted_ms"]].rename(
        columns={"predicted_ms": "measured_ms"}).assign(gpu=gpu)


@pytest.mark.parametrize("gpu", ["H200", "H100"])
def test_a_gpu_as_the_twin_priced_it_meets_every_claim_and_holds_nothing_back(p68, registered, gpu):
    cl = p68.claims(p68.cases(registered, _as(registered, "twin", gpu)), "test").set_index("claim")
    assert cl["met"].all(), cl


@pytest.mark.parametrize("gpu", ["H200", "H100"])
def test_a_gpu_as_the_model_priced_it_holds_plan_67s_adoption_back(p68, registered, gpu):
    cl = p68.claims(p68.cases(registered, _as(registered, "model", gpu)), "test").set_index("claim")
    assert not cl.loc["a", "met"] and not cl.loc["b", "met"] and not cl.loc["d", "met"]
    assert not cl.loc["veto", "met"] and cl.loc["veto", "value"] == "held back"


def test_a_machine_merely_slower_than_the_profile_meets_a_and_not_the_veto(p68, registered):
    """Slower everywhere by 3% favours the slower twin on (a)-(c); (d), the chain over sequential, divides it out and
    holds plan 67's adoption back."""
    meas = _as(registered, "model", "H200").assign(measured_ms=lambda d: d["measured_ms"] * 1.03)
    cl = p68.claims(p68.cases(registered, meas), "test").set_index("claim")
    assert cl.loc["a", "met"] and cl.loc["b", "met"] and not cl.loc["d", "met"]
    assert cl.loc["veto", "value"] == "held back"


def test_the_chain_over_sequential_takes_out_a_uniform_speed(p68, registered):
    meas = _as(registered, "twin", "H200").assign(measured_ms=lambda d: d["measured_ms"] * 1.05)
    c = p68.cases(registered, meas)
    r = p68.over_sequential(c[c["source"] == "twin"])
    assert len(r) == 16 and r["ratio_err_points"].abs().max() < 1e-9


def _call(p68, tmp_path, registered, gpu_name, gpu="H100", drop=None):
    run = tmp_path / "run"
    env = (p68.ROOT / "bench/results/hw/2026-12-05-registered59-1gpu/env.txt").read_text()
    run.mkdir()
    (run / "env.txt").write_text(env.replace("NVIDIA H200", gpu_name))
    m = _as(registered, "model", gpu)
    for exp, d in m.groupby("experiment"):
        (run / exp).mkdir()
        d = d if drop is None else d[d["strategy"] != drop]
        d.rename(columns={"measured_ms": "makespan_ms"}).assign(status="ok")[
            ["case", "strategy", "makespan_ms", "status"]].to_csv(run / exp / "results.csv", index=False)
    return run


def test_the_judge_on_an_h100_call_writes_its_tables(p68, registered, tmp_path):
    run = _call(p68, tmp_path, registered, "NVIDIA H100 80GB HBM3")
    out = tmp_path / "out"
    assert p68.main(["--judge", str(run), "--out", str(out)]) == 0
    c = pd.read_csv(out / "cases.csv")
    assert set(c["gpu"]) == {"H100"} and len(c) == 60
    assert len(pd.read_csv(out / "over-sequential.csv")) == 32
    assert pd.read_csv(out / "claims.csv").set_index("claim").at["veto", "value"] == "held back"


@pytest.mark.parametrize("column, value, message", [
    ("makespan_ms", "0", "the makespan of m=8192 sequential is 0.0, not a positive number"),
    ("makespan_ms", "-1", "the makespan of m=8192 sequential is -1.0, not a positive number"),
    ("makespan_ms", "x", "the makespan of m=8192 sequential is x, not a positive number"),
    ("status", None, "not a run of this plan (KeyError"),
    ("twice", None, "m=8192 sequential is there twice"),
])
def test_the_judge_refuses_a_results_table_it_cannot_use(p68, registered, tmp_path, capsys, column, value, message):
    run = _call(p68, tmp_path, registered, "NVIDIA H100 80GB HBM3")
    res = run / "reg68-chain-reuse-h4096" / "results.csv"
    t = pd.read_csv(res, dtype={"makespan_ms": object})
    first = (t["case"] == "m=8192") & (t["strategy"] == "sequential")
    if column == "twice":
        t = pd.concat([t, t[first]], ignore_index=True)
    elif value is None:
        t = t.drop(columns=column)
    else:
        t.loc[first, column] = value
    t.to_csv(res, index=False)
    assert p68.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and not (tmp_path / "out").exists(), err


def test_the_judge_refuses_a_registration_that_is_not_plan_68s(p68, registered, tmp_path, capsys):
    run = _call(p68, tmp_path, registered, "NVIDIA H100 80GB HBM3")
    reg67 = load_bench("plan67_l2_reuse").REGISTERED
    assert p68.main(["--judge", str(run), "--registered", str(reg67), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the registration is not plan 68's" in err[0] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("gpu_name, drop, message", [
    ("NVIDIA A100-SXM4-80GB", None, "ran on an NVIDIA A100-SXM4-80GB; plan 67 predicts"),
    ("NVIDIA H100 80GB HBM3", "intragpu-row", "reg68-chain-reuse-h4096: no timed run of m=8192 intragpu-row"),
])
def test_the_judge_refuses_a_call_it_cannot_judge(p68, registered, tmp_path, capsys, gpu_name, drop, message):
    run = _call(p68, tmp_path, registered, gpu_name, drop=drop)
    assert p68.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and not (tmp_path / "out").exists(), err
