"""ctasim compare / ctasim.accuracy on the committed registration and its single-GPU measurement."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ctasim import accuracy, results
from ctasim.cli import main
from tests.helpers import load_bench

ROOT = Path(__file__).resolve().parent.parent
PRED = ROOT / "bench" / "predictions"
MEAS = ROOT / "bench" / "results" / "hw" / "2026-12-01-registered-1gpu"
EXPS = ("reg-gemm-h4096", "reg-gemm-h12288", "reg-h4096", "reg-h12288", "reg-mlp")


MEAS2 = ROOT / "bench" / "results" / "hw" / "2026-12-01-registered2-1gpu"
EXPS2 = ("reg2-mlp", "reg2-mlp-h4096", "reg2-chain")


MEAS7 = ROOT / "bench" / "results" / "hw" / "2026-12-02-registered7-1gpu"
EXPS7 = ("reg7-reference", "reg7-qwen2.5-32b-1gpu", "reg7-mistral-large-2-1gpu", "reg7-gpt3-175b-1gpu")


MEAS8 = ROOT / "bench" / "results" / "hw" / "2026-12-02-registered8-1gpu"
EXPS8 = ("reg8-reference", "reg8-llama2-13b-1gpu", "reg8-yi-34b-1gpu", "reg8-command-r-plus-1gpu",
         "reg8-falcon-40b-1gpu")


MEAS9 = ROOT / "bench" / "results" / "hw" / "2026-12-02-registered9-1gpu"
EXPS9 = ("reg9-reference", "reg9-chain-order", "reg9-chain-order-h12288")


MEAS10 = ROOT / "bench" / "results" / "hw" / "2026-12-02-registered10-1gpu"
EXPS10 = ("reg10-reference", "reg10-chain-order-h10240", "reg10-chain-order-h6144", "reg10-chain-order-deep")


MEAS12 = ROOT / "bench" / "results" / "hw" / "2026-12-02-registered12-1gpu"
EXPS12 = ("reg12-ring",)

MEAS18 = ROOT / "bench" / "results" / "hw" / "2026-12-02-registered18-1gpu"
EXPS18 = ("reg18-chain-gelu",)

MEAS19 = ROOT / "bench" / "results" / "hw" / "2026-12-02-registered19-1gpu"
EXPS19 = ("reg19-fold-boundary",)

MEAS37 = ROOT / "bench" / "results" / "hw" / "2026-12-03-registered37-1gpu"
EXPS37 = ("reg37-reference-sustained", "reg37-yi-34b-sustained")
MEAS40 = ROOT / "bench" / "results" / "hw" / "2026-12-03-registered40-1gpu"
EXPS40 = ("reg40-ring-shared-l3", "reg40-ring-shared-l4")
MEAS38_40 = ROOT / "bench" / "results" / "hw" / "2026-12-03-registered38-40-1gpu"
EXPS38 = ("reg38-fig4-x8", "reg38-fig7-x8")
MEAS41 = ROOT / "bench" / "results" / "hw" / "2026-12-03-registered41-1gpu"
MEAS42 = ROOT / "bench" / "results" / "hw" / "2026-12-03-registered42-1gpu"
EXPS42 = tuple(f"reg42-ring-shared-{t}{s}" for t in ("l2", "l3", "l4") for s in ("", "-even"))
"""Plan 42's registrations; a '-even' one predicts its base experiment (the same measurement) with plan 40's profile."""


@pytest.mark.parametrize("exp, meas, reports", [(e, MEAS, "validation-registered") for e in EXPS]
                         + [(e, MEAS2, "validation-registered2") for e in EXPS2]
                         + [(e, MEAS7, "validation-registered7") for e in EXPS7]
                         + [(e, MEAS8, "validation-registered8") for e in EXPS8]
                         + [(e, MEAS8.with_name(MEAS8.name + "-run2"), "validation-registered8-run2") for e in EXPS8]
                         + [(e, MEAS9, "validation-registered9") for e in EXPS9]
                         + [(e, MEAS10, "validation-registered10") for e in EXPS10]
                         + [(e, MEAS12, "validation-registered12") for e in EXPS12]
                         + [(e, MEAS18, "validation-registered18") for e in EXPS18]
                         + [(e, MEAS19, "validation-registered19") for e in EXPS19]
                         + [(e, MEAS37, "validation-registered37") for e in EXPS37]
                         + [(e, MEAS40, "validation-registered40") for e in EXPS40]
                         + [(e, MEAS38_40, "validation-registered40-run2") for e in EXPS40]
                         + [(e, MEAS38_40, "validation-registered38-1gpu") for e in EXPS38]
                         + [("reg41-ring-shared-l2", MEAS41, "validation-registered41")]
                         + [(e, MEAS42, "validation-registered42") for e in EXPS42]
                         + [(e, MEAS42.with_name(MEAS42.name + "-run2"), "validation-registered42-run2") for e in EXPS42])
def test_committed_report_is_what_compare_writes(exp, meas, reports, tmp_path):
    """The committed accuracy tables (bench/results/validation-registered*) come out of the committed files (without
    the figures, which take most of a report's time: the overlays' test below draws them)."""
    meas = meas / exp.removesuffix("-even")  # a '-even' registration predicts its base experiment's measurement
    assert main(["compare", str(PRED / exp), str(meas), "--out", str(tmp_path / exp), "--no-plots"]) == 0
    assert not list((tmp_path / exp).glob("*.png"))
    got = pd.read_csv(tmp_path / exp / "accuracy.csv")
    committed = pd.read_csv(ROOT / "bench" / "results" / reports / exp / "accuracy.csv")
    pd.testing.assert_frame_equal(got.drop(columns="registered"), committed.drop(columns="registered"))
    # ... and so do its summary and its report, word for word (the measurement's path as the committed run gave it)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / exp / "summary.csv").drop(columns="registered"),
                                  pd.read_csv(ROOT / "bench" / "results" / reports / exp / "summary.csv")
                                  .drop(columns="registered"))
    text = (tmp_path / exp / "report.md").read_text().replace(str(meas), str(meas.relative_to(ROOT)))
    text = text.replace(accuracy.NO_OVERLAYS, accuracy.OVERLAYS)
    committed = (ROOT / "bench" / "results" / reports / exp / "report.md").read_text()
    if not accuracy.provenance_order(PRED / exp / "predictions.csv", meas / "results.csv").registered:
        # no git history here (an export, a shallow clone): only the provenance line may differ
        text, committed = (t.replace("**POST-HOC**", "**REGISTERED**").replace("Post-hoc figures", "Registered figures")
                           .split("\n", 3)[3] for t in (text, committed))
    assert text == committed


def test_a_ring_on_a_shared_device_is_judged_as_its_own_kind():
    """Plan 40's rings ran their kernels on one device: their accuracy is not the multi-GPU protocol's (the kind
    ctasim advise reads), so compare files them under ctapipe-shared, from the experiment's spec."""
    pred = results.read(PRED / "reg40-ring-shared-l3" / "predictions.csv")
    meas = results.read(MEAS40 / "reg40-ring-shared-l3" / "results.csv")
    assert set(accuracy.judge(pred, meas)["kind"]) == {"ctapipe"}
    assert set(accuracy.judge(pred, meas, shared_device=True)["kind"]) == {accuracy.SHARED_CTAPIPE}
    assert accuracy._shared_device(PRED / "reg40-ring-shared-l3" / "registration.json")  # from its spec
    assert not accuracy._shared_device(PRED / "reg38-fig4-x8" / "registration.json")
    s = pd.read_csv(ROOT / "bench/results/validation-registered40/reg40-ring-shared-l3/summary.csv")
    assert set(s["kind"]) == {accuracy.SHARED_CTAPIPE, "all"}


def test_a_registration_records_whether_its_device_is_shared_and_compare_reads_it_first(tmp_path):
    """registration.json's shared_device (ctasim predict writes it) decides; without it the experiment's spec by
    name; an experiment given as a path that is gone predates shared devices; a spec that no longer loads is an
    error, not a silent 'not shared'."""
    import json

    reg = json.loads((PRED / "reg40-ring-shared-l3" / "registration.json").read_text())
    for value in (True, False):
        (tmp_path / "r.json").write_text(json.dumps(dict(reg, shared_device=value)))
        assert accuracy._shared_device(tmp_path / "r.json") is value
    (tmp_path / "r.json").write_text(json.dumps(dict(reg, experiment="/gone/exp.toml")))
    assert accuracy._shared_device(tmp_path / "r.json") is False
    bad = tmp_path / "bad.toml"
    bad.write_text('[experiment]\nname = "b"\nhardware = "nope"\n')
    (tmp_path / "r.json").write_text(json.dumps(dict(reg, experiment=str(bad))))
    with pytest.raises(results.ResultsError, match="does not load"):
        accuracy._shared_device(tmp_path / "r.json")
    assert main(["predict", "reg40-ring-shared-l3", "--out", str(tmp_path / "p"), "--no-schedules"]) == 0
    assert json.loads((tmp_path / "p" / "registration.json").read_text())["shared_device"] is True


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


