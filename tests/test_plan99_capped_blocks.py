"""bench/plan99_capped_blocks.py: registered plan 99's registration (the adopted H100 profile on five held-out small
models' MLP blocks, beside the absolute K law, the naive line, the waves predictor and the flat profile), its claims on
made-up calls, and calls its judge must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan96_small_blocks import call as call96


@pytest.fixture(scope="module")
def p99():
    return load_bench("plan99_capped_blocks")


@pytest.fixture(scope="module")
def registered(p99):
    return pd.read_csv(p99.REGISTERED / "predicted.csv")


def test_the_registration_is_what_its_sources_give(p99, registered):
    pd.testing.assert_frame_equal(p99.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    counts = registered.groupby("source").size()
    assert set(counts.index) == set(p99.SOURCES) and (counts == 12).all()  # 5 blocks x 2 M, the reference x 2
    assert set(registered.experiment) == set(p99.EXPERIMENTS)


def test_the_absolute_rows_are_the_pinned_law_and_differ_from_the_adopted(p99, registered):
    """``absolute`` prices every block slower than the adopted capped law (their up GEMMs' K is under 8192) and the
    reference GEMM (K = 8192) the same."""
    r = registered.pivot_table(index=["experiment", "case"], columns="source", values="predicted_ms")
    blocks = r.loc[list(p99.BLOCKS)]
    assert (blocks["absolute"] > blocks["model"] * 1.005).all()
    ref = r.loc[p99.REFERENCE_EXPERIMENT]
    assert (ref["absolute"] - ref["model"]).abs().max() < 1e-9


def call(p99, run, registered, source="model", scale=None, gpu="H100"):
    return call96(p99, run, registered, source, scale, gpu)


def judged(p99, run, tmp_path):
    out = tmp_path / "judged"
    assert p99.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "cases.csv"), pd.read_csv(out / "claims.csv").set_index("claim")


def test_a_call_as_the_model_priced_it_meets_every_claim(p99, registered, tmp_path):
    c, cl = judged(p99, call(p99, tmp_path / "run", registered), tmp_path)
    assert cl.met.all(), cl
    assert cl.loc["a", "value"] == "MAPE 0.00%, worst +0.00% over 10 cases"
    assert set(c.source) == {*p99.SOURCES, "scaled"}


@pytest.mark.parametrize("source, missed", [("absolute", "d"), ("waves", "c")])
def test_a_call_as_another_source_priced_it_misses_its_claim(p99, registered, tmp_path, source, missed):
    _, cl = judged(p99, call(p99, tmp_path / "run", registered, source), tmp_path)
    assert not cl.loc[missed, "met"], cl


def test_a_machine_four_percent_fast_misses_a_and_b_but_the_reference_takes_it_out(p99, registered, tmp_path):
    scale = {e: 1 / 1.04 for e in p99.EXPERIMENTS}
    c, cl = judged(p99, call(p99, tmp_path / "run", registered, scale=scale), tmp_path)
    assert cl.loc[["a", "b", "e"], "met"].tolist() == [False, False, True]
    assert cl.loc["a", "value"].startswith("MAPE 4.00%, worst +4.00%")
    scaled = c[c.source == "scaled"]
    assert scaled.error_pct.abs().max() < 1e-6 and len(scaled) == 12


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "reg99-opt-1.3b-1gpu" / "results.csv").unlink(), "reg99-opt-1.3b-1gpu/results.csv"),
    (lambda run: pd.read_csv(run / "reg49-reference" / "results.csv").iloc[:1].to_csv(
        run / "reg49-reference" / "results.csv", index=False), "reg49-reference: no timed run of m=16384"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p99, registered, tmp_path, capsys, damage, message):
    run = call(p99, tmp_path / "run", registered)
    damage(run)
    out = tmp_path / "judged"
    assert p99.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan99_capped_blocks: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_an_h200_call_and_a_registration_missing_the_absolute_rows_are_refused(p99, registered, tmp_path, capsys):
    assert p99.main(["--judge", str(call(p99, tmp_path / "h200", registered, gpu="H200")), "--out",
                     str(tmp_path / "o")]) == 2
    assert "not an H100" in capsys.readouterr().err
    meas = p99.measured(call(p99, tmp_path / "run", registered))
    with pytest.raises(p99.JudgeError, match="every source prices every case"):
        p99.cases(registered[registered.source != "absolute"], meas)


def test_the_committed_h100_call_judges_as_committed_and_the_docs_quote_it(p99, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered99-1gpu, GPU-16470bc4) judged again gives the committed
    tables: (a), (b), (c) and (e) met, (d) missed, registered; docs/validation.md's plan 99 tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p99.ROOT / "bench/results/hw-h100/2026-12-07-registered99-1gpu"
    assert p99.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("cases.csv", "claims.csv"):
        assert (out / name).read_text() == (p99.ROOT / "bench/results/validation-registered99" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [True, True, True, False, True]
    assert cl.provenance.str.startswith("registered: predictions added in 00a2179c").all()
    doc = " ".join(_doc_section(p99, 99).split())
    for claim in "abcde":
        assert cl.loc[claim, "value"] in doc, claim
    c = pd.read_csv(out / "cases.csv")
    for (exp, case), d in c.groupby(["experiment", "case"]):
        d = d.set_index("source")
        cells = " | ".join(f"{d.loc[s, 'error_pct']:+.1f}"
                           for s in ("model", "absolute", "scaled", "naive", "waves", "flat"))
        assert f"| {case[2:]} | {d.loc['model', 'measured_ms']:.3f} | {cells} |" in doc, (exp, case)
    b = c[c.experiment.isin(p99.BLOCKS)].pivot_table(index=["experiment", "case"], columns="source", values="error_pct")
    nearer = int((b["model"].abs() < b["absolute"].abs()).sum())
    model_doc = " ".join((p99.ROOT / "docs/model.md").read_text().split())
    assert (f"at {b['model'].abs().mean():.2f}% with the capped law and {b['absolute'].abs().mean():.2f}% with the "
            f"absolute one (each nearer on {['zero', 'one', 'two', 'three', 'four', 'five'][nearer]} of ten cases)"
            ) in model_doc and nearer == 5
