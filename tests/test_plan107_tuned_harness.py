"""bench/plan107_tuned_harness.py: registered plan 107's registration (the H100 profile's prices of five GEMMs
alone), its claims on made-up calls (the block harness twice, with the order each GEMM ran, around the shape probe),
and calls it must refuse (no GPU)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan97_small_gemms import call as probe_call


@pytest.fixture(scope="module")
def p107():
    return load_bench("plan107_tuned_harness")


@pytest.fixture(scope="module")
def registered(p107):
    return pd.read_csv(p107.REGISTRATION / "predicted.csv")


def made_up(p107, run, registered, slower=None, pass2=1.0, gpu="H100", drop_item=None, no_order=False,
            order=None):
    """A made-up call: the probe timing every order at the registration's time, each pass of the block harness timing
    each plain GEMM at its best order's time (``pass2``: the second pass scaled by it). ``slower``: the harness runs
    each GEMM at the fastest order at least that much (a fraction) slower than the best, at that order's time;
    ``order``: every item names that order instead; ``drop_item``: (pass, block, item) left out; ``no_order``: the
    tables without their order column."""
    probe_call(p107, run, registered, gpu=gpu)
    for name, scale in zip(p107.PASSES, (1.0, pass2)):
        (run / name).mkdir()
        for block, items in p107.BLOCKS.items():
            rows = []
            for item, (n, k) in items.items():
                if (name, block, item) == drop_item:
                    continue
                q = registered[(registered.m == p107.M) & (registered.n == n) & (registered.k == k)]
                q = q.sort_values("model_ms")
                best = q.model_ms.iloc[0]
                r = q.iloc[0] if slower is None else q[q.model_ms >= best * (1 + slower)].iloc[0]
                rows.append(dict(m=p107.M, rest_ms=100.0, item=item, repeats=1, median_ms=r.model_ms * scale,
                                 order=order or r.order))
            t = pd.DataFrame(rows)
            (t.drop(columns="order") if no_order else t).to_csv(run / name / f"breakdown-{block}.csv", index=False)
    return run


def judged(p107, run, tmp_path):
    out = tmp_path / "judged"
    assert p107.main(["--judge", str(run), "--out", str(out)]) == 0
    return {n: pd.read_csv(out / f"{n}.csv") for n in ("best", "passes", "claims")}


def test_the_registration_is_what_the_profile_gives(p107, registered, tmp_path):
    now = p107.register(tmp_path / "reg").round(4)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-4, check_dtype=False)
    assert len(p107.SHAPES) == 5 and len(registered) == 5 * 8
    p106 = load_bench("plan106_harness_or_unit")
    assert p107.BLOCKS == p106.BLOCKS and p107.M == p106.M == 32768


def test_a_harness_at_the_best_orders_in_both_passes_meets_a_to_d(p107, registered, tmp_path):
    t = judged(p107, made_up(p107, tmp_path / "run", registered), tmp_path)
    cl = t["claims"].set_index("claim")
    assert cl.met.tolist()[:4] == [True, True, True, True], cl
    p = t["passes"]
    assert len(p) == 8 and (p.order_rank == 1).all() and p.harness_over_best_pct.abs().max() < 0.01
    # (e): the profile priced these times exactly, as run and at the best
    assert p.model_pct_as_run.abs().max() < 0.01 and p.model_pct_at_best.abs().max() < 0.01


def test_a_harness_on_orders_two_percent_off_misses_a_and_b(p107, registered, tmp_path):
    t = judged(p107, made_up(p107, tmp_path / "run", registered, slower=0.02), tmp_path)
    cl = t["claims"].set_index("claim")
    assert cl.met.tolist()[:4] == [False, False, True, True], cl
    assert (t["passes"].order_rank > 1).all() and (t["passes"].model_pct_as_run < 0).all()


def test_passes_a_percent_apart_miss_c_and_the_second_pass_a(p107, registered, tmp_path):
    cl = judged(p107, made_up(p107, tmp_path / "run", registered, pass2=1.01), tmp_path)["claims"].set_index("claim")
    assert cl.met.tolist()[:4] == [False, True, False, True], cl
    assert cl.loc["a", "value"].startswith("0.00% and 1.00%")


@pytest.mark.parametrize("kw, message", [
    (dict(gpu="H200"), "names no H100"),
    (dict(drop_item=("pass2", "gpt-neox-20b", "gemm2_plain")),
     "pass2 timed no gemm2_plain of gpt-neox-20b at M = 32768"),
    (dict(no_order=True), "has no order column"),
    (dict(order="along_m/swizzle3"), "ran order 'along_m/swizzle3', which the probe did not time"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p107, registered, tmp_path, capsys, kw, message):
    run = made_up(p107, tmp_path / "run", registered, **kw)
    out = tmp_path / "judged"
    assert p107.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan107_tuned_harness: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_a_call_without_a_pass_is_refused(p107, registered, tmp_path, capsys):
    run = made_up(p107, tmp_path / "run", registered)
    (run / "pass2" / "breakdown-llama3.1-8b.csv").unlink()
    assert p107.main(["--judge", str(run), "--out", str(tmp_path / "judged")]) == 2
    assert "pass2/breakdown-llama3.1-8b.csv" in capsys.readouterr().err


def test_the_call_times_the_registered_shapes_and_blocks_twice(p107):
    """The runbook (bench/hw/run_plan107.sh) and the registration's README name the shapes of ``SHAPES`` in order, the
    blocks of ``BLOCKS`` at M = 32768 and the passes of ``PASSES`` around the probe, the harness at its default
    tuning (``ctahw run``'s)."""
    from tests.test_plan106_harness_or_unit import runbook_names_the_plan

    for path in (p107.ROOT / "bench/hw/run_plan107.sh", p107.REGISTRATION / "README.md"):
        text = runbook_names_the_plan(path, p107)
        assert re.search(r"for p in ([\w ]+); do", text).group(1).split() == [p107.PASSES[0], "probe", p107.PASSES[1]]
        assert "--tune-rounds" not in text, path


@pytest.mark.parametrize("suffix", ["", "-run2"])
def test_the_committed_h100_calls_judge_as_committed(p107, tmp_path, suffix):
    """Plan 107's call (bench/results/hw-h100/2026-12-08-registered107-1gpu, GPU-21f0e6a0) and its repeat judged again
    give the committed tables, no claim met in either; docs/validation.md's plan 107 section quotes the call's claims
    and the repeat's (a)-(d)."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p107.ROOT / f"bench/results/hw-h100/2026-12-08-registered107-1gpu{suffix}"
    assert p107.main(["--judge", str(run), "--out", str(out)]) == 0
    committed = p107.ROOT / f"bench/results/validation-registered107{suffix}"
    for name in ("orders.csv", "best.csv", "passes.csv", "claims.csv"):
        assert (out / name).read_text() == (committed / name).read_text(), name
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert not cl.met.iloc[:4].any()
    p = pd.read_csv(out / "passes.csv")
    assert set(p.order) <= set(pd.read_csv(out / "orders.csv").order)  # the harness named orders the probe timed
    doc = " ".join(_doc_section(p107, 107).split())
    if suffix:
        a = cl.loc["a", "value"].split(" (")[0]
        b = cl.loc["b", "value"].split(" (")[0]
        assert (f"(a) {a}, (b) {b} (a 6th-fastest order), (c) {cl.loc['c', 'value']}, "
                f"(d) {cl.loc['d', 'value'].split(' (')[0]}") in doc
        return
    for claim in "abcd":
        assert f"| {claim} | {cl.loc[claim, 'value']} | no |" in doc, claim
    assert f"| e (read) | {cl.loc['e', 'value']} | -- |" in doc
