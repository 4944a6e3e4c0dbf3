"""bench/plan103_pass_rates.py: registered plan 103's twin (the H100 profile with the two pass rates read from three
committed calls), its registration, its claims and adoption rule on made-up calls, and calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan101_block_ops import call as call101


@pytest.fixture(scope="module")
def p103():
    return load_bench("plan103_pass_rates")


@pytest.fixture(scope="module")
def registered(p103):
    return pd.read_csv(p103.REGISTRATION / "predicted.csv")


def call(p103, run, registered, source="passes", scale=None, **kw):
    return call101(p103, run, registered.assign(model_ms=registered[f"{source}_ms"]), scale, **kw)


def judged(p103, run, tmp_path):
    out = tmp_path / "judged"
    assert p103.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "claims.csv").set_index("claim")


def test_the_rates_are_the_three_calls_medians_and_the_registration_is_what_they_give(p103, registered, tmp_path):
    c = p103.pass_constants().set_index("field")
    assert list(c.index) == list(p103.FIELDS)
    assert c.loc["epilogue_pass_gbps", "own"] == pytest.approx(2905.3, abs=0.1)
    assert c.loc["rowwise_gbps", "own"] == pytest.approx(3160.6, abs=0.1)
    # read from all three calls: one call's norms twice as slow move the pooled median, as a median moves
    moved = tmp_path / "results"
    for name in p103.CALLS:
        (moved / name).mkdir(parents=True)
        t = pd.read_csv(p103.ROOT / "bench/results" / name / "items.csv")
        if name == "validation-registered102":
            t.loc[t.role == "norm", "measured_ms"] *= 2
        t.to_csv(moved / name / "items.csv", index=False)
    m = p103.pass_constants(moved).set_index("field")
    assert m.loc["rowwise_gbps", "own"] < c.loc["rowwise_gbps", "own"]
    assert m.loc["epilogue_pass_gbps", "own"] == c.loc["epilogue_pass_gbps", "own"]
    now = p103.register(tmp_path / "reg").round(6)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-6, check_dtype=False)
    passes = registered[registered.role.isin(("pass", "norm"))]
    assert len(passes) == 14 and (passes.passes_ms < 0.95 * passes.model_ms).all()
    gemms = registered[registered.role.isin(("up", "down", "up_plain", "down_plain"))]
    # the twin moves the passes only; a GEMM after a shorter pass starts earlier, at the burst clock curve's point there
    assert ((gemms.passes_ms / gemms.model_ms - 1).abs() < 1e-4).all()


def test_a_call_at_the_twins_times_adopts_and_one_at_the_profiles_does_not(p103, registered, tmp_path):
    cl = judged(p103, call(p103, tmp_path / "twin", registered), tmp_path / "a")
    assert cl.met.all() and cl.adopt.all(), cl
    cl = judged(p103, call(p103, tmp_path / "profile", registered, "model"), tmp_path / "b")
    assert not cl.met.any() and not cl.adopt.any(), cl


def test_passes_four_percent_slower_than_the_twin_miss_a_and_adopt_nothing(p103, registered, tmp_path):
    p = registered[registered.role.isin(("pass", "norm"))]
    run = call(p103, tmp_path / "run", registered, scale={(r.block, r.m, r.item): 1.04 for r in p.itertuples()})
    cl = judged(p103, run, tmp_path)
    assert cl.met.tolist() == [False, True, True] and not cl.adopt.any(), cl
    assert cl.loc["a", "value"].startswith("3.8")


@pytest.mark.parametrize("kw, message", [
    (dict(gpu="H200"), "names no H100: plan 103 is judged"),
    (dict(missing="internlm2-20b"), "breakdown-internlm2-20b.csv"),
    (dict(drop=("gpt-neox-20b", 32768, "layernorm")), "the call timed no layernorm of gpt-neox-20b at M = 32768"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p103, registered, tmp_path, capsys, kw, message):
    run = call(p103, tmp_path / "run", registered, **kw)
    out = tmp_path / "judged"
    assert p103.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan103_pass_rates: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_a_registration_the_code_no_longer_gives_is_refused(p103, registered, tmp_path):
    reg = tmp_path / "reg"
    reg.mkdir()
    (reg / "constants.csv").write_text((p103.REGISTRATION / "constants.csv").read_text())
    registered.assign(passes_ms=registered.passes_ms * 1.001).to_csv(reg / "predicted.csv", index=False)
    runs = p103.p101.read_call(call(p103, tmp_path / "run", registered), p103.MODELS, "plan 103")
    with pytest.raises(ValueError, match="the registration is not what the model gives now"):
        p103.judge(runs, reg)


def test_the_committed_h100_call_judges_as_committed_and_adopts_both_rates(p103, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered103-1gpu, GPU-7a1b197d) judged again gives the committed
    tables: (a) and (b) met, so the rule adopts, and h100-x1-datasheet carries the two rates of constants.csv; (c),
    read, the blocks further off under the twin. docs/validation.md's plan 103 section quotes the claims."""
    from ctasim.spec import load_hardware
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p103.ROOT / "bench/results/hw-h100/2026-12-07-registered103-1gpu"
    assert p103.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("items.csv", "claims.csv"):
        assert (out / name).read_text() == (p103.ROOT / "bench/results/validation-registered103" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [True, True, False] and cl.adopt.all()
    hw, c = load_hardware("h100-x1-datasheet"), pd.read_csv(p103.REGISTRATION / "constants.csv")
    assert all(getattr(hw, r.field) == r.own for r in c.itertuples())  # adopted
    doc = " ".join(_doc_section(p103, 103).split())
    for claim in "abc":
        assert f"| {cl.loc[claim, 'value']} | {'yes' if cl.loc[claim, 'met'] else 'no (read)'} |" in doc, claim
