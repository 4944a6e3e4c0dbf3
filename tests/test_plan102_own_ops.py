"""bench/plan102_own_ops.py: registered plan 102's twin (the H100 profile with the pass rates and fused GeLU cost read
from plan 101's call), its registration, its claims and adoption rule on made-up calls, and calls it must refuse
(no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan101_block_ops import call as call101


@pytest.fixture(scope="module")
def p102():
    return load_bench("plan102_own_ops")


@pytest.fixture(scope="module")
def registered(p102):
    return pd.read_csv(p102.REGISTRATION / "predicted.csv")


def call(p102, run, registered, source="ops", scale=None, gpu="H100", drop=None, missing=None):
    """A made-up call: every item at the registration's ``source`` time (times ``scale[(block, m, item)]``)."""
    return call101(p102, run, registered.assign(model_ms=registered[f"{source}_ms"]), scale, gpu, drop, missing)


def judged(p102, run, tmp_path):
    out = tmp_path / "judged"
    assert p102.main(["--judge", str(run), "--out", str(out)]) == 0
    return {n: pd.read_csv(out / f"{n}.csv") for n in ("items", "fused", "claims")}


def test_the_constants_are_read_from_plan_101s_tables(p102, tmp_path):
    """Each field is the profile's times the median ratio over plan 101's items: moving one of plan 101's SwiGLU
    passes past the median moves the rate, as the median does; the registration is what the code gives."""
    c = p102.own_constants().set_index("field")
    reg = pd.read_csv(p102.REGISTRATION / "constants.csv").set_index("field")
    assert c.own.round(4).equals(reg.own.round(4)) and list(c.index) == list(p102.FIELDS)
    assert c.loc["epilogue_pass_gbps", "own"] == pytest.approx(2878.8, abs=0.1)
    assert c.loc["rowwise_gbps", "own"] == pytest.approx(3166.1, abs=0.1)
    assert c.loc["activation_epilogue_ns_per_element", "own"] == pytest.approx(0.1250, abs=1e-4)
    moved = tmp_path / "p101"
    moved.mkdir()
    t = pd.read_csv(p102.PLAN101 / "items.csv")
    t.loc[t.role == "pass", "measured_ms"] *= 2  # every SwiGLU pass twice as slow: the rate halves, past run_ns
    t.to_csv(moved / "items.csv", index=False)
    (moved / "fused.csv").write_text((p102.PLAN101 / "fused.csv").read_text())
    m = p102.own_constants(moved).set_index("field")
    assert m.loc["epilogue_pass_gbps", "own"] < 0.52 * c.loc["epilogue_pass_gbps", "own"]
    assert m.loc["rowwise_gbps", "own"] == c.loc["rowwise_gbps", "own"]


def test_the_twin_changes_only_its_three_fields_and_the_registration_is_what_it_gives(p102, registered, tmp_path):
    from ctasim.spec import load_hardware

    hw = load_hardware("h100-x1-datasheet")
    twin = p102.ops_profile(hw)
    changed = {f for f in hw.__dataclass_fields__ if getattr(hw, f) != getattr(twin, f)}
    assert changed == set(p102.FIELDS)
    now = p102.register(tmp_path / "reg").round(6)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-6, check_dtype=False)
    assert len(registered) == 6 * 2 * 6 and set(registered.block) == set(p102.MODELS)
    r = registered.set_index(["block", "m", "item"])
    # the twin's passes are faster, its fused GeLU dearer, the plain GEMMs and OPT-2.7B's ReLU as they were
    passes = registered[registered.role.isin(("pass", "norm"))]
    assert (passes.ops_ms < 0.95 * passes.model_ms).all()
    assert r.loc[("gpt-j-6b", 65536, "gemm1_gelu"), "ops_ms"] > r.loc[("gpt-j-6b", 65536, "gemm1_gelu"), "model_ms"]
    plain = registered[registered.item.isin(("gemm1_plain", "gemm2_plain", "gemm1_relu", "gemm2_residual"))]
    assert ((plain.ops_ms / plain.model_ms - 1).abs() < 1e-4).all()  # by their start only (the burst clock curve)


