"""bench/plan98_capped_drift.py: registered plan 98's registration (the H100 datasheet profile's absolute drift law
against its capped twin on twelve short-K GEMMs), its claims and adoption verdict on made-up calls, and calls it must
refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan97_small_gemms import call, judged


@pytest.fixture(scope="module")
def p98():
    return load_bench("plan98_capped_drift")


@pytest.fixture(scope="module")
def registered(p98):
    return pd.read_csv(p98.REGISTRATION / "predicted.csv")


def test_the_registration_is_what_the_profiles_give_and_the_laws_part_at_every_shape(p98, registered, tmp_path):
    assert (p98.REGISTRATION / f"{p98.TWIN}.toml").read_text() == p98.twin_text()
    now = p98.register(tmp_path / "reg").round(4)
    pd.testing.assert_frame_equal(now, registered, check_exact=False, rtol=0, atol=2e-4, check_dtype=False)
    b = registered.groupby(["m", "n", "k"])[["absolute_ms", "capped_ms"]].min()
    assert ((b.absolute_ms / b.capped_ms - 1) * 100).min() > 1.0 and len(b) == 12
    assert all(k < 8192 for _, _, k in p98.SHAPES)


def test_a_call_at_the_capped_times_meets_a_b_c_and_adopts(p98, registered, tmp_path):
    b, cl = judged(p98, call(p98, tmp_path / "run", registered, "capped"), tmp_path)
    assert cl.loc[["a", "b", "c", "adopt"], "met"].all(), cl
    assert cl.loc["adopt", "value"] == "yes" and b.capped_pct.abs().max() < 0.05
    assert (b.capped_pick_lost_pct < 1e-6).all()


def test_a_call_at_the_absolute_times_adopts_nothing(p98, registered, tmp_path):
    _, cl = judged(p98, call(p98, tmp_path / "run", registered, "absolute"), tmp_path)
    assert not cl.loc["a", "met"] and cl.loc["adopt", "value"] == "no"


def test_a_machine_four_percent_slower_than_the_capped_law_misses_b_and_adopts_nothing(p98, registered, tmp_path):
    _, cl = judged(p98, call(p98, tmp_path / "run", registered, "capped", 1.04), tmp_path)
    assert not cl.loc["b", "met"] and cl.loc["b", "value"].startswith("3.8") and cl.loc["adopt", "value"] == "no"


@pytest.mark.parametrize("make, message", [
    (lambda p98, run, reg: call(p98, run, reg, "capped", gpu="H200"), "names no H100"),
    (lambda p98, run, reg: call(p98, run, reg, "capped", drop=(65536, 4096, 2048)),
     "the call timed no 65536x4096x2048"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p98, registered, tmp_path, capsys, make, message):
    run = make(p98, tmp_path / "run", registered)
    out = tmp_path / "judged"
    assert p98.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan98_capped_drift: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_the_committed_h100_call_judges_as_committed_adopts_and_the_docs_quote_it(p98, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered98-1gpu, GPU-6f6a6471) judged again gives the committed
    tables: (a)-(c) met, (d) missed, adopted; the profile carries the adoption; docs/validation.md quotes it."""
    from ctasim.spec import load_hardware
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p98.ROOT / "bench/results/hw-h100/2026-12-07-registered98-1gpu"
    assert p98.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("orders.csv", "best.csv", "claims.csv"):
        assert (out / name).read_text() == (p98.RESULTS / name).read_text(), name
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [True, True, True, False, True] and cl.loc["adopt", "value"] == "yes"
    assert load_hardware(p98.BASE).config(128, 256).drift_k_law == "capped"
    doc = " ".join(_doc_section(p98, 98).split())
    for claim in "abcd":
        assert f"| {cl.loc[claim, 'value']} |" in doc, claim
    for r in pd.read_csv(out / "best.csv").itertuples():
        row = (f"| {r.m} x {r.n} x {r.k} | {r.best_order} | {r.best_ms:.3f} | {r.absolute_pct:+.1f} | "
               f"{r.capped_pct:+.1f} | {r.naive_pct:+.1f} | {r.capped_pick_lost_pct:.2f} |")
        assert row in doc, row


def test_the_post_hoc_table_of_plan_96s_blocks_under_the_adopted_law_is_what_the_script_writes(tmp_path):
    """bench/posthoc_capped96.py: the committed table byte for byte (the profile as it is now, so a change of the
    adopted law shows here), and plan 98's section's post-hoc bullet."""
    from tests.test_plan85_grouped_kept import _doc_section

    pc = load_bench("posthoc_capped96")
    assert pc.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "cases.csv").read_text() == (pc.OUT / "cases.csv").read_text()
    c = pd.read_csv(pc.OUT / "cases.csv")
    swiglu = c[~c.experiment.str.contains("pythia")]
    pythia = c[c.experiment.str.contains("pythia")].set_index("case").capped_pct
    doc = " ".join(_doc_section(pc, 98).split())
    mean = lambda col: f"{c[col].abs().mean():.2f}%"  # noqa: E731
    assert f"mean |error| {mean('capped_pct')} against the registered {mean('absolute_pct')} (`waves` " \
           f"{mean('waves_pct')}, `flat` {mean('flat_pct')})" in doc
    assert f"SwiGLU cases {swiglu.capped_pct.min():.1f} to {swiglu.capped_pct.max():+.1f}% (registered " \
           f"{swiglu.absolute_pct.min():+.1f} to {swiglu.absolute_pct.max():+.1f}%)" in doc
    assert f"Pythia-410M {pythia['m=16384']:.1f} and {pythia['m=65536']:.1f}%" in doc
