"""bench/plan104_reference_scaled.py: registered plan 104 (plan 103's GEMMs and blocks scaled by one calibration GEMM
timed in the same call, as ``ctasim predict --reference-ms`` scales them), its registration, its claims on made-up
calls, and calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan101_block_ops import call as call101


@pytest.fixture(scope="module")
def p104():
    return load_bench("plan104_reference_scaled")


@pytest.fixture(scope="module")
def registered(p104):
    return pd.read_csv(p104.REGISTRATION / "predicted.csv")


@pytest.fixture(scope="module")
def reference(p104):
    return pd.read_csv(p104.REGISTRATION / "reference.csv").iloc[0]


def call(p104, run, registered, reference, speed=1.0, ref_ms=None, scale=None, **kw):
    """A made-up call: every registered item at ``speed`` times its model time (times ``scale`` where given), the
    reference block's square GEMM at ``ref_ms`` (``speed`` times the profile's reference where None)."""
    ref = pd.DataFrame([dict(block=p104.REFERENCE_MODEL, m=p104.REFERENCE_M, item="square_gemm",
                             model_ms=reference.model_ms * speed if ref_ms is None else ref_ms)])
    items = registered.assign(model_ms=registered.model_ms * speed)
    return call101(p104, run, pd.concat([items, ref], ignore_index=True), scale, **kw)


def judged(p104, run, tmp_path):
    out = tmp_path / "judged"
    assert p104.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "claims.csv").set_index("claim"), pd.read_csv(out / "items.csv")


def test_the_registration_is_plan_103s_gemms_and_blocks_and_the_profiles_reference(p104, registered, reference,
                                                                                   tmp_path):
    now = p104.register(tmp_path / "reg")
    pd.testing.assert_frame_equal(now, registered, check_dtype=False)
    p103 = pd.read_csv(p104.PLAN103 / "predicted.csv")
    assert len(registered) == 34 and set(registered.role) == set(p104.ROLES)
    assert len(p103) - len(registered) == 14  # the memory passes left out
    assert (reference.experiment, reference.case, reference.hardware) == ("reg49-reference", "m=16384",
                                                                           "h100-x1-datasheet")
    assert reference.model_ms == pytest.approx(2.78091, abs=1e-6)
    assert pd.read_csv(tmp_path / "reg" / "reference.csv").iloc[0].model_ms == reference.model_ms


def test_a_unit_uniformly_slower_is_what_the_reference_scales_out(p104, registered, reference, tmp_path):
    """Every item and the reference 5% slower than the model: scaled, every error is 0 (all claims met); unscaled the
    model is 4.8% fast everywhere."""
    cl, t = judged(p104, call(p104, tmp_path / "run", registered, reference, speed=1.05), tmp_path)
    assert cl.met.all(), cl
    assert t.ref_pct.abs().max() < 1e-6 and t.model_pct.round(2).eq(-4.76).all()


def test_a_reference_that_does_not_track_the_blocks_misses(p104, registered, reference, tmp_path):
    """The blocks at the model's times but the reference 5% slower: scaling takes every prediction 5% slow."""
    run = call(p104, tmp_path / "run", registered, reference, ref_ms=reference.model_ms * 1.05)
    cl, t = judged(p104, run, tmp_path)
    assert not cl.met.any(), cl
    assert t.ref_pct.round(2).eq(5.0).all()


def test_blocks_three_percent_off_beside_the_scaled_gemms_miss_a_only(p104, registered, reference, tmp_path):
    blocks = registered[registered.role == "block"]
    scale = {(r.block, r.m, "block"): 1.03 * 1.05 for r in blocks.itertuples()}
    cl, _ = judged(p104, call(p104, tmp_path / "run", registered, reference, speed=1.05, scale=scale), tmp_path)
    assert cl.met.tolist() == [False, True, True], cl


@pytest.mark.parametrize("kw, message", [
    (dict(gpu="H200"), "names no H100: plan 104 is judged"),
    (dict(missing="llama3.1-70b"), "breakdown-llama3.1-70b.csv"),
    (dict(drop=("llama3.1-70b", 16384, "square_gemm")), "timed no square_gemm of llama3.1-70b at M = 16384"),
    (dict(drop=("qwen2.5-7b", 32768, "block")), "the call timed no block of qwen2.5-7b at M = 32768"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p104, registered, reference, tmp_path, capsys, kw, message):
    run = call(p104, tmp_path / "run", registered, reference, **kw)
    out = tmp_path / "judged"
    assert p104.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan104_reference_scaled: ") and message in err and "\n" not in err, err
    assert not out.exists()


@pytest.mark.parametrize("what", ["reference", "items"])
def test_a_registration_the_code_no_longer_gives_is_refused(p104, registered, reference, tmp_path, what):
    reg = tmp_path / "reg"
    reg.mkdir()
    ref = pd.read_csv(p104.REGISTRATION / "reference.csv")
    (ref.assign(model_ms=ref.model_ms * 1.001) if what == "reference" else ref).to_csv(reg / "reference.csv",
                                                                                        index=False)
    (registered.assign(model_ms=registered.model_ms * 1.001) if what == "items" else registered).to_csv(
        reg / "predicted.csv", index=False)
    runs = p104.read_call(call(p104, tmp_path / "run", registered, reference))
    with pytest.raises(ValueError, match="the registration is not what the model gives now"):
        p104.judge(runs, reg)


def test_the_committed_h100_call_judges_as_committed(p104, tmp_path):
    """Plan 103's call with the reference after it (bench/results/hw-h100/2026-12-07-registered103-1gpu, GPU-7a1b197d)
    judged again gives the committed tables, every claim met; docs/validation.md's plan 104 section quotes them."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p104.ROOT / "bench/results/hw-h100/2026-12-07-registered103-1gpu"
    assert p104.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("items.csv", "claims.csv"):
        assert (out / name).read_text() == (p104.ROOT / "bench/results/validation-registered104" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.all()
    doc = " ".join(_doc_section(p104, 104).split())
    for claim in "abc":
        assert f"| {cl.loc[claim, 'value']} | yes |" in doc, claim