def test_a_call_at_the_twins_times_meets_every_claim_and_adopts(p102, registered, tmp_path):
    t = judged(p102, call(p102, tmp_path / "run", registered), tmp_path)
    cl = t["claims"].set_index("claim")
    assert cl.met.all() and cl.adopt.all(), cl
    assert len(t["fused"]) == 2 * (2 * 6 + 2 * 3)  # both sources: the residual on six blocks, the activation on three


def test_a_call_at_the_profiles_times_misses_every_claim_and_adopts_nothing(p102, registered, tmp_path):
    """The twin then 5-11% fast on every pass ((a), (b), (d): worst -10.7%) and 1.5% dear on the GeLU ((c))."""
    cl = judged(p102, call(p102, tmp_path / "run", registered, "model"), tmp_path)["claims"].set_index("claim")
    assert not cl.met.any() and not cl.adopt.any(), cl


def test_a_gelu_dearer_than_the_twin_says_misses_c_alone_and_adopts_nothing(p102, registered, tmp_path):
    """GPT-2 Large's fused up GEMM at M = 65536 1.5% slower than the twin (its plain GEMM as priced): (c) missed,
    (a) and (b) met, no adoption."""
    run = call(p102, tmp_path / "run", registered, scale={("gpt2-large", 65536, "gemm1_gelu"): 1.015})
    cl = judged(p102, run, tmp_path)["claims"].set_index("claim")
    assert cl.met.tolist() == [True, True, False, True, True] and not cl.adopt.any(), cl


@pytest.mark.parametrize("kw, message", [
    (dict(gpu="H200"), "names no H100: plan 102 is judged"),
    (dict(missing="gpt-j-6b"), "breakdown-gpt-j-6b.csv"),
    (dict(drop=("minicpm-2b", 16384, "swiglu")), "the call timed no swiglu of minicpm-2b at M = 16384"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p102, registered, tmp_path, capsys, kw, message):
    run = call(p102, tmp_path / "run", registered, **kw)
    out = tmp_path / "judged"
    assert p102.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan102_own_ops: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_a_registration_the_code_no_longer_gives_is_refused(p102, registered, tmp_path):
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "constants.csv").write_text((p102.REGISTRATION / "constants.csv").read_text())
    registered.assign(ops_ms=registered.ops_ms * 1.001).to_csv(reg / "predicted.csv", index=False)
    runs = p102.read_call(call(p102, tmp_path / "run", registered))
    with pytest.raises(ValueError, match="the registration is not what the model gives now"):
        p102.judge(runs, reg)


def test_the_committed_h100_call_judges_as_committed_adopts_nothing_and_the_docs_quote_it(p102, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered102-1gpu, GPU-b35f0217) judged again gives the committed
    tables: (a) and (b) met, (c), (d) and (e) missed, nothing adopted (h100-x1-datasheet keeps its three values);
    docs/validation.md's plan 102 tables are what it gives."""
    from ctasim.profiles import H100_PASSES
    from ctasim.spec import load_hardware
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p102.ROOT / "bench/results/hw-h100/2026-12-07-registered102-1gpu"
    assert p102.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("items.csv", "fused.csv", "claims.csv"):
        assert (out / name).read_text() == (p102.ROOT / "bench/results/validation-registered102" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [True, True, False, False, False] and not cl.adopt.any()
    hw, c = load_hardware("h100-x1-datasheet"), pd.read_csv(p102.REGISTRATION / "constants.csv")
    # not adopted: the GeLU cost stays the profile's; the two pass rates moved by plan 103's rule, not plan 102's
    assert [getattr(hw, r.field) == r.profile for r in c.itertuples()] == [False, False, True]
    assert [getattr(hw, f) for f in p102.FIELDS[:2]] == [v for v, _, _ in H100_PASSES.values()]
    doc = " ".join(_doc_section(p102, 102).split())
    for claim in "abcde":
        assert f"| {cl.loc[claim, 'value']} | {'yes' if cl.loc[claim, 'met'] else 'no'} |" in doc, claim
    t = pd.read_csv(out / "items.csv")
    for (block, m), g in t.groupby(["block", "m"]):
        g = g.set_index("role")
        cells = " | ".join(f"{g.loc[r, 'model_pct']:+.1f} / {g.loc[r, 'ops_pct']:+.1f}" if r in g.index else "--"
                           for r in ("block", "up", "pass", "down", "norm"))
        assert f"| {m} | {g.loc['block', 'measured_ms']:.3f} | {cells} |" in doc, (block, m)
