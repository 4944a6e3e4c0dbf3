"""bench/plan101_block_ops.py: registered plan 101's registration (the model's own split of plan 99's blocks, op by
op), its claims on made-up calls, and calls it must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan83_alone_edge import ENV


@pytest.fixture(scope="module")
def p101():
    return load_bench("plan101_block_ops")


@pytest.fixture(scope="module")
def registered(p101):
    return pd.read_csv(p101.REGISTRATION / "predicted.csv")


def call(p101, run, registered, scale=None, gpu="H100", drop=None, missing=None):
    """A made-up call: every item timed at the registration's ``model`` time, times ``scale[(block, m, item)]`` where
    given, under an ``env.txt`` naming ``gpu``; ``drop``: an item left out; ``missing``: a block with no table."""
    run.mkdir(parents=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n" + ENV[gpu] + "\n")
    scale = scale or {}
    for block, g in registered.groupby("block"):
        if block == missing:
            continue
        g = g[[(block, m, i) != drop for m, i in zip(g.m, g.item)]]
        ms = [r.model_ms * scale.get((block, r.m, r.item), 1.0) for r in g.itertuples()]
        pd.DataFrame({"m": g.m, "rest_ms": 100.0, "item": g.item, "repeats": 1, "median_ms": ms}).to_csv(
            run / f"breakdown-{block}.csv", index=False)
    return run


def judged(p101, run, tmp_path):
    out = tmp_path / "judged"
    assert p101.main(["--judge", str(run), "--out", str(out)]) == 0
    return {n: pd.read_csv(out / f"{n}.csv") for n in ("items", "fused", "shortfall", "claims")}


def test_the_registration_is_what_the_model_gives_and_its_blocks_are_plan_99s(p101, registered, tmp_path):
    now = p101.register(tmp_path / "reg").round(6)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-6, check_dtype=False)
    assert len(registered) == 5 * 2 * 6
    # the block item is plan 99's registered model time
    for block in p101.BLOCKS:
        p99 = pd.read_csv(p101.ROOT / f"bench/predictions/reg99-{block}-1gpu/predictions.csv")
        p99 = p99[p99.source == "model"].set_index("m").makespan_ms
        b = registered[(registered.block == block) & (registered.item == "block")].set_index("m").model_ms
        assert (b - p99.loc[b.index]).abs().max() < 1e-6, block
    # the model's split: each block's own ops and the harness's gaps between them make the block
    r = registered.set_index(["block", "m", "role"]).model_ms.sort_index()
    q = r.loc[("qwen2.5-3b", 65536)]
    gaps = q["block"] - (q["up"] + q["pass"] + q["down"] + q["norm"])
    assert -4 * 6.016e-3 < gaps < 0  # four run_ns counted against one run_ns plus three kernel gaps
    # what the fused ops cost in the model: GeLU on Phi-2's up GEMM ~13%, ReLU nothing, the residual 2-5%
    assert 1.12 < r.loc[("phi-2", 65536, "up")] / r.loc[("phi-2", 65536, "up_plain")] < 1.14
    assert r.loc[("opt-1.3b", 65536, "up")] == r.loc[("opt-1.3b", 65536, "up_plain")]


def test_a_call_at_the_models_times_meets_every_claim_but_c(p101, registered, tmp_path):
    t = judged(p101, call(p101, tmp_path / "run", registered), tmp_path)
    cl = t["claims"].set_index("claim")
    assert cl.met.tolist() == [True, True, False, True, True], cl
    assert t["items"].model_pct.abs().max() < 1e-3 and len(t["fused"]) == 16 and len(t["shortfall"]) == 10


def test_short_blocks_whose_gemms_run_slow_meet_c_and_whose_norms_run_slow_miss_it(p101, registered, tmp_path):
    """Qwen2.5-3B's and Phi-2's GEMMs (with and without their fused ops) 3% slower at M = 65536, and their blocks by
    the same ms: (c) met, the shortfall all on the GEMMs. The same ms on their norms instead: (c) missed, and (e) too
    (a norm that slow is far off)."""
    def slowed(on_gemms):
        scale = {}
        for block in p101.SHORT:
            g = registered[(registered.block == block) & (registered.m == 65536)].set_index("role")
            extra = sum(g.loc[r, "model_ms"] * 0.03 for r in ("up", "down"))
            if on_gemms:
                scale.update({(block, 65536, g.loc[r, "item"]): 1.03 for r in g.index if r != "block" and
                              r.split("_")[0] in ("up", "down")})
            else:
                scale[(block, 65536, g.loc["norm", "item"])] = 1 + extra / g.loc["norm", "model_ms"]
            scale[(block, 65536, "block")] = 1 + extra / g.loc["block", "model_ms"]
        return scale

    t = judged(p101, call(p101, tmp_path / "gemms", registered, slowed(True)), tmp_path)
    assert t["claims"].met.tolist() == [True, True, True, True, True]
    s = t["shortfall"].set_index(["block", "m"]).loc[("phi-2", 65536)]
    assert s.gemms_err_ms == pytest.approx(s.block_err_ms, abs=2e-4) and s.block_err_ms < -0.2
    cl = judged(p101, call(p101, tmp_path / "norms", registered, slowed(False)), tmp_path / "b")["claims"]
    assert cl.set_index("claim").met.tolist() == [False, True, False, True, False]


def test_a_fused_op_the_model_misprices_by_more_than_one_percent_misses_d(p101, registered, tmp_path):
    """Phi-2's GeLU at M = 16384 1.5% dearer (its fused up GEMM 1.5% slower, the plain one as modelled): (d) missed and
    names it; (a) still met."""
    t = judged(p101, call(p101, tmp_path / "run", registered, {("phi-2", 16384, "gemm1_gelu"): 1.015}), tmp_path)
    cl = t["claims"].set_index("claim")
    assert not cl.loc["d", "met"] and "gelu on phi-2 at M = 16384" in cl.loc["d", "value"] and cl.loc["a", "met"]
    f = t["fused"].set_index(["block", "m", "op"])
    assert f.loc[("phi-2", 16384, "gelu"), "miss_pct"] == pytest.approx(-1.5 / 1.015, abs=2e-3)


@pytest.mark.parametrize("kw, message", [
    (dict(gpu="H200"), "names no H100"),
    (dict(missing="phi-2"), "breakdown-phi-2.csv"),
    (dict(drop=("opt-1.3b", 65536, "gemm1_relu")), "the call timed no gemm1_relu of opt-1.3b at M = 65536"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p101, registered, tmp_path, capsys, kw, message):
    run = call(p101, tmp_path / "run", registered, **kw)
    out = tmp_path / "judged"
    assert p101.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan101_block_ops: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_a_registration_the_model_no_longer_gives_is_refused(p101, registered, tmp_path):
    reg = tmp_path / "reg"
    reg.mkdir()
    registered.assign(model_ms=registered.model_ms * 1.001).to_csv(reg / "predicted.csv", index=False)
    runs = p101.read_call(call(p101, tmp_path / "run", registered))
    with pytest.raises(ValueError, match="the registration is not what the model gives now"):
        p101.judge(runs, reg)


def test_the_committed_h100_call_judges_as_committed_and_the_docs_quote_it(p101, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered101-1gpu, GPU-22f650c3, after plan 100's in the same call)
    judged again gives the committed tables: (b) and (c) met, (a), (d) and (e) missed; docs/validation.md's plan 101
    tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p101.ROOT / "bench/results/hw-h100/2026-12-07-registered101-1gpu"
    assert p101.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("items.csv", "fused.csv", "shortfall.csv", "claims.csv"):
        assert (out / name).read_text() == (p101.ROOT / "bench/results/validation-registered101" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [False, True, True, False, False]
    doc = " ".join(_doc_section(p101, 101).split())
    for claim in "abcde":
        assert f"| {cl.loc[claim, 'value']} | {'yes' if cl.loc[claim, 'met'] else 'no'} |" in doc, claim
    for r in pd.read_csv(out / "shortfall.csv").itertuples():
        assert (f"| {r.m} | {r.block_ms:.3f} | {r.block_pct:+.1f} | {r.block_err_ms * 1e3:+.0f} | "
                f"{r.gemms_err_ms * 1e3:+.0f} | {r.passes_err_ms * 1e3:+.0f} | {r.between_ms * 1e3:+.0f} / "
                f"{r.between_model_ms * 1e3:+.0f} |") in doc, (r.block, r.m)


def test_the_repeat_on_a_second_h100_judges_as_committed_and_the_docs_quote_it(p101, tmp_path):
    """The same probe on GPU-b35f0217 (plan 102's held machine; not in the registered plan) judged again gives the
    committed tables, the same claims met and missed as the first call; docs/validation.md quotes them."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p101.ROOT / "bench/results/hw-h100/2026-12-07-registered101-1gpu-run2"
    assert p101.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("items.csv", "fused.csv", "shortfall.csv", "claims.csv"):
        assert (out / name).read_text() == (p101.ROOT / "bench/results/validation-registered101-run2" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [False, True, True, False, False]
    doc = " ".join(_doc_section(p101, 101).split())
    assert "-227 us with -321 on its GEMMs" in doc and cl.loc["c", "value"].startswith("qwen2.5-3b: block -227 us")
    assert "(a) 5.03% (worst +16.75%)" in doc and cl.loc["a", "value"].startswith("5.03%, worst +16.75%")
    assert "(d) worst +1.45%" in doc and cl.loc["d", "value"].startswith("worst +1.45%")
    assert "(e) 10.34%" in doc and cl.loc["e", "value"].startswith("10.34%")