PIPE_SPEC = """
[experiment]
name = "pipe-1024"
hardware = "h200-x2-calibrated"
gpus = 2

[experiment.workload]
dtype = "bf16"
layers = 2
m = 1024
k = 8192
n = 8192
tile = [128, 256]

[experiment.sweep]
m = [1024]

[[experiment.strategy]]
kind = "ctapipe"
name = "ctapipe-w21g4"
variant = "cutlass_ctapipe_w21g4"
"""


def _pipe_measurement(tmp_path, shift_layer1_frac: float = 0.0):
    """Predictions of a 2-GPU w21g4 case, and a measurement folder holding the committed 2xH200 trace of that kernel
    at M = 1024 (2026-11-29-ctapipe-taper2), named for the case and strategy, its consumer optionally shifted."""
    from ctasim.cases import load_experiment
    from ctasim.harness import load_harness
    from ctasim.predict import register
    from ctasim.trace import load_traces, save_traces
    from ctasim.trace import TRACES_FILE

    spec = tmp_path / "pipe-1024.toml"
    spec.write_text(PIPE_SPEC)
    pred = tmp_path / "pred"
    if not pred.exists():
        register(load_experiment(str(spec)), spec, pred, load_harness("ctahw-timed-2xh200"), None)
    bundle = load_traces(ROOT / "bench/results/hw/2026-11-29-ctapipe-taper2" / TRACES_FILE)
    (tr,) = [t for t in bundle.values() if t.meta["m"] == 1024 and t.meta["variant"] == "cutlass_ctapipe_w21g4_trace"]
    tr.meta.update(case="m=1024", strategy="ctapipe-w21g4")
    if shift_layer1_frac:
        t = tr.tiles
        dt = shift_layer1_frac * tr.makespan_ns
        for c in ("t_start", "t_acquire", "t_ready", "t_compute_end", "t_store_end", "t_signal"):
            t.loc[t["layer"] == t["layer"].max(), c] += dt
    meas = tmp_path / f"meas{shift_layer1_frac}"
    meas.mkdir()
    save_traces({"m=1024:cutlass_ctapipe_w21g4_trace:run0": tr}, meas / TRACES_FILE)
    row = {c: "" for c in results.COLUMNS}
    row.update(experiment="pipe-1024", case="m=1024", strategy="ctapipe-w21g4", kind="ctapipe", gpus=2, m=1024,
               layers=2, source="hw", status="ok", makespan_ms=tr.makespan_ns * 1e-6, rel_err=1e-3)
    results.write(pd.DataFrame([row], columns=list(results.COLUMNS)), meas / "results.csv")
    return pred, meas


