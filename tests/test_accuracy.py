"""ctasim compare / ctasim.accuracy on the committed registration and its single-GPU measurement."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from ctasim import accuracy, results
from ctasim.cli import main

ROOT = Path(__file__).resolve().parent.parent
PRED = ROOT / "bench" / "predictions"
MEAS = ROOT / "bench" / "results" / "hw" / "2026-12-01-registered-1gpu"
EXPS = ("reg-gemm-h4096", "reg-gemm-h12288", "reg-h4096", "reg-h12288", "reg-mlp")


@pytest.mark.parametrize("exp", EXPS)
def test_committed_report_is_what_compare_writes(exp, tmp_path):
    """The committed accuracy tables (bench/results/validation-registered) come out of the committed files."""
    assert main(["compare", str(PRED / exp), str(MEAS / exp), "--out", str(tmp_path / exp)]) == 0
    got = pd.read_csv(tmp_path / exp / "accuracy.csv")
    committed = pd.read_csv(ROOT / "bench" / "results" / "validation-registered" / exp / "accuracy.csv")
    pd.testing.assert_frame_equal(got.drop(columns="registered"), committed.drop(columns="registered"))


def test_errors_are_predicted_minus_measured_over_measured():
    pred = results.read(PRED / "reg-gemm-h4096" / "predictions.csv")
    meas = results.read(MEAS / "reg-gemm-h4096" / "results.csv")
    j = accuracy.judge(pred, meas)
    r = j[(j["source"] == "model") & (j["case"] == "m=3072,layers=1")].iloc[0]
    p = pred[(pred["source"] == "model") & (pred["case"] == "m=3072,layers=1")]["makespan_ms"].iloc[0]
    m = meas[meas["case"] == "m=3072,layers=1"]["makespan_ms"].iloc[0]
    assert r["error"] == pytest.approx((p - m) / m)
    assert set(j["source"]) == {"model", "naive"} and len(j) == 6


def test_registered_only_when_git_shows_the_prediction_first(tmp_path):
    prov = accuracy.provenance_order(PRED / "reg-mlp" / "predictions.csv", MEAS / "reg-mlp" / "results.csv")
    if not prov.prediction_commit or prov.prediction_commit == prov.measurement_commit:
        pytest.skip("not a git checkout with full history (a shallow clone shows one commit adding both)")
    assert prov.registered, prov.why
    # reversed: the measurement as the "prediction" comes after -> post-hoc
    rev = accuracy.provenance_order(MEAS / "reg-mlp" / "results.csv", PRED / "reg-mlp" / "predictions.csv")
    assert not rev.registered and "do not come before" in rev.why
    # an uncommitted copy has no registration date
    shutil.copytree(PRED / "reg-mlp", tmp_path / "reg-mlp")
    assert not accuracy.provenance_order(tmp_path / "reg-mlp" / "predictions.csv", MEAS / "reg-mlp" / "results.csv").registered


def test_a_measurement_of_another_experiment_or_garbage_is_one_line_and_exit_2(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["compare", str(PRED / "reg-mlp"), str(MEAS / "reg-h4096"), "--out", str(out)]) == 2
    assert "measures ['reg-h4096']" in capsys.readouterr().err and not out.exists()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.csv").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    assert main(["compare", str(PRED / "reg-mlp"), str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "results" in err and not out.exists()
    trunc = tmp_path / "trunc"
    trunc.mkdir()
    (trunc / "results.csv").write_text((MEAS / "reg-mlp" / "results.csv").read_text()[:200])
    assert main(["compare", str(PRED / "reg-mlp"), str(trunc), "--out", str(out)]) == 2
    assert not out.exists()


def test_a_measured_row_without_a_prediction_is_refused():
    pred = results.read(PRED / "reg-h4096" / "predictions.csv")
    meas = results.read(MEAS / "reg-h4096" / "results.csv")
    with pytest.raises(results.ResultsError, match="has no prediction"):
        accuracy.judge(pred[pred["case"] != "m=6144"], meas)


def test_the_docs_choices_table_says_what_choices_csv_says():
    """docs/validation.md's best-chunk/ranking table against bench/results/validation/choices.csv, row by row."""
    import pandas as pd

    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "validation.md").read_text()
    table = doc.split("### Choices: best chunk count and strategy ranking per M", 1)[1].split("\n\n", 2)[1]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    ch = pd.read_csv(root / "bench" / "results" / "validation" / "choices.csv").set_index("m")
    assert sorted(int(r[0]) for r in rows) == sorted(ch.index)
    for m, split, chunks, _margin, measured, simulated in rows:
        c = ch.loc[int(m)]
        assert split.replace(" ", "_") == c["role"]
        assert chunks == f"{c['best_chunks_measured']} / {c['best_chunks_simulated']}"
        assert measured == c["ranking_measured"]
        assert (simulated == "same") == bool(c["ranking_agrees"])
        assert simulated in ("same", c["ranking_simulated"])
