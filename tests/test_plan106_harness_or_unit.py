"""bench/plan106_harness_or_unit.py: registered plan 106's registration (the H100 profile's prices of seven GEMMs
alone), its claims on made-up calls (the block harness against the shape probe on one unit), and calls it must refuse
(no GPU)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan97_small_gemms import call as probe_call


@pytest.fixture(scope="module")
def p106():
    return load_bench("plan106_harness_or_unit")


@pytest.fixture(scope="module")
def registered(p106):
    return pd.read_csv(p106.REGISTRATION / "predicted.csv")


def made_up(p106, run, registered, source="model", scale=1.0, harness=1.0, gpu="H100", drop_item=None,
            drop_shape=None):
    """A made-up call: the probe timing every order at the registration's ``source`` time times ``scale``, and the
    block harness timing each plain GEMM at the fastest of those times ``harness`` (``drop_item``: (block, item) left
    out; ``drop_shape``: a shape the probe left out)."""
    probe_call(p106, run, registered, source, scale, gpu, drop_shape)
    for block, items in p106.BLOCKS.items():
        rows = []
        for item, (n, k) in items.items():
            if (block, item) == drop_item:
                continue
            q = registered[(registered.m == p106.M) & (registered.n == n) & (registered.k == k) & ~registered.padded]
            rows.append(dict(m=p106.M, rest_ms=100.0, item=item, repeats=1,
                             median_ms=q[f"{source}_ms"].min() * scale * harness))
        pd.DataFrame(rows).to_csv(run / f"breakdown-{block}.csv", index=False)
    return run


def judged(p106, run, tmp_path):
    out = tmp_path / "judged"
    assert p106.main(["--judge", str(run), "--out", str(out)]) == 0
    return {n: pd.read_csv(out / f"{n}.csv") for n in ("best", "harness", "claims")}


def test_the_registration_is_what_the_profile_gives(p106, registered, tmp_path):
    now = p106.register(tmp_path / "reg").round(4)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-4, check_dtype=False)
    assert len(p106.SHAPES) == 7 and len(registered) == 7 * 8
    # the block GEMMs are the shapes of the blocks' specs, and plan 103 timed them at M = 32768
    p103 = pd.read_csv(p106.PLAN103 / "items.csv")
    for block, items in p106.BLOCKS.items():
        assert set(items) <= set(p103[(p103.block == block) & (p103.m == p106.M)]["item"])


def test_a_call_at_the_profiles_times_with_agreeing_harnesses_meets_a_to_d(p106, registered, tmp_path):
    t = judged(p106, made_up(p106, tmp_path / "run", registered), tmp_path)
    cl = t["claims"].set_index("claim")
    assert cl.met.tolist()[:4] == [True, True, True, True], cl
    assert t["harness"].harness_over_probe_pct.abs().max() < 0.01
    assert (t["harness"].harness_over_plan103_pct < 0).all()  # plan 103's unit ran these slower than priced


def test_a_block_harness_three_percent_slow_misses_a_only(p106, registered, tmp_path):
    cl = judged(p106, made_up(p106, tmp_path / "run", registered, harness=1.03), tmp_path)["claims"].set_index("claim")
    assert cl.met.tolist()[:4] == [False, True, True, True], cl


def test_a_unit_three_percent_slow_misses_b_c_and_d(p106, registered, tmp_path):
    cl = judged(p106, made_up(p106, tmp_path / "run", registered, scale=1.03), tmp_path)["claims"].set_index("claim")
    assert cl.met.tolist()[:4] == [True, False, False, False], cl


@pytest.mark.parametrize("kw, message", [
    (dict(gpu="H200"), "names no H100"),
    (dict(drop_shape=(16384, 8192, 8192)), "the call timed no 16384x8192x8192"),
    (dict(drop_item=("gpt-neox-20b", "gemm2_plain")), "the call timed no gemm2_plain of gpt-neox-20b at M = 32768"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p106, registered, tmp_path, capsys, kw, message):
    run = made_up(p106, tmp_path / "run", registered, **kw)
    out = tmp_path / "judged"
    assert p106.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan106_harness_or_unit: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_a_call_without_a_blocks_table_is_refused(p106, registered, tmp_path, capsys):
    run = made_up(p106, tmp_path / "run", registered)
    (run / "breakdown-llama3.1-8b.csv").unlink()
    assert p106.main(["--judge", str(run), "--out", str(tmp_path / "judged")]) == 2
    assert "breakdown-llama3.1-8b.csv" in capsys.readouterr().err


def runbook_names_the_plan(path, plan) -> str:
    """``path`` (a runbook or a registration's README) names ``plan.SHAPES`` in order as the probe's one ``--shapes``
    list and ``plan.BLOCKS`` at ``plan.M`` in its block loop; its text."""
    text = path.read_text()
    shapes = re.findall(r"--shapes (\S+)", text)
    assert len(shapes) == 1, path
    assert [tuple(map(int, s.split("x"))) for s in shapes[0].split(",")] == list(plan.SHAPES), path
    assert re.search(r"for b in ([\w.\- ]+); do", text).group(1).split() == list(plan.BLOCKS), path
    assert f"--ms {plan.M} " in text, path
    return text


def test_the_call_times_the_registered_shapes_and_blocks(p106):
    """The runbook (bench/hw/run_plan106.sh) and the registration's README name the shapes of ``SHAPES``, in order,
    and the blocks of ``BLOCKS`` at M = 32768."""
    for path in (p106.ROOT / "bench/hw/run_plan106.sh", p106.REGISTRATION / "README.md"):
        runbook_names_the_plan(path, p106)


@pytest.mark.parametrize("suffix, met", [("", [False, True, True, False]), ("-run2", [True, True, True, False]),
                                         ("-run3", [True, False, False, False]),
                                         ("-run4", [False, True, True, False])])
def test_the_committed_h100_calls_judge_as_committed(p106, tmp_path, suffix, met):
    """Plan 106's call (bench/results/hw-h100/2026-12-08-registered106-1gpu, GPU-d182769f), its repeat on the same
    unit and its call on plan 107's unit (GPU-21f0e6a0) judged again give the committed tables: (a) missed in the call
    and met in the others, (b) and (c) met on the first unit and missed on the second, (d) missed in all three;
    docs/validation.md quotes the call's claims and best orders, the repeat's (a) and the second unit's (a)-(c)."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p106.ROOT / ("bench/results/hw-h100/2026-12-08-registered108-1gpu" if suffix == "-run4"
                       else f"bench/results/hw-h100/2026-12-08-registered106-1gpu{suffix}")
    assert p106.main(["--judge", str(run), "--out", str(out)]) == 0
    committed = p106.ROOT / f"bench/results/validation-registered106{suffix}"
    for name in ("orders.csv", "best.csv", "harness.csv", "claims.csv"):
        assert (out / name).read_text() == (committed / name).read_text(), name
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist()[:4] == met
    doc = " ".join(_doc_section(p106, 106).split())
    if suffix == "-run2":
        assert f"met (a) with {cl.loc['a', 'value'].split(' (')[0]}" in doc
        return
    if suffix == "-run4":  # plan 108's call on a third unit: quoted in plan 108's section
        doc = " ".join(_doc_section(p106, 108).split())
        assert f"(a) {cl.loc['a', 'value'][:-1]}: the two-round tuning again)" in doc
        assert f"(b) {cl.loc['b', 'value'].split(' (')[0]}, (c) {cl.loc['c', 'value'].split(' (')[0]}" in doc
        return
    if suffix == "-run3":  # on plan 107's unit: quoted in plan 107's section
        doc = " ".join(_doc_section(p106, 107).split())
        assert f"(a) met, {cl.loc['a', 'value'].split(' (')[0]}; (b) {cl.loc['b', 'value'].split(' (')[0]}" in doc
        assert f"(c) {cl.loc['c', 'value'].split(' (')[0]} missed" in doc
        return
    for claim in "abcd":
        assert f"| {claim} | {cl.loc[claim, 'value']} | {'yes' if cl.loc[claim, 'met'] else 'no'} |" in doc, claim
    assert f"| e (read) | {cl.loc['e', 'value']} | -- |" in doc
    b = pd.read_csv(out / "best.csv")
    for _, r in b.iterrows():
        tail = (f"| {r.best_order} | {r.best_ms:.3f} | {r.model_pct:+.2f} | {r.naive_pct:+.2f} | "
                f"{r.model_pick_lost_pct:.2f} |").replace("-", "−")
        row = re.search(rf"\| {r.m} x {r.n} x {r.k} \| [^|]+ ({re.escape(tail)})", doc)
        assert row, (r.m, r.n, r.k, tail)