def test_compare_overlays_predicted_and_measured_per_cta_schedules_on_a_committed_trace(tmp_path):
    """ctasim compare on a committed measured ctapipe trace: a per-CTA table and an overlay per traced run; the
    per-CTA errors grow when the measured consumer is shifted by 20% of the makespan (the comparison bites)."""
    pred, meas = _pipe_measurement(tmp_path)
    text, files = accuracy.write_report(pred, meas, tmp_path / "report")
    assert "## Per-CTA schedules of the pipelined strategies" in text
    names = {p.name for p in files}
    assert "per-cta.csv" in names and any(n.startswith("overlay-m1024-ctapipe-w21g4-run0") for n in names)
    assert "predicted-vs-measured.png" in names and accuracy.OVERLAYS in text
    good = pd.read_csv(tmp_path / "report" / "per-cta.csv")
    assert len(good) == 1 and good["tiles_matched"].iloc[0] == 2 * (1024 // 128) * (8192 // 256)
    assert good["start_median_frac"].iloc[0] < 0.05
    _, shifted = _pipe_measurement(tmp_path, shift_layer1_frac=0.2)
    text, files = accuracy.write_report(pred, shifted, tmp_path / "report-shifted", plots=False)
    assert accuracy.NO_OVERLAYS in text and accuracy.OVERLAYS not in text
    assert not [p for p in files if p.suffix == ".png"] and "per-cta.csv" in {p.name for p in files}
    bad = pd.read_csv(tmp_path / "report-shifted" / "per-cta.csv")
    assert bad["start_median_frac"].iloc[0] > good["start_median_frac"].iloc[0] + 0.05


def test_a_staged_folder_merges_folders_and_leaves_nothing_on_failure(tmp_path):
    out = tmp_path / "new" / "out"
    for text in ("one", "two"):  # the second merge replaces the sub-folder written by the first
        with results.staged_folder(out, merge=True) as tmp:
            (tmp / "sub").mkdir()
            (tmp / "sub" / "a.md").write_text(text)
    assert (out / "sub" / "a.md").read_text() == "two" and sorted(p.name for p in out.parent.iterdir()) == ["out"]
    with pytest.raises(RuntimeError):
        with results.staged_folder(tmp_path / "fresh" / "deeper" / "out") as tmp:
            (tmp / "x").write_text("half")
            raise RuntimeError("boom")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new"]  # the parents it made are gone too


def _rows(rows, source, status="ok"):
    out = []
    for case, strategy, kind, variant, ms in rows:
        row = {c: "" for c in results.COLUMNS}
        row.update(experiment="x", case=case, strategy=strategy, kind=kind, variant=variant, gpus=2, m=1024, layers=2,
                   source=source, status=status, makespan_ms=ms, rel_err=0.0)
        out.append(row)
    return out


def test_choices_rank_the_measured_strategies_and_pick_the_best_chunk_count_among_those_measured():
    # m=2048 first (the table keeps the measurement's case order); m=1024: micro-batching at 2 and 4 chunks ran,
    # 8 chunks was skipped; the predictors also predict tp, which was not measured (left out of their ranking).
    meas = pd.DataFrame(_rows([("m=2048", "sequential", "sequential", "", 20.0), ("m=2048", "ctapipe", "ctapipe", "", 25.0),
                               ("m=1024", "sequential", "sequential", "", 10.0), ("m=1024", "ctapipe", "ctapipe", "", 8.0),
                               ("m=1024", "microbatch", "microbatch", "2", 9.5),
                               ("m=1024", "microbatch", "microbatch", "4", 9.0)], "hw")
                        + _rows([("m=1024", "microbatch", "microbatch", "8", 1.0)], "hw", status="skipped"))
    pred = pd.DataFrame(
        _rows([("m=2048", "sequential", "sequential", "", 19.0), ("m=2048", "ctapipe", "ctapipe", "", 18.0),
               ("m=1024", "sequential", "sequential", "", 10.0), ("m=1024", "ctapipe", "ctapipe", "", 7.0),
               ("m=1024", "microbatch", "microbatch", "2", 8.5), ("m=1024", "microbatch", "microbatch", "4", 8.8),
               ("m=1024", "microbatch", "microbatch", "8", 1.0), ("m=1024", "tp", "tp", "", 0.5)], "model")
        + _rows([("m=2048", "sequential", "sequential", "", 21.0), ("m=2048", "ctapipe", "ctapipe", "", 22.0),
                 ("m=1024", "sequential", "sequential", "", 12.0), ("m=1024", "ctapipe", "ctapipe", "", 11.0),
                 ("m=1024", "microbatch", "microbatch", "2", 11.7), ("m=1024", "microbatch", "microbatch", "4", 11.5),
                 ("m=1024", "tp", "tp", "", 0.1)], "naive"))
    got = accuracy.choices(pred, meas)
    want = pd.DataFrame([
        {"case": "m=2048", "predictor": "model", "ranking_measured": "sequential < ctapipe", "ranking_agrees": False},
        {"case": "m=2048", "predictor": "naive", "ranking_measured": "sequential < ctapipe", "ranking_agrees": True},
        {"case": "m=1024", "predictor": "model", "ranking_measured": "ctapipe < microbatch < sequential",
         "ranking_agrees": False, "best_chunks_measured": "4", "best_chunks_predicted": "2"},
        {"case": "m=1024", "predictor": "naive", "ranking_measured": "ctapipe < microbatch < sequential",
         "ranking_agrees": True, "best_chunks_measured": "4", "best_chunks_predicted": "4"},
    ])
    pd.testing.assert_frame_equal(got, want)
    # one measured strategy and no micro-batching: nothing to choose, no row
    assert accuracy.choices(pred, meas[meas["case"] == "m=1024"].iloc[[0]]).empty
    # a predictor without micro-batching predictions for a case where it ran: no predicted chunk count
    only = accuracy.choices(pred[pred["kind"] != "microbatch"], meas)
    assert list(only["best_chunks_predicted"].iloc[2:]) == ["", ""]
    # the report carries the table
    text = accuracy.report(accuracy.judge(pred, meas[meas["status"] == "ok"]), accuracy.summary(accuracy.judge(pred, meas)),
                           got, accuracy.Provenance(False, "not committed"), Path("p"), Path("m"), meas.iloc[:0], {})
    assert "**POST-HOC** -- not committed." in text and "## Choices" in text
    assert "ctapipe < microbatch < sequential" in text.split("## Choices", 1)[1]


def test_the_committed_post_hoc_memory_table_is_what_the_script_writes(tmp_path):
    """bench/results/posthoc-memory/ (docs/validation.md quotes it) comes out of the committed runs and specs."""
    mod = load_bench("posthoc_memory")
    assert mod.main(["--out", str(tmp_path)]) == 0
    for name in ("summary.csv", "cases.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name),
                                      pd.read_csv(ROOT / "bench" / "results" / "posthoc-memory" / name))


def test_plan_9s_order_tables_are_what_the_judge_writes(tmp_path, monkeypatch):
    """bench/chain_order_judge.py's committed rule tables (order effect, chain against sequential) and the figures
    docs/validation.md quotes from them."""
    judge = load_bench("chain_order_judge")
    for plan in (10, 9):
        judge.use_plan(plan)
        monkeypatch.setattr(judge, "OUT", tmp_path / str(plan))
        assert judge.main([]) == 0
        for name in ("order-effect.csv", "chain-vs-sequential.csv"):
            pd.testing.assert_frame_equal(pd.read_csv(tmp_path / str(plan) / name),
                                          pd.read_csv(ROOT / "bench" / "results" / f"validation-registered{plan}" / name))
    assert judge.main(["11"]) == 2
    tmp_path = tmp_path / "9"
    oe = pd.read_csv(tmp_path / "order-effect.csv")
    slower = oe[oe["order"] != "intragpu-g16"]
    assert (slower["measured"] > 1.07).all() and (slower["model"] < 1.07).all()  # the size the model missed
    row = oe[oe["order"] == "intragpu-row"]["measured"]
    doc = (ROOT / "docs" / "validation.md").read_text()
    assert f"| row order | 5 | 21.13% | −29.92% | 23.77% | {row.min():.3f}-{row.max():.3f} |" in doc


def test_plan_10s_order_effect_is_what_the_docs_say():
    oe = pd.read_csv(ROOT / "bench" / "results" / "validation-registered10" / "order-effect.csv")
    sign = (oe["model"] > 1) == (oe["measured"] > 1)
    err = (oe["model"] - oe["measured"]).abs().mean()
    lock = (oe["lockstep"] - oe["measured"]).abs().mean()
    doc = (ROOT / "docs" / "validation.md").read_text()
    assert sign.all() and f"mean absolute error of the ratios **{100 * err:.1f} points** (lockstep {100 * lock:.1f}" in doc


def test_plan_9s_post_hoc_table_keeps_the_registered_errors_and_beats_them_by_what_the_docs_say():
    """bench/results/validation-registered9/posthoc-ticket-spread.csv (bench/posthoc_ticket_spread.py): its registered
    columns are the committed registered reports' errors; its post-hoc MAPE is the one docs/validation.md quotes."""
    post = pd.read_csv(ROOT / "bench" / "results" / "validation-registered9" / "posthoc-ticket-spread.csv")
    reg = pd.concat([pd.read_csv(ROOT / "bench" / "results" / "validation-registered9" / e / "accuracy.csv")
                     for e in ("reg9-chain-order", "reg9-chain-order-h12288")])
    reg = reg[reg["source"] == "model"].set_index(["experiment", "case", "strategy"])["error"]
    got = post.set_index(["experiment", "case", "strategy"])["error_registered"]
    assert len(got) == 25
    pd.testing.assert_series_equal(got.sort_index(), reg.sort_index(), check_names=False, atol=1e-5)
    doc = (ROOT / "docs" / "validation.md").read_text()
    before, after = 100 * post["error_registered"].abs().mean(), 100 * post["error_posthoc"].abs().mean()
    assert f"MAPE over the 25 cases {before:.2f}% → {after:.2f}%" in doc
    assert after < before / 2


def judge_plan(tmp_path, plan: int, folder: str):
    """bench/plan_judge.py PLAN on a copy of the committed reports ``folder``: (its claims, which must equal the
    committed claims.csv; the script's module; the copy)."""
    import shutil

    mod = load_bench("plan_judge")
    reports = tmp_path / "r"
    shutil.copytree(ROOT / "bench/results" / folder, reports)
    assert mod.main([str(plan), "--reports", str(reports)]) == 0
    got = pd.read_csv(reports / "claims.csv").set_index("predictor")
    pd.testing.assert_frame_equal(got, pd.read_csv(ROOT / "bench/results" / folder / "claims.csv").set_index("predictor"))
    return got, mod, reports


@pytest.mark.parametrize("folder,carried_within", [("validation-registered20", True),
                                                   ("validation-registered20-run2", False)])
def test_registered_plan_20s_claims_are_what_its_committed_reports_give(tmp_path, folder, carried_within):
    """bench/plan_judge.py 20 on the committed reports of registered plan 20 (two machines) gives the committed claims
    table, and the claims as docs/validation.md reports them: the carried model under half the naive line's MAPE,
    within the targets on the first machine and not on the second, the wave form closer on both (claim b failed),
    lockstep under every case."""
    got, mod, reports = judge_plan(tmp_path, 20, folder)
    c = got.loc["carried"]
    assert c.cases == 8 and (c.mape_pct <= 3 and abs(c.worst_pct) <= 6) == carried_within
    half = c.mape_pct <= got.loc["naive", "mape_pct"] / 2 and c.mape_pct <= got.loc["waves", "mape_pct"] / 2
    assert half == carried_within  # 3.85% against the naive line's 6.48% on the second machine: not half
    assert c.mape_pct < got.loc["naive", "mape_pct"] / 1.5
    # claim (d): the wave form over-predicts at least 6 of 8 -- on the first machine (6), not the second (5)
    assert got.loc["wave", "mape_pct"] < c.mape_pct and (got.loc["wave", "over"] >= 6) == carried_within
    assert got.loc["lockstep", "over"] == 0
    (reports / "reg20-yi-34b-1gpu-wave" / "accuracy.csv").unlink()
    assert mod.main(["20", "--reports", str(reports)]) == 2  # a missing report is refused, not skipped


PLAN21_CLAIMS = {"validation-registered21": dict(a=True, b=False, c=False, d=True),
                 "validation-registered21-run2": dict(a=False, b=False, c=True, d=False)}
"""Registered plan 21's claims per measuring machine, as docs/validation.md reports them: (a) the interleaved model
within MAPE 3% and worst 6%, (b) at most half the naive line's and waves' MAPE, (c) at most the carried form's,
(d) below the wave form's."""


@pytest.mark.parametrize("folder", sorted(PLAN21_CLAIMS))
def test_registered_plan_21s_claims_are_what_its_committed_reports_give(tmp_path, folder):
    got, mod, reports = judge_plan(tmp_path, 21, folder)
    m, want = got.loc["interleaved"], PLAN21_CLAIMS[folder]
    assert m.cases == 10
    assert (m.mape_pct <= 3 and abs(m.worst_pct) <= 6) == want["a"]
    assert (m.mape_pct <= got.loc["naive", "mape_pct"] / 2 and m.mape_pct <= got.loc["waves", "mape_pct"] / 2) == want["b"]
    assert (m.mape_pct <= got.loc["carried", "mape_pct"]) == want["c"]
    assert (m.mape_pct < got.loc["wave", "mape_pct"]) == want["d"]
    (reports / "reg21-opt-66b-1gpu-carried" / "accuracy.csv").unlink()
    assert mod.main(["21", "--reports", str(reports)]) == 2


PLAN22_CLAIMS = {"validation-registered22": dict(a=True, b=True, c=True, d=True),
                 "validation-registered22-run2": dict(a=True, b=True, c=True, d=True),
                 "validation-registered22-run3": dict(a=True, b=True, c=True, d=True)}
"""Registered plan 22's claims per measuring machine, as docs/validation.md reports them: (a) the interleaved model
within MAPE 3% and worst 6%, (b) at most half the naive line's and waves' MAPE, (c) on OPT-30B below gelu-priced's
|error| at both M, (d) below the wave form's MAPE."""


@pytest.mark.parametrize("folder", sorted(PLAN22_CLAIMS))
def test_registered_plan_22s_claims_are_what_its_committed_reports_give(tmp_path, folder):
    got, mod, reports = judge_plan(tmp_path, 22, folder)
    m, want = got.loc["interleaved"], PLAN22_CLAIMS[folder]
    assert m.cases == 8 and got.loc["gelu-priced", "cases"] == 2
    assert (m.mape_pct <= 3 and abs(m.worst_pct) <= 6) == want["a"]
    assert (m.mape_pct <= got.loc["naive", "mape_pct"] / 2 and m.mape_pct <= got.loc["waves", "mape_pct"] / 2) == want["b"]
    j = pd.read_csv(reports / "judged.csv")
    opt = j[j.experiment == "reg22-opt-30b-1gpu"].pivot_table(index="m", columns="predictor", values="error_pct").abs()
    assert len(opt) == 2 and (opt["interleaved"] < opt["gelu-priced"]).all() == want["c"]
    assert (m.mape_pct < got.loc["wave", "mape_pct"]) == want["d"]
    (reports / "reg22-reference" / "accuracy.csv").unlink()
    assert mod.main(["22", "--reports", str(reports)]) == 2


def test_registered_plan_25s_claims_are_what_its_committed_reports_give(tmp_path):
    """bench/plan_judge.py 25 on the committed reports (one machine) gives the committed claims and pairs, and the
    claims as docs/validation.md reports them: (a) met; (b) missed (1.92% against the naive line's 3.25%); (c) the
    OPT-175B / GPT-3 175B ratio within 1 point of the model's at both M and nearer it than relu-input-off's; and
    block_gemm_orders.py --registered reg25-gemm-orders gives the committed GEMM-order claims and rest: claim (d) met
    on OPT-13B, missed on OPT-175B, whose GeLU twin's rest is as far above the model's."""
    got, mod, reports = judge_plan(tmp_path, 25, "validation-registered25")
    m = got.loc["interleaved"]
    assert m.cases == 6 and got.loc["relu-input-off", "cases"] == 4
    assert m.mape_pct <= 3 and abs(m.worst_pct) <= 6
    assert not (m.mape_pct <= got.loc["naive", "mape_pct"] / 2 and m.mape_pct <= got.loc["waves", "mape_pct"] / 2)
    pairs = pd.read_csv(reports / "pairs.csv")
    pd.testing.assert_frame_equal(pairs, pd.read_csv(ROOT / "bench/results/validation-registered25/pairs.csv"))
    p = pairs.pivot_table(index="m", columns="predictor", values="points").abs()
    assert list(p.index) == [8192, 16384]
    assert (p["interleaved"] <= 1.0).all() and (p["interleaved"] < p["relu-input-off"]).all()
    assert (p["naive"] > 3).all()  # the naive line cannot tell the pair apart
    bgo = _block_gemm_orders()
    out = tmp_path / "o"
    probe = ROOT / "bench/results/hw/2026-12-03-registered25-1gpu/gemm_shapes.csv"
    assert bgo.main(["--probe", str(probe), "--registered", str(ROOT / "bench/predictions/reg25-gemm-orders"),
                     "--blocks", "reg25", "--out", str(out)]) == 0
    committed = ROOT / "bench/results/validation-registered25/gemm-orders"
    for name in ("claims.csv", "shapes.csv", "rest.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / name), pd.read_csv(committed / name))
    r = pd.read_csv(out / "rest.csv").set_index("block")
    near = (r.rest_ms - r.model_rest_ms).abs() < (r.rest_ms - r.off_rest_ms).abs()
    assert near["reg25-opt-13b-1gpu"] and not near["reg25-opt-175b-1gpu"]
    twin = r.loc["reg25-gpt3-175b-1gpu"]
    assert twin.rest_ms - twin.model_rest_ms > 1.0  # the GeLU twin misses its rest by as much (+1.3 ms)
    c = pd.read_csv(out / "claims.csv").set_index("predictor")
    assert c.loc["interleaved", "unpadded_mape_pct"] <= 3 and c.loc["interleaved", "pick_lost_max_pct"] <= 2
    assert c.loc["interleaved", "best_mape_pct"] > c.loc["naive", "best_mape_pct"] / 2  # claim (b) missed
    (reports / "reg25-gpt3-175b-1gpu" / "accuracy.csv").unlink()
    assert mod.main(["25", "--reports", str(reports)]) == 2


def test_registered_plan_24s_claims_are_what_its_committed_tables_give(tmp_path):
    """block_gemm_orders.py --registered reg24-padded-orders on the committed probe gives the committed claims and
    padded table, and the claims as docs/validation.md reports them: (a) unpadded MAPE <= 3%, (b) at most half the
    naive line's at the best orders, (c) every pick within 2% -- the padded pick on Qwen2.5-72B's gate-and-up GEMM is
    the measured best at every M; (4) its 0.4%-padded runs err no more than its unpadded ones, the 25% ones by > 15%."""
    mod = _block_gemm_orders()
    out = tmp_path / "o"
    probe = ROOT / "bench/results/hw/2026-12-03-padded-orders-relu-input/gemm_shapes.csv"
    assert mod.main(["--probe", str(probe), "--registered", str(ROOT / "bench/predictions/reg24-padded-orders"),
                     "--out", str(out)]) == 0
    committed = ROOT / "bench/results/validation-registered24"
    for name in ("claims.csv", "shapes.csv", "padded.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / name), pd.read_csv(committed / name))
    c = pd.read_csv(out / "claims.csv").set_index("predictor")
    assert c.loc["interleaved", "unpadded_mape_pct"] <= 3
    assert c.loc["interleaved", "best_mape_pct"] <= c.loc["naive", "best_mape_pct"] / 2
    assert c.loc["interleaved", "pick_lost_max_pct"] <= 2
    sh = pd.read_csv(out / "shapes.csv")
    qwen = sh[sh.n == 59136]
    assert len(qwen) == 3 and (qwen.interleaved_pick == qwen.best_order).all()
    pad = pd.read_csv(out / "padded.csv")
    small = pad[pad.padding_pct < 1]
    assert len(small) == 27 and (small.interleaved_pct.abs().mean()
                                 <= small.interleaved_pct_unpadded_mean.abs().mean())
    assert (pad[pad.padding_pct >= 25].interleaved_pct < -15).all()


def test_the_committed_post_hoc_drift_form_table_is_what_the_script_writes(tmp_path):
    """bench/posthoc_drift_form.py: its committed summary is what its committed cases give; the adopted profile
    ("interleaved", with the reuse law it had before registered plan 67's adoption on an H200, 2026-12-06: any other
    change to it or to the engine shows here) and plan 8's and plan 20's profiles as registered,
    judged again on all four of those plans' runs, give their committed rows, and the registered ones their registered
    figures back (1.24% and 1.19%; 2.53% and 3.85%), so the script judges the registered models. (The "carried" and
    "wave" twins' rows and plan 7's run come from the same code; judging them again too took ~8 s more.)"""
    root = Path(__file__).resolve().parent.parent
    committed_dir = root / "bench/results/posthoc-drift-form"
    mod = load_bench("posthoc_drift_form")
    committed = pd.read_csv(committed_dir / "cases.csv")
    mod.write(committed, tmp_path)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "summary.csv"), pd.read_csv(committed_dir / "summary.csv"))
    regs = ("interleaved", "wave (registered)", "carried (registered)")
    preds = {k: v for k, v in mod.predictors().items() if k in regs}
    runs = [r for r in mod.RUNS if "registered8" in r or "registered20" in r]
    got = pd.concat([mod.judged(run, name, preds) for run in runs for name in mod.RUNS[run]], ignore_index=True)
    got.to_csv(tmp_path / "cases.csv", index=False, float_format="%.6g")
    got = pd.read_csv(tmp_path / "cases.csv")
    assert set(got.source) == {*regs, "lockstep (interleaved's constants)"}
    want = committed[committed.run.isin(runs) & committed.source.isin(set(got.source))].reset_index(drop=True)
    key = ["run", "registration", "case", "source"]
    got, want = (d.sort_values(key).reset_index(drop=True) for d in (got, want))
    assert len(got) == len(want) > 0
    pd.testing.assert_frame_equal(got, want[got.columns], check_dtype=False)
    mod.write(got, tmp_path / "mine")
    mine = pd.read_csv(tmp_path / "mine" / "summary.csv")
    wave = mine[mine.predictor == "wave (registered)"].set_index("run").mape_pct
    assert wave["2026-12-02-registered8-1gpu"] == 1.24 and wave["2026-12-02-registered8-1gpu-run2"] == 1.19
    carried = mine[mine.predictor == "carried (registered)"].set_index("run").mape_pct  # plan 20's registered model
    assert carried["2026-12-02-registered20-1gpu"] == 2.53 and carried["2026-12-02-registered20-1gpu-run2"] == 3.85


def test_the_machine_spread_tables_are_what_the_script_writes(tmp_path, monkeypatch):
    """bench/machine_spread.py over the committed reference GEMMs: thirty-one lent H200s within 7.1% of each other on
    the calibration GEMM, the profile's prediction (2.770 ms at M = 16384, plan 21's registration) at their median; a
    second call on a machine already counted is a repeat, not a machine; a reference run whose folder names no machine
    is refused."""
    mod = load_bench("machine_spread")
    assert mod.main(["--out", str(tmp_path)]) == 0
    for name in ("reference.csv", "summary.csv", "pairs.csv", "repeats.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name),
                                      pd.read_csv(ROOT / "bench" / "results" / "machine-spread" / name))
    s = pd.read_csv(tmp_path / "summary.csv").set_index("m")
    assert s.loc[16384, "machines"] == 31 and round(s.loc[16384, "spread_pct"], 1) == 7.1
    ref = pd.read_csv(tmp_path / "reference.csv")
    assert not ref.duplicated(["gpu", "m"]).any()
    rep = pd.read_csv(tmp_path / "repeats.csv")  # plan 54's second call on GPU-669af4b9: 0.15-0.23% faster
    assert set(rep.gpu) == {"GPU-669af4b9"} and set(rep.gpu) <= set(ref.gpu) and (abs(rep.to_first - 1) < 0.003).all()
    assert "2026-12-05-registered54-1gpu" not in set(pd.read_csv(tmp_path / "pairs.csv")["first"])
    pred = pd.read_csv(ROOT / "bench/predictions/reg21-reference/predictions.csv")
    model = float(pred[(pred.m == 16384) & (pred.source == "model")].makespan_ms.iloc[0])
    assert abs(model / s.loc[16384, "median"] - 1) < 0.002
    fake = tmp_path / "hw" / "x" / "reg0-reference"
    fake.mkdir(parents=True)
    (fake / "results.csv").write_text("case,strategy,m,status,makespan_ms\nm=16384,sequential,16384,ok,2.8\n")
    monkeypatch.setattr(mod, "HW", tmp_path / "hw")  # the loaded script is shared by the process: undo after
    assert mod.main(["--out", str(tmp_path / "o")]) == 2 and not (tmp_path / "o").exists()


def test_the_post_hoc_activation_table_is_what_the_script_writes(tmp_path):
    """bench/posthoc_activation.py reproduces its committed summary; the profile as registered (every activation at
    the GeLU's cost) gives plan 21's registered figures back (1.16% and 3.25%), and without the ReLU input plan 22's
    (1.74, 0.86, 0.92%)."""
    mod = load_bench("posthoc_activation")
    assert mod.main(["--out", str(tmp_path)]) == 0
    got = pd.read_csv(tmp_path / "summary.csv")
    pd.testing.assert_frame_equal(got, pd.read_csv(ROOT / "bench/results/posthoc-activation/summary.csv"))
    reg = got[got.predictor == "interleaved (registered)"].set_index("run").mape_pct
    assert reg["2026-12-02-registered21-1gpu"] == 1.16 and reg["2026-12-02-registered21-1gpu-run2"] == 3.25
    # plan 22 was registered with the activation factors and no ReLU input: its figures come back
    reg22 = got[got.predictor == "interleaved (no relu input)"].set_index("run").mape_pct
    assert [reg22[r] for r in ("2026-12-03-registered22-1gpu", "2026-12-03-registered22-1gpu-run2",
                               "2026-12-03-registered22-23-1gpu-run3")] == [1.74, 0.86, 0.92]


def _block_gemm_orders():
    mod = load_bench("block_gemm_orders")
    return mod


REG23 = ROOT / "bench/predictions/reg23-gemm-orders"
RUN3 = ROOT / "bench/results/hw/2026-12-03-registered22-23-1gpu-run3/gemm_shapes.csv"


@pytest.mark.parametrize("reg,shapes", [(REG23, 8), (ROOT / "bench/predictions/reg24-padded-orders", 5),
                                        (ROOT / "bench/predictions/reg25-gemm-orders", 4),
                                        (ROOT / "bench/predictions/reg29-gemm-reference", 8),
                                        (ROOT / "bench/predictions/reg46-long-k-forms", 8)])
def test_registered_gemm_order_predictions_are_what_the_script_writes(tmp_path, capsys, reg, shapes):
    """block_gemm_orders.py --predict reproduces registered plans 23, 24, 25, 29 and 46 (the command in each README), one pick
    per shape and profile; a bad shape is one line and exit 2."""
    mod = _block_gemm_orders()
    cmd = (reg / "README.md").read_text().split("--predict ")[1].split()[0]
    # every one was registered before plan 67's adoption on an H200 (2026-12-06): the flag prices the H200 as it did
    assert mod.main(["--predict", cmd, "--before-reuse-adoption", "--out", str(tmp_path)]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "predicted.csv"), pd.read_csv(reg / "predicted.csv"))
    assert (tmp_path / "pricing.txt").read_text() == "lru\n" and not (reg / "pricing.txt").exists()
    got = pd.read_csv(tmp_path / "predicted.csv")
    assert len(got) == 8 * shapes
    for name in ("interleaved", "carried", "wave"):
        assert (got.groupby(["m", "n", "k"])[f"{name}_pick"].sum() == 1).all()
    assert mod.main(["--predict", "32768x7168", "--out", str(tmp_path / "bad")]) == 2
    assert "--predict" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_registered_plan_23s_claims_are_what_its_committed_tables_give(tmp_path):
    """block_gemm_orders.py --registered on the committed probe gives the committed claims, and the claims as
    docs/validation.md reports them: (a) unpadded MAPE <= 3%, (b) at most half the naive line's at the best orders,
    (c) every pick within 2% of the best measured. Registered times the profiles no longer give are refused."""
    mod = _block_gemm_orders()
    out = tmp_path / "o"
    assert mod.main(["--probe", str(RUN3), "--registered", str(REG23), "--blocks", "reg22", "--out", str(out)]) == 0
    committed = ROOT / "bench/results/validation-registered23"
    for name in ("claims.csv", "shapes.csv", "rest.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / name), pd.read_csv(committed / name))
    c = pd.read_csv(out / "claims.csv").set_index("predictor")
    # rule 4 as docs/validation.md reports it: the model's passes match the measured rest but for OPT-30B's block,
    # which runs under its two GEMMs alone
    r = pd.read_csv(out / "rest.csv").set_index("block")
    others = r.drop(index="reg22-opt-30b-1gpu")
    assert len(others) == 3 and ((others.rest_ms - others.model_rest_ms).abs() < 0.05).all()
    assert r.loc["reg22-opt-30b-1gpu", "rest_ms"] < 0 < r.loc["reg22-opt-30b-1gpu", "model_rest_ms"]
    assert c.loc["interleaved", "unpadded_mape_pct"] <= 3
    assert c.loc["interleaved", "best_mape_pct"] <= c.loc["naive", "best_mape_pct"] / 2
    assert c.loc["interleaved", "pick_lost_max_pct"] <= 2
    tampered = tmp_path / "reg"
    tampered.mkdir()
    reg = pd.read_csv(REG23 / "predicted.csv")
    reg.loc[5, "carried_ms"] *= 1.01
    reg.to_csv(tampered / "predicted.csv", index=False)
    assert mod.main(["--probe", str(RUN3), "--registered", str(tampered), "--out", str(tmp_path / "t")]) == 2
    assert not (tmp_path / "t").exists()


def test_a_gemm_order_registration_is_judged_as_its_folder_says_it_was_priced(tmp_path, capsys):
    """block_gemm_orders.py --registered prices h200-x1-calibrated as the folder's pricing.txt says: plan 23's
    registration (no file: written before plan 67's adoption, the LRU) is accepted as it is, refused where the file
    says the profile as it is (whose times differ), accepted again under "lru"; a file saying anything else, or the
    flag beside --registered, is one line and exit 2, nothing written."""
    mod = _block_gemm_orders()
    copy = tmp_path / "reg"
    copy.mkdir()
    (copy / "predicted.csv").write_bytes((REG23 / "predicted.csv").read_bytes())
    judged = ["--probe", str(RUN3), "--registered", str(copy)]
    for word, rc in (("profile", 2), ("lru", 0), ("survival", 2)):
        (copy / "pricing.txt").write_text(word + "\n")
        out = tmp_path / f"o-{word}"
        assert mod.main([*judged, "--out", str(out)]) == rc, word
        err = capsys.readouterr().err.strip()
        assert out.exists() == (rc == 0) and (rc == 0 or len(err.splitlines()) == 1)
    assert mod.main([*judged, "--before-reuse-adoption", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--before-reuse-adoption goes with --predict" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()
    # a registration written now: the profile as it is, which the judge then accepts
    shapes = ",".join(f"{m}x{n}x{k}" for m, n, k in pd.read_csv(REG23 / "predicted.csv")[["m", "n", "k"]]
                      .drop_duplicates().itertuples(index=False))
    assert mod.main(["--predict", shapes, "--out", str(tmp_path / "now")]) == 0
    capsys.readouterr()
    assert (tmp_path / "now" / "pricing.txt").read_text() == "profile\n"
    now, was = pd.read_csv(tmp_path / "now" / "predicted.csv"), pd.read_csv(REG23 / "predicted.csv")
    assert (now.interleaved_ms - was.interleaved_ms).abs().max() > 0.01
    pd.testing.assert_frame_equal(now.drop(columns=[c for c in now if c.startswith("interleaved")]),
                                  was.drop(columns=[c for c in was if c.startswith("interleaved")]))
    assert mod.main(["--probe", str(RUN3), "--registered", str(tmp_path / "now"), "--out", str(tmp_path / "j")]) == 0


def test_the_block_plans_summary_in_the_docs_is_what_the_committed_claims_give():
    """docs/validation.md's "where the single-GPU block plans stand" rows of plans 20-22 and 25-28 quote each machine's
    model and naive MAPE and the model's worst error as the committed claims.csv of plan_judge.py give them."""
    doc = (ROOT / "docs" / "validation.md").read_text()
    plans = ("20", "21", "22", "25", "26", "27", "28")
    rows = {int(line.split("|")[1]): [c.strip() for c in line.split("|")[1:-1]]
            for line in doc.splitlines() if line.startswith("| 2") and line.split("|")[1].strip() in plans}
    model = {20: "carried", 21: "interleaved", 22: "interleaved", 25: "interleaved", 26: "curve", 27: "curve",
             28: "curve"}
    runs = {20: ("", "-run2"), 21: ("", "-run2"), 22: ("", "-run2", "-run3"), 25: ("",), 26: ("",), 27: ("",), 28: ("",)}
    assert sorted(rows) == [20, 21, 22, 25, 26, 27, 28]
    for plan, row in rows.items():
        claims = [pd.read_csv(ROOT / f"bench/results/validation-registered{plan}{r}/claims.csv").set_index("predictor")
                  for r in runs[plan]]
        fmt = lambda vals, sign="": " / ".join(f"{v:{sign}.2f}" for v in vals) + "%"  # noqa: E731
        assert row[4] == fmt([c.loc[model[plan], "mape_pct"] for c in claims])
        assert row[5] == fmt([c.loc[model[plan], "worst_pct"] for c in claims], "+").replace("-", "−")
        assert row[6] == fmt([c.loc["naive", "mape_pct"] for c in claims])


def test_the_post_hoc_onset_table_is_what_the_script_writes(tmp_path, capsys):
    """bench/posthoc_onset.py reproduces its committed table for plan 25; at the profile's onset (52.9 ms) it gives
    the registered model errors back, and an earlier onset (45 ms) moves only the ~50 ms blocks (the 175B pair at
    M = 16384) to within 1%; bad input is one line and exit 2."""
    mod = load_bench("posthoc_onset")
    run = ROOT / "bench/results/hw/2026-12-03-registered25-1gpu"
    exps = ["reg25-opt-13b-1gpu", "reg25-opt-175b-1gpu", "reg25-gpt3-175b-1gpu"]
    assert mod.main([str(run), *exps, "--out", str(tmp_path)]) == 0
    got = pd.read_csv(tmp_path / "onset.csv")
    pd.testing.assert_frame_equal(got, pd.read_csv(ROOT / "bench/results/posthoc-onset-reg25/onset.csv"))
    judged = pd.read_csv(ROOT / "bench/results/validation-registered25/judged.csv")
    reg = judged[judged.predictor == "interleaved"].set_index(["experiment", "m"]).error_pct
    at = got[got.onset_ms == 52.9].set_index(["exp", "m"]).error_pct
    assert ((at - reg.reindex(at.index)).abs() < 1e-3).all()
    early = got[got.onset_ms == 45.0].set_index(["exp", "m"]).error_pct
    long_blocks = [("reg25-opt-175b-1gpu", 16384), ("reg25-gpt3-175b-1gpu", 16384)]
    assert (early[long_blocks].abs() < 1).all() and (early.drop(long_blocks) == at.drop(long_blocks)).all()
    assert mod.main([str(run), "reg25-nope"]) == 2 and "reg25-nope" in capsys.readouterr().err


def test_the_175b_breakdown_figures_in_the_docs_are_the_committed_probes():
    """docs/validation.md's diagnostic of plan 25's 175B blocks quotes bench/results/hw/2026-12-03-breakdown-175b: the
    block over its ops alone, GEMM1 twice back to back, the fused GeLU's cost against the profile's price, and the
    down GEMM on the ReLU's output over the same GEMM on GeLU's output."""
    from ctasim import costs
    from ctasim.spec import Layer, load_hardware

    folder = ROOT / "bench/results/hw/2026-12-03-breakdown-175b"
    d = {mdl: pd.read_csv(folder / f"breakdown-{mdl}.csv").set_index(["m", "item"]).per_op_ms
         for mdl in ("gpt3-175b", "opt-175b")}
    doc = " ".join((ROOT / "docs" / "validation.md").read_text().split())
    over = [d[mdl][(m, "block")] - d[mdl][(m, f"gemm1_{act}")] - d[mdl][(m, "gemm2_residual")] - d[mdl][(m, "layernorm")]
            for m in (16384, 8192) for mdl, act in (("gpt3-175b", "gelu"), ("opt-175b", "relu"))]
    assert "runs 0.50 ms (GPT-3) and 1.06 ms (OPT) over its ops alone, where at M = 8192 it is 0.20 and 0.07 ms" in doc
    assert [round(x, 2) for x in over] == [0.50, 1.06, 0.20, 0.07]
    twice = [100 * (d[mdl][(16384, f"gemm1_{act}_x2")] / d[mdl][(16384, f"gemm1_{act}")] - 1)
             for mdl, act in (("gpt3-175b", "gelu"), ("opt-175b", "relu"))]
    assert [round(x, 1) for x in twice] == [3.4, 1.3] and "+3.4% (GPT-3) and +1.3% (OPT)" in doc
    hw = load_hardware("h200-x1-calibrated")
    gelu = d["gpt3-175b"]
    for m, meas, model in ((8192, 0.46, 0.35), (16384, 1.22, 0.68)):
        assert round(gelu[(m, "gemm1_gelu")] - gelu[(m, "gemm1_plain")], 2) == meas
        lay = Layer(m=m, n=49152, k=12288)
        priced = (costs.tuned_gemm(dataclasses.replace(lay, epilogue=("gelu",)), hw, 2).total_ns
                  - costs.tuned_gemm(lay, hw, 2).total_ns) / 1e6
        assert round(priced, 2) == model
    assert "costs 0.46 and 1.22 ms (M = 8192, 16384) where the profile's per-element cost gives 0.35 and 0.68" in doc
    ratio = [d["opt-175b"][(m, "gemm2_plain")] / gelu[(m, "gemm2_plain")] for m in (16384, 8192)]
    assert [round(x, 3) for x in ratio] == [0.932, 0.939] and "took 0.932 and 0.939 (M = 16384, 8192)" in doc


def test_the_gelu_width_figures_in_the_docs_are_the_committed_probes():
    """docs/model.md and docs/validation.md quote bench/results/hw/2026-12-03-gelu-width: the fused GeLU at N = 49152
    (0.31 and 0.75 ms at M = 8192, 16384), its per-tile cost 17-21% higher at M = 16384 than at 8192 at both widths,
    and the ReLU input at 0.945-0.954."""
    folder = ROOT / "bench/results/hw/2026-12-03-gelu-width"
    grow, relu = [], []
    for n, k in ((49152, 12288), (28672, 8192)):
        d = pd.read_csv(folder / f"gelu-n{n}.csv").set_index(["m", "item"]).per_op_ms
        extra = {m: d[(m, "gemm1_gelu")] - d[(m, "gemm1_plain")] for m in (4096, 8192, 16384)}
        per_tile = {m: extra[m] / ((m // 128) * (n // 256)) for m in extra}
        grow.append(per_tile[16384] / per_tile[8192] - 1)
        relu += [d[(m, "gemm1_relu_input")] / d[(m, "gemm1_plain")] for m in extra]
        if n == 49152:
            assert (round(extra[8192], 2), round(extra[16384], 2)) == (0.31, 0.75)
    assert (round(100 * min(grow)), round(100 * max(grow))) == (17, 21)
    assert (round(min(relu), 3), round(max(relu), 3)) == (0.945, 0.954)
    for doc in ("model.md", "validation.md"):
        text = " ".join((ROOT / "docs" / doc).read_text().split())
        assert "0.31 and 0.75 ms" in text and "17-21%" in text
    assert "timed the ReLU input at 0.945-0.954" in " ".join((ROOT / "docs/validation.md").read_text().split())


def test_the_post_hoc_clock_curve_table_is_what_the_script_writes(tmp_path, capsys):
    """bench/posthoc_clock_curve.py, on plan 25's run (the whole table takes ~20 s), writes the committed rows; the
    committed summary holds the docs' figures: over the 61 cases of 20 ms or more the curve's MAPE is 2.65% against the
    one step's 3.20%, 1.54 against 2.88 at 45-60 ms, and both 175B blocks at M = 16384 come within 1%."""
    mod = load_bench("posthoc_clock_curve")
    run = "2026-12-03-registered25-1gpu"
    assert mod.main(["--runs", run, "--out", str(tmp_path)]) == 0
    committed = pd.read_csv(ROOT / "bench/results/posthoc-clock-curve/cases.csv")
    want = committed[committed.run == run].reset_index(drop=True)
    got = pd.read_csv(tmp_path / "cases.csv")
    assert len(got) == 8  # the 175B pair at M = 8192 and 16384, two predictors
    pd.testing.assert_frame_equal(got, want)
    s = pd.read_csv(ROOT / "bench/results/posthoc-clock-curve/summary.csv").set_index(["band_ms", "predictor"])
    assert (s.loc[("all", "curve"), "mape_pct"], s.loc[("all", "step"), "mape_pct"]) == (2.65, 3.20)
    assert (s.loc[("45-60", "curve"), "mape_pct"], s.loc[("45-60", "step"), "mape_pct"]) == (1.54, 2.88)
    assert s.loc[("all", "curve"), "cases"] == 61
    big = got[got.registration.isin(["reg25-opt-175b-1gpu", "reg25-gpt3-175b-1gpu"]) & (got.m == 16384)]
    assert (big[big.predictor == "curve"].error_pct.abs() < 1).all() and (big[big.predictor == "step"].error_pct < -2).all()
    assert mod.main(["--runs", "no-such-run"]) == 2
    assert "no registered run" in capsys.readouterr().err


def test_length_drift_takes_each_blocks_error_at_its_smallest_m_off_its_long_cases():
    """plan_judge.length_drift: the control is the block's registered control M; drift = error - control's error per
    predictor; the claims average over the long cases only; a block without a control, or a predictor without a row
    there, is refused; every block of plans 26 and 27 has its control named."""
    pj = load_bench("plan_judge")
    rows = [("a", 8192, "curve", -2.0), ("a", 20480, "curve", -2.5), ("a", 28672, "curve", -1.0),
            ("a", 8192, "clock-step", -2.0), ("a", 20480, "clock-step", -3.0), ("a", 28672, "clock-step", -4.0),
            ("b", 65536, "curve", 1.0), ("b", 16384, "curve", 0.5), ("b", 65536, "clock-step", 0.0),
            ("b", 16384, "clock-step", 0.5)]
    judged = pd.DataFrame(rows, columns=["experiment", "m", "predictor", "error_pct"]).assign(measured_ms=1.0)
    drift, claims = pj.length_drift(judged, {"a": 8192, "b": 16384})
    d = drift.set_index(["experiment", "m", "predictor"]).drift_pts
    assert d[("a", 28672, "curve")] == 1.0 and d[("a", 28672, "clock-step")] == -2.0 and d[("b", 65536, "curve")] == 0.5
    assert set(drift.control_m) == {8192, 16384} and len(drift) == 6
    c = claims.set_index("predictor")
    assert c.loc["curve", "cases"] == 3 and c.loc["curve", "long_mape_pct"] == pytest.approx((2.5 + 1 + 1) / 3)
    assert c.loc["clock-step", "mean_abs_drift_pts"] == pytest.approx((1 + 2 + 0.5) / 3)
    assert c.loc["curve", "mean_drift_pts"] == pytest.approx((-0.5 + 1 + 0.5) / 3)
    with pytest.raises(ValueError, match="b has no registered control"):
        pj.length_drift(judged, {"a": 8192})
    with pytest.raises(ValueError, match="no clock-step row at its control M = 16384"):
        pj.length_drift(judged[~((judged.experiment == "b") & (judged.m == 16384) & (judged.predictor == "clock-step"))],
                        {"a": 8192, "b": 16384})
    assert all(sorted(pj.CONTROLS[p]) == sorted(pj.blocks(p)) for p in (26, 27, 28))


def test_the_docs_clock_curve_table_is_the_committed_summary():
    """docs/validation.md's post-hoc table of the clock curve against the one step is bench/results/posthoc-clock-curve
    /summary.csv, row for row."""
    import re

    doc = (ROOT / "docs/validation.md").read_text().split("### The clock's mean curve", 1)[1].split("**Registered", 1)[0]
    rows = [r for r in doc.splitlines() if re.match(r"\| (\d|≥|all)", r)]
    s = pd.read_csv(ROOT / "bench/results/posthoc-clock-curve/summary.csv").set_index(["band_ms", "predictor"])
    bands = {"20-30 ms": "0-30", "30-45 ms": "30-45", "45-60 ms": "45-60", "60-80 ms": "60-80", "≥ 80 ms": ">=80",
             "all": "all"}
    assert len(rows) == len(bands)
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        band = bands[cells[0]]
        nums = [float(c.rstrip("%").replace("−", "-")) for c in cells[1:]]
        want = [s.loc[(band, "curve"), "cases"], s.loc[(band, "curve"), "mape_pct"], s.loc[(band, "step"), "mape_pct"],
                s.loc[(band, "curve"), "bias_pct"], s.loc[(band, "step"), "bias_pct"]]
        assert nums == pytest.approx(want), r


ERROR_COLUMNS = (("error_pct", "curve"), ("error_pct", "clock-step"), ("error_pct", "naive"), ("error_pct", "waves"),
                 ("error_pct", "flat"), ("error_pct", "lockstep"))
"""The per-case error columns of the docs' tables of plans 26-28 after the measured ms: (judged.csv column, predictor)."""


def assert_docs_errors(gpu: str, committed: Path, names: dict, cases: int, columns=ERROR_COLUMNS) -> None:
    """docs/validation.md's per-case table after "Measured 2026-12-03 on one H200 (GPU" + ``gpu``: one row per block
    (``names``: its name there -> registration) and M, each value the committed judged.csv's, to 2 decimals."""
    doc = (ROOT / "docs/validation.md").read_text().split(f"Measured 2026-12-03 on one H200 (GPU-{gpu}", 1)[1]
    lead = "|".join(re.escape(n) for n in names)
    rows = [r for r in doc.split("| claim |", 1)[0].splitlines() if re.match(rf"\| ({lead}) \|", r)]
    judged = pd.read_csv(committed / "judged.csv")
    tables = {col: judged.pivot_table(index=["experiment", "m"], columns="predictor", values=col)
              for col in {c for c, _ in columns}}
    assert len(rows) == cases
    for r in rows:
        c = [x.strip() for x in r.strip("|").split("|")]
        key = (names[c[0]], int(c[1]))
        nums = [float(x.replace("−", "-")) for x in c[3:]]
        assert nums == pytest.approx([round(tables[col].loc[key, p], 2) for col, p in columns], abs=1e-9), r


def test_plan_26s_claims_and_the_docs_table_are_what_the_judge_writes(tmp_path):
    """bench/plan_judge.py 26 on the committed reports (one machine) gives the committed claims and drift claims; all
    four registered claims are met as docs/validation.md says, and its per-case table is the committed judged.csv."""
    got, mod, reports = judge_plan(tmp_path, 26, "validation-registered26")
    committed = ROOT / "bench/results/validation-registered26"
    drift = pd.read_csv(reports / "drift_claims.csv").set_index("predictor")
    pd.testing.assert_frame_equal(drift, pd.read_csv(committed / "drift_claims.csv").set_index("predictor"))
    m, step = got.loc["curve"], got.loc["clock-step"]
    assert m.cases == 10 and m.mape_pct <= 3 and abs(m.worst_pct) <= 6  # (a)
    assert drift.loc["curve", "long_mape_pct"] < drift.loc["clock-step", "long_mape_pct"]  # (b)
    assert drift.loc["curve", "mean_abs_drift_pts"] < drift.loc["clock-step", "mean_abs_drift_pts"]  # (c)
    assert drift.loc["curve", "mean_abs_drift_pts"] <= 1.5 and drift.loc["curve", "cases"] == 7
    assert m.mape_pct <= got.loc["naive", "mape_pct"] / 2 and m.mape_pct <= got.loc["waves", "mape_pct"] / 2  # (d)
    assert step.mape_pct > m.mape_pct
    assert_docs_errors("65f8abd7", committed, {"Llama-3.1-70B": "reg26-llama3.1-70b-1gpu",
                                               "DeepSeek-V3 dense": "reg26-deepseek-v3-dense-1gpu",
                                               "Mixtral-8x22B expert": "reg26-mixtral-8x22b-expert-1gpu"}, 10)

def test_plan_27s_claims_and_the_docs_table_are_what_the_judge_writes(tmp_path):
    """bench/plan_judge.py 27 on the committed reports: claim (a) missed (MAPE 4.76% on the slowest machine timed), (b)
    and (c) met, as docs/validation.md says; its per-case table is the committed judged.csv."""
    got, mod, reports = judge_plan(tmp_path, 27, "validation-registered27")
    committed = ROOT / "bench/results/validation-registered27"
    drift = pd.read_csv(reports / "drift_claims.csv").set_index("predictor")
    pd.testing.assert_frame_equal(drift, pd.read_csv(committed / "drift_claims.csv").set_index("predictor"))
    m = got.loc["curve"]
    assert m.cases == 8 and not (m.mape_pct <= 3 and abs(m.worst_pct) <= 6)  # (a) missed
    assert round(m.mape_pct, 2) == 4.76 and round(m.normalised_mape_pct, 2) == 3.10
    assert m.mape_pct <= got.loc["naive", "mape_pct"] / 2 and m.mape_pct <= got.loc["waves", "mape_pct"] / 2  # (b)
    assert drift.loc["curve", "cases"] == 5 and drift.loc["curve", "mean_abs_drift_pts"] <= 2  # (c)
    cols = ERROR_COLUMNS[:1] + (("normalised_pct", "curve"),) + ERROR_COLUMNS[1:]
    assert_docs_errors("779ebca8", committed, {"Llama-3.1-405B": "reg27-llama3.1-405b-1gpu",
                                               "Qwen2.5-72B": "reg27-qwen2.5-72b-1gpu",
                                               "GPT-3 175B": "reg27-gpt3-175b-1gpu"}, 8, cols)

def test_plan_28s_claims_and_the_docs_table_are_what_the_judge_writes(tmp_path):
    """bench/plan_judge.py 28 on the committed reports: all four claims met, as docs/validation.md says; its per-case
    table is the committed judged.csv."""
    got, mod, reports = judge_plan(tmp_path, 28, "validation-registered28")
    committed = ROOT / "bench/results/validation-registered28"
    drift = pd.read_csv(reports / "drift_claims.csv").set_index("predictor")
    pd.testing.assert_frame_equal(drift, pd.read_csv(committed / "drift_claims.csv").set_index("predictor"))
    m = got.loc["curve"]
    assert m.cases == 9 and m.mape_pct <= 3 and abs(m.worst_pct) <= 6  # (a)
    assert m.mape_pct <= got.loc["naive", "mape_pct"] / 2 and m.mape_pct <= got.loc["waves", "mape_pct"] / 2  # (b)
    assert drift.loc["curve", "cases"] == 6
    assert drift.loc["curve", "long_mape_pct"] < drift.loc["clock-step", "long_mape_pct"]  # (c)
    assert drift.loc["curve", "mean_abs_drift_pts"] < drift.loc["clock-step", "mean_abs_drift_pts"]  # (d)
    assert drift.loc["curve", "mean_abs_drift_pts"] <= 1.5
    assert_docs_errors("f00f7961", committed, {"Command R+": "reg28-command-r-plus-1gpu", "Yi-34B": "reg28-yi-34b-1gpu",
                                               "Mistral-Large-2": "reg28-mistral-large-2-1gpu"}, 9)


def test_registered_plan_37s_claims_are_what_its_committed_reports_give():
    """Plan 37 (bench/predictions/reg37-yi-34b-sustained/README.md): (a) MAPE <= 3% and worst <= 6% over the three
    cases, met (2.01%, -2.35%); (b) each block case's model error at least 1 point above the reference GEMM's, missed
    (+0.70, +0.33 points), as docs/validation.md reports them."""
    acc = {e: pd.read_csv(ROOT / "bench/results/validation-registered37" / e / "accuracy.csv") for e in EXPS37}
    err = {(e, r.case): 100 * r.error for e, a in acc.items() for r in a[a.source == "model"].itertuples()}
    assert len(err) == 3
    assert round(sum(abs(v) for v in err.values()) / 3, 2) == 2.01 and round(min(err.values()), 2) == -2.35
    ref = err[("reg37-reference-sustained", "m=16384")]
    above = sorted(round(v - ref, 2) for (e, _), v in err.items() if e == "reg37-yi-34b-sustained")
    assert above == [0.33, 0.7] and not all(a >= 1.0 for a in above)


def test_a_machines_own_profile_and_naive_line_join_the_gemm_order_predictions(tmp_path, capsys):
    """block_gemm_orders.py --profile NAME=PATH adds a profile (registered plan 47's "own": a ctahw calibrate output)
    and --naive-probe TABLE a naive line through that calibration's tile-order timings; bad values are one line and
    exit 2, nothing written."""
    mod = _block_gemm_orders()
    cal = ROOT / "bench/results/hw/2026-12-02-calibrate-memory"
    out = tmp_path / "p"
    assert mod.main(["--predict", "16384x8192x8192,8192x12288x49152", "--profile",
                     f"own={cal / 'h200-x1-calibrated.toml'}", "--naive-probe", str(cal / "probes/tile_orders.csv"),
                     "--out", str(out)]) == 0
    got = pd.read_csv(out / "predicted.csv")
    assert {"own_ms", "own_pick", "naive_own_ms"} <= set(got.columns) and (got.groupby(["m", "n", "k"]).own_pick.sum() == 1).all()
    # the own profile is that machine's: its l2 constants differ from the committed profile's, so do its times
    assert (got.own_ms != got.interleaved_ms).all()
    for bad, says in ((["--profile", "carried=x"], "is taken"), (["--profile", "own"], "is not NAME=PATH"),
                      (["--profile", "own=nowhere.toml"], "no file"), (["--naive-probe", "nowhere.csv"], "nowhere.csv")):
        assert mod.main(["--predict", "16384x8192x8192", *bad, "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad").exists()


def test_the_naive_line_through_a_machines_own_timings_is_the_best_orders_line(tmp_path):
    """Naive.fit_shapes: the least-squares line of each shape's best-order median against FLOPs (a slower order of the
    same shape does not move it); fewer than two shapes is refused in one line."""
    from ctasim.predict import Naive

    rows = [{"m": m, "n": 8192, "k": 8192, "backend": "cutlass", "order": o, "median_ms": 1e-3 + 2.0 * m * 8192 * 8192
             / 700e12 * 1e3 * slow} for m in (2048, 8192, 16384) for o, slow in (("a", 1.0), ("b", 1.3))]
    rows.append({"m": 4096, "n": 8192, "k": 8192, "backend": "cublas", "order": "-", "median_ms": 99.0})
    pd.DataFrame(rows).to_csv(tmp_path / "t.csv", index=False)
    line = Naive.fit_shapes(tmp_path / "t.csv")
    assert line.tflops == pytest.approx(700.0, rel=1e-9) and line.a_ms == pytest.approx(1e-3, abs=1e-12)
    pd.DataFrame(rows[:2]).to_csv(tmp_path / "one.csv", index=False)
    with pytest.raises(ValueError, match="fewer than two cutlass shapes"):
        Naive.fit_shapes(tmp_path / "one.csv")
