"""bench/plan67_l2_reuse.py: registered plan 67's registration (each GPU's profile and its reuse twin beside the naive
line on GEMMs where they disagree and where they agree), its claims and adoption rule on made-up runs, and its judge
on calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench


@pytest.fixture(scope="module")
def p67():
    return load_bench("plan67_l2_reuse")


@pytest.fixture(scope="module")
def registered(p67):
    return pd.read_csv(p67.REGISTERED / "predicted.csv")


def test_the_registration_is_what_its_sources_give(p67, registered):
    pd.testing.assert_frame_equal(p67.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    shapes = len(p67.TESTS) + len(p67.CONTROLS)
    assert len(registered) == len(p67.GPUS) * len(p67.SOURCES) * shapes * len(p67.ORDERS)
    w = registered.pivot_table(index=["gpu", "kind", "m", "n", "k", "order", "padded"], columns="source",
                               values="predicted_ms").reset_index()
    gap = (w["twin"] / w["model"] - 1) * 100
    # the twin never keeps more reuse than the LRU; it loses some on every test shape and none on the controls
    assert (gap > -1e-9).all()
    unpadded = ~w["padded"]
    assert gap[(w["kind"] == "control") & unpadded].max() < 0.06
    per_test = gap[(w["kind"] == "test") & unpadded].groupby([w["gpu"], w["m"], w["n"], w["k"]]).max()
    assert (per_test > 1.5).all(), per_test


def _as(registered, source, gpu):
    m = registered[(registered["source"] == source) & (registered["gpu"] == gpu)]
    return m[["m", "n", "k", "order", "predicted_ms"]].rename(columns={"predicted_ms": "measured_ms"}).assign(gpu=gpu)


@pytest.mark.parametrize("gpu", ["H200", "H100"])
def test_a_gpu_as_the_twin_priced_it_meets_the_twin_claims_and_adopts(p67, registered, gpu):
    cl = p67.claims(p67.cases(registered, _as(registered, "twin", gpu)), "test").set_index("claim")
    assert cl.loc[list("abcdf"), "met"].all(), cl
    assert cl.loc["adopt", "met"] and p67.GPUS[gpu][0] in cl.loc["adopt", "rule"]


@pytest.mark.parametrize("gpu", ["H200", "H100"])
def test_a_gpu_as_the_model_priced_it_adopts_nothing(p67, registered, gpu):
    cl = p67.claims(p67.cases(registered, _as(registered, "model", gpu)), "test").set_index("claim")
    assert not cl.loc["a", "met"] and not cl.loc["b", "met"] and not cl.loc["c", "met"]
    assert not cl.loc["adopt", "met"]


def test_a_slower_machine_alone_does_not_adopt_the_twin(p67, registered):
    """A machine 4% slower than the model everywhere favours the slower twin on raw errors (a) but not on the order
    effect (b) or the control-normalised errors (c): the rule asks for all three."""
    meas = _as(registered, "model", "H200").assign(measured_ms=lambda d: d["measured_ms"] * 1.04)
    cl = p67.claims(p67.cases(registered, meas), "test").set_index("claim")
    assert cl.loc["a", "met"] and not cl.loc["b", "met"] and not cl.loc["c", "met"]
    assert not cl.loc["adopt", "met"]


def test_the_normalised_error_takes_out_the_machines_speed(p67, registered):
    meas = _as(registered, "twin", "H100").assign(measured_ms=lambda d: d["measured_ms"] * 0.97)
    c = p67.cases(registered, meas)
    twin = c[c["source"] == "twin"]
    assert twin["error_pct"].between(3.09, 3.10).all() and twin["normalised_pct"].abs().max() < 1e-9


def _call(tmp_path, registered, gpu_name, gpu="H200", drop=None):
    run = tmp_path / "run"
    run.mkdir()
    env = (load_bench("plan67_l2_reuse").ROOT / "bench/results/hw/2026-12-05-registered59-1gpu/env.txt").read_text()
    (run / "env.txt").write_text(env.replace("NVIDIA H200", gpu_name))
    t = _as(registered, "model", gpu).rename(columns={"measured_ms": "median_ms"}).drop(columns="gpu")
    if drop is not None:
        t = t[~((t["m"] == drop[0]) & (t["n"] == drop[1]) & (t["k"] == drop[2]) & (t["order"] == drop[3]))]
    t.assign(backend="cutlass").to_csv(run / "gemm_shapes.csv", index=False)
    return run


def test_the_judge_on_an_h100_call_writes_its_tables(p67, registered, tmp_path):
    run = _call(tmp_path, registered, "NVIDIA H100 80GB HBM3", "H100")
    out = tmp_path / "out"
    assert p67.main(["--judge", str(run), "--out", str(out)]) == 0
    c = pd.read_csv(out / "cases.csv")
    assert set(c["gpu"]) == {"H100"} and len(c) == len(registered) // 2
    assert {"cases.csv", "claims.csv", "by-shape.csv"} <= {p.name for p in out.iterdir()}


@pytest.mark.parametrize("gpu_name, drop, message", [
    ("NVIDIA A100-SXM4-80GB", None,
     "ran on an NVIDIA A100-SXM4-80GB; plan 67 predicts an NVIDIA H200 or an NVIDIA H100 80GB HBM3"),
    ("NVIDIA H200", (8192, 5632, 3072, "along_n/swizzle2"), "no CUTLASS run of 8192x5632x3072 along_n/swizzle2"),
])
def test_the_judge_refuses_a_call_it_cannot_judge(p67, registered, tmp_path, capsys, gpu_name, drop, message):
    run = _call(tmp_path, registered, gpu_name, drop=drop)
    assert p67.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and not (tmp_path / "out").exists()


@pytest.mark.parametrize("value, message", [
    ("nan", "median_ms of 8192x4608x3072 along_m/swizzle1 is nan, not a positive number"),
    ("0", "median_ms of 8192x4608x3072 along_m/swizzle1 is 0.0, not a positive number"),
    ("-0.3", "median_ms of 8192x4608x3072 along_m/swizzle1 is -0.3, not a positive number"),
    ("x", "median_ms of 8192x4608x3072 along_m/swizzle1 is x, not a positive number"),
    ("twice", "8192x4608x3072 along_m/swizzle1 is there twice"),
])
def test_the_judge_refuses_a_table_with_a_median_it_cannot_use(p67, registered, tmp_path, capsys, value, message):
    run = _call(tmp_path, registered, "NVIDIA H200")
    t = pd.read_csv(run / "gemm_shapes.csv", dtype={"median_ms": object})
    first = (t["m"] == 8192) & (t["n"] == 4608) & (t["k"] == 3072) & (t["order"] == "along_m/swizzle1")
    if value == "twice":
        t = pd.concat([t, t[first]], ignore_index=True)
    else:
        t.loc[first, "median_ms"] = value
    t.to_csv(run / "gemm_shapes.csv", index=False)
    assert p67.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and not (tmp_path / "out").exists(), err


@pytest.mark.parametrize("gpu_name", ["NVIDIA GH200 480GB", "NVIDIA H100 PCIe", "NVIDIA H200 NVL"])
def test_the_judge_refuses_other_parts_of_the_same_names(p67, registered, tmp_path, capsys, gpu_name):
    run = _call(tmp_path, registered, gpu_name)
    assert p67.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 2
    assert f"ran on an {gpu_name}; plan 67 predicts" in capsys.readouterr().err


def test_the_judge_refuses_a_registration_that_is_not_plan_67s(p67, registered, tmp_path, capsys):
    run = _call(tmp_path, registered, "NVIDIA H200")
    other = tmp_path / "other"
    other.mkdir()
    registered.drop(columns="kind").to_csv(other / "predicted.csv", index=False)
    assert p67.main(["--judge", str(run), "--registered", str(other), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the registration is not plan 67's" in err[0] and not (tmp_path / "out").exists()


def test_the_judge_refuses_a_call_without_its_env(p67, registered, tmp_path, capsys):
    run = _call(tmp_path, registered, "NVIDIA H200")
    (run / "env.txt").unlink()
    assert p67.main(["--judge", str(run), "--out", str(tmp_path / "out")]) == 2
    assert "env.txt" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_the_twins_are_their_profiles_with_the_survival_reuse_law(p67):
    """Both profiles took the survival law by plan 67's rule (the H100's on 2026-12-05, the H200's on 2026-12-06: each
    twin is now its profile but for its name and source); h200-x1-calibrated-lru is the H200's profile before its
    adoption, the profile but for that one law (and its name and source); the model source is each profile under the
    LRU (as registered)."""
    import dataclasses

    from ctasim.profiles import before_h200_reuse
    from ctasim.spec import load_hardware

    for model, twin in (("h200-x1-calibrated", "h200-x1-calibrated-reuse"),
                        ("h100-x1-datasheet", "h100-x1-datasheet-reuse")):
        a, b = p67.as_registered(model), load_hardware(twin)
        assert a.l2_reuse_law == "lru" and b.l2_reuse_law == "survival"
        assert dataclasses.replace(b, name=a.name, source=a.source, measured=a.measured, l2_reuse_law="lru") == a
    h200 = load_hardware("h200-x1-calibrated")
    assert h200.l2_reuse_law == "survival" and load_hardware("h100-x1-datasheet").l2_reuse_law == "survival"
    before = load_hardware("h200-x1-calibrated-lru")
    assert before.l2_reuse_law == "lru" and before.measured is False
    assert dataclasses.replace(before, name=h200.name, source=h200.source, measured=h200.measured,
                               l2_reuse_law="survival") == h200
    assert before_h200_reuse(h200) == p67.as_registered("h200-x1-calibrated")
