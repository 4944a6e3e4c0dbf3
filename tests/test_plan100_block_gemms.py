"""bench/plan100_block_gemms.py: registered plan 100's registration (the adopted H100 profile and its absolute-law twin
on plan 99's blocks' GEMMs alone), its claims on made-up calls, and calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan97_small_gemms import call, judged


@pytest.fixture(scope="module")
def p100():
    return load_bench("plan100_block_gemms")


@pytest.fixture(scope="module")
def registered(p100):
    return pd.read_csv(p100.REGISTRATION / "predicted.csv")


def test_the_registration_is_what_the_profiles_give(p100, registered, tmp_path):
    assert (p100.REGISTRATION / f"{p100.TWIN}.toml").read_text() == p100.twin_text()
    now = p100.register(tmp_path / "reg").round(4)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-4, check_dtype=False)
    assert len(p100.SHAPES) == 16 and len(registered) == 16 * 8  # the orders the model prices
    # what the claims rest on: the laws part on the up GEMMs (K < 8192), not on the down GEMMs at K >= 8192
    b = registered.groupby(["m", "n", "k"])[["model_ms", "absolute_ms"]].min()
    apart = (b.absolute_ms / b.model_ms - 1) * 100
    up = [s for s in p100.SHAPES if p100.block_of(s[1], s[2])[1] == "up"]
    long_k = [s for s in p100.SHAPES if s[2] >= 8192]
    assert apart.loc[up].min() > 1.5 and apart.loc[long_k].abs().max() < 1e-9


def test_the_twin_is_the_profile_on_the_absolute_law_and_the_model_the_adopted_one(p100):
    hws = p100.profiles()
    assert {c.drift_k_law for c in hws["absolute"].kernel_configs} == {"absolute"}
    assert hws["model"].config(128, 256).drift_k_law == "capped"


def test_a_call_at_the_models_times_meets_a_b_d_but_not_c(p100, registered, tmp_path):
    b, cl = judged(p100, call(p100, tmp_path / "run", registered, "model"), tmp_path)
    assert cl.met.tolist() == [True, True, False, True], cl
    assert b.model_pct.abs().max() < 0.05 and set(b.block) == set(p100.BLOCKS)


def test_a_call_at_the_absolute_laws_times_misses_b(p100, registered, tmp_path):
    _, cl = judged(p100, call(p100, tmp_path / "run", registered, "absolute"), tmp_path)
    assert not cl.loc["b", "met"] and cl.loc["a", "met"]


def test_a_call_two_percent_slower_meets_c(p100, registered, tmp_path):
    """Every GEMM 2% slower than the model: the short blocks' GEMMs -1.96% (c met), (a) still met."""
    _, cl = judged(p100, call(p100, tmp_path / "run", registered, "model", 1.02), tmp_path)
    assert cl.loc["c", "met"] and cl.loc["c", "value"].startswith("-1.96%") and cl.loc["a", "met"]


@pytest.mark.parametrize("make, message", [
    (lambda p, run, reg: call(p, run, reg, gpu="H200"), "names no H100"),
    (lambda p, run, reg: call(p, run, reg, drop=(65536, 22016, 2048)), "the call timed no 65536x22016x2048"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p100, registered, tmp_path, capsys, make, message):
    run = make(p100, tmp_path / "run", registered)
    out = tmp_path / "judged"
    assert p100.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan100_block_gemms: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_a_registration_whose_twin_was_edited_is_refused(p100, registered, tmp_path, capsys):
    reg = tmp_path / "reg"
    p100.register(reg)
    (reg / f"{p100.TWIN}.toml").write_text(p100.twin_text() + "# edited\n")
    runs = pd.read_csv(call(p100, tmp_path / "run", registered, "model") / "gemm_shapes.csv")
    with pytest.raises(ValueError, match="is not h100-x1-datasheet with the absolute K law as committed"):
        p100.judge(runs, reg)


def test_the_blocks_table_splits_plan_99s_blocks_into_their_gemms_and_the_rest(p100, registered, tmp_path):
    """A call at the model's times: every block's GEMMs priced right (0%), so what is left of the block carries all
    of plan 99's error; Pythia-1.4B and OPT-1.3B share their GEMMs; every block and M once."""
    judged(p100, call(p100, tmp_path / "run", registered, "model"), tmp_path)
    t = pd.read_csv(tmp_path / "judged" / "blocks.csv")
    assert len(t) == 10 and set(t.block) == {"qwen2.5-3b", "stablelm-2-1.6b", "phi-2", "pythia-1.4b", "opt-1.3b"}
    assert t.gemms_err_pct.abs().max() < 0.05
    plan99 = pd.read_csv(p100.PLAN99)
    r = plan99[(plan99.experiment == "reg99-qwen2.5-3b-1gpu") & (plan99.case == "m=65536") & (plan99.source == "model")]
    q = t[(t.block == "qwen2.5-3b") & (t.m == 65536)].iloc[0]
    assert q.block_ms == pytest.approx(r.measured_ms.iloc[0]) and q.rest_ms == pytest.approx(q.block_ms - q.gemms_ms)
    # the block's error, all in the rest: (model block - measured block) = (model rest - measured rest)
    assert q.rest_model_ms - q.rest_ms == pytest.approx(r.predicted_ms.iloc[0] - r.measured_ms.iloc[0], abs=2e-3)
    shared = t[t.block.isin(["pythia-1.4b", "opt-1.3b"])].groupby("m").gemms_ms.nunique()
    assert (shared == 1).all()


def test_the_committed_h100_call_judges_as_committed_and_the_docs_quote_it(p100, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered100-1gpu, GPU-22f650c3) judged again gives the committed
    tables, every claim met; docs/validation.md's plan 100 tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p100.ROOT / "bench/results/hw-h100/2026-12-07-registered100-1gpu"
    assert p100.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("orders.csv", "best.csv", "claims.csv", "blocks.csv"):
        assert (out / name).read_text() == (p100.ROOT / "bench/results/validation-registered100" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.all()
    doc = " ".join(_doc_section(p100, 100).split())
    for claim in "abcd":
        assert f"| {cl.loc[claim, 'value']} | yes |" in doc, claim
    b = pd.read_csv(out / "best.csv")
    for r in b.itertuples():
        cells = " | ".join(f"{getattr(r, f'{s}_pct'):+.1f}" for s in ("model", "absolute", "naive"))
        assert f"| {r.role} | {r.m} | {r.best_order} | {r.best_ms:.3f} | {cells} |" in doc, (r.block, r.m, r.role)
    assert (b.model_pct < 0).all() and "short on all 16 GEMMs" in doc


def test_the_repeat_on_a_second_h100_judges_as_committed_and_the_docs_quote_it(p100, tmp_path):
    """The same probe on GPU-b35f0217 (not in the registered plan) judged again gives the committed tables: (b) and
    (d) met, (a) and (c) missed; docs/validation.md quotes them."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p100.ROOT / "bench/results/hw-h100/2026-12-07-registered100-1gpu-run2"
    assert p100.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("orders.csv", "best.csv", "claims.csv"):
        assert (out / name).read_text() == (p100.ROOT / "bench/results/validation-registered100-run2" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [False, True, False, True]
    doc = " ".join(_doc_section(p100, 100).split())
    assert "(1.97 against 3.74%; 1.65 against 2.51%)" in doc and cl.loc["b", "value"] == "1.97 against 3.74%"
    assert "worst +6.82%" in doc and "worst +6.82%" in cl.loc["a", "value"]
    assert "(c) +0.23% (absolute +3.68%)" in doc and cl.loc["c", "value"] == "+0.23% (absolute +3.68%)"
