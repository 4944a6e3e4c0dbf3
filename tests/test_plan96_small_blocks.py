"""bench/plan96_small_blocks.py: registered plan 96's registration (the H100 datasheet profile on small models' MLP
blocks, beside the naive line, the waves predictor and the flat profile), its claims on made-up calls, and calls its
judge must refuse (no GPU)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan83_alone_edge import ENV


@pytest.fixture(scope="module")
def p96():
    return load_bench("plan96_small_blocks")


@pytest.fixture(scope="module")
def registered(p96):
    return pd.read_csv(p96.REGISTERED / "predicted.csv")


def test_the_registration_is_what_its_sources_give(p96, registered):
    pd.testing.assert_frame_equal(p96.register().reset_index(drop=True), registered, check_exact=False, rtol=0,
                                  atol=5e-5, check_dtype=False)
    counts = registered.groupby("source").size()
    assert set(counts.index) == set(p96.SOURCES) and (counts == 10).all()  # 4 blocks x 2 M, the reference x 2
    assert set(registered.experiment) == set(p96.EXPERIMENTS)


def call(p96, run, registered, source="model", scale=None, gpu="H100"):
    """A made-up call on ``gpu``: every case timed at ``source``'s prediction times ``scale[experiment]`` (default
    1)."""
    run.mkdir(parents=True)
    (run / "env.txt").write_text("index, name, uuid, serial, driver_version, clocks.current.sm [MHz]\n"
                                 + ENV[gpu] + "\n")
    for exp in p96.EXPERIMENTS:
        (run / exp).mkdir()
        d = registered[(registered.experiment == exp) & (registered.source == source)]
        x = (scale or {}).get(exp, 1.0)
        pd.DataFrame({"case": d.case, "strategy": d.strategy, "status": "ok",
                      "makespan_ms": d.predicted_ms * x}).to_csv(run / exp / "results.csv", index=False)
    return run


def judged(p96, run, tmp_path):
    out = tmp_path / "judged"
    assert p96.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "cases.csv"), pd.read_csv(out / "claims.csv").set_index("claim")


def test_a_call_as_the_model_priced_it_meets_every_claim(p96, registered, tmp_path):
    c, cl = judged(p96, call(p96, tmp_path / "run", registered), tmp_path)
    assert cl.met.all(), cl
    assert cl.loc["a", "value"] == "MAPE 0.00%, worst +0.00% over 8 cases"
    assert cl.loc["d", "value"].endswith("(reference ratio 1.0000)")


def test_a_call_as_the_waves_predictor_priced_it_misses_c(p96, registered, tmp_path):
    _, cl = judged(p96, call(p96, tmp_path / "run", registered, "waves"), tmp_path)
    assert not cl.loc["c", "met"]


def test_a_machine_four_percent_fast_misses_a_and_b_but_the_reference_takes_it_out(p96, registered, tmp_path):
    scale = {e: 1 / 1.04 for e in p96.EXPERIMENTS}
    c, cl = judged(p96, call(p96, tmp_path / "run", registered, scale=scale), tmp_path)
    assert cl.loc[["a", "b", "d"], "met"].tolist() == [False, False, True]  # (c): waves is nearer a fast machine
    assert cl.loc["a", "value"].startswith("MAPE 4.00%, worst +4.00%")
    scaled = c[c.source == "scaled"]
    assert scaled.error_pct.abs().max() < 1e-6 and len(scaled) == 10


def test_blocks_four_percent_fast_on_a_machine_the_model_prices_right_miss_d_too(p96, registered, tmp_path):
    scale = {e: 1 / 1.04 for e in p96.BLOCKS}
    _, cl = judged(p96, call(p96, tmp_path / "run", registered, scale=scale), tmp_path)
    assert cl.loc[["a", "b", "d"], "met"].tolist() == [False, False, False]


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "reg96-pythia-410m-1gpu" / "results.csv").unlink(), "reg96-pythia-410m-1gpu/results.csv"),
    (lambda run: pd.read_csv(run / "reg49-reference" / "results.csv").iloc[:1].to_csv(
        run / "reg49-reference" / "results.csv", index=False), "reg49-reference: no timed run of m=16384"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p96, registered, tmp_path, capsys, damage, message):
    run = call(p96, tmp_path / "run", registered)
    damage(run)
    out = tmp_path / "judged"
    assert p96.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan96_small_blocks: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_an_h200_call_and_a_registration_missing_a_source_are_refused(p96, registered, tmp_path, capsys):
    assert p96.main(["--judge", str(call(p96, tmp_path / "h200", registered, gpu="H200")), "--out",
                     str(tmp_path / "o")]) == 2
    assert "not an H100" in capsys.readouterr().err
    meas = p96.measured(call(p96, tmp_path / "run", registered))
    with pytest.raises(p96.JudgeError, match="every source prices every case"):
        p96.cases(registered[registered.source != "waves"], meas)


def test_the_committed_h100_call_judges_as_committed_and_the_docs_quote_it(p96, tmp_path):
    """The call (bench/results/hw-h100/2026-12-07-registered96-1gpu, GPU-ce8d23e0) judged again gives the committed
    tables: (a), (b) and (d) met, (c) missed, registered; docs/validation.md's plan 96 tables are what it gives."""
    from tests.test_plan85_grouped_kept import _doc_section

    out = tmp_path / "judged"
    run = p96.ROOT / "bench/results/hw-h100/2026-12-07-registered96-1gpu"
    assert p96.main(["--judge", str(run), "--out", str(out)]) == 0
    for name in ("cases.csv", "claims.csv"):
        assert (out / name).read_text() == (p96.ROOT / "bench/results/validation-registered96" / name).read_text()
    cl = pd.read_csv(out / "claims.csv").set_index("claim")
    assert cl.met.tolist() == [True, True, False, True]
    assert cl.provenance.str.startswith("registered: predictions added in 971ba921").all()
    doc = " ".join(_doc_section(p96, 96).split())
    for claim in "abcd":
        assert cl.loc[claim, "value"] in doc, claim
    c = pd.read_csv(out / "cases.csv")
    for (exp, case), d in c.groupby(["experiment", "case"]):
        d = d.set_index("source")
        cells = " | ".join(f"{d.loc[s, 'error_pct']:+.1f}" for s in ("model", "scaled", "naive", "waves", "flat"))
        assert f"| {case[2:]} | {d.loc['model', 'measured_ms']:.3f} | {cells} |" in doc, (exp, case)
