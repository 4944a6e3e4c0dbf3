"""ctahw's command line on a machine without a GPU: clean messages, exit codes, dry runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctahw import cli
from ctahw.baselines import SweepConfig


def _gpu_present() -> bool:
    try:
        from ctahw.device import gpus

        return bool(gpus())
    except Exception:
        return False


def run(*args):
    return subprocess.run([sys.executable, "-m", "ctahw.cli", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(_gpu_present(), reason="this machine has a GPU: the no-GPU path cannot be seen here")
def test_info_without_gpu_says_so_without_traceback():
    p = run("info")
    assert p.returncode == cli.EXIT_NO_GPU
    assert p.stderr.startswith("no GPU: ")
    assert "Traceback" not in p.stderr + p.stdout
    assert "nvcc:" in p.stdout and "cache:" in p.stdout


@pytest.mark.skipif(_gpu_present(), reason="this machine has a GPU")
def test_run_without_gpu_fails_cleanly():
    p = run("run", "gemm", "--ms", "1024", "--gpus", "1")
    assert p.returncode == cli.EXIT_NO_GPU and "Traceback" not in p.stderr and p.stderr.startswith("no GPU: ")


def test_run_dry_run_lists_the_cases():
    p = run("run", "microbatch", "--ms", "1024,2048", "--chunks", "1,2,16", "--backends", "cublas", "--dry-run")
    assert p.returncode == 0, p.stderr
    lines = [l.split() for l in p.stdout.splitlines()[1:]]
    assert [(l[2], l[5]) for l in lines] == [("1024", "1"), ("1024", "2"), ("2048", "1"), ("2048", "2"), ("2048", "16")]


def test_calibrate_dry_run():
    p = run("calibrate", "--dry-run")
    assert p.returncode == 0 and "h200-x2-calibrated.toml" in p.stdout


def test_calibrate_dry_run_names_the_memory_hierarchy_unless_skipped(capsys, tmp_path):
    assert cli.main(["calibrate", "--dry-run", "--probe-out", str(tmp_path / "probes")]) == 0
    out = capsys.readouterr().out
    assert "l2_bytes, l2_survival_taken, l2_survival_share, l2_hbm_exposed" in out
    assert "l2_sm_tflops, cta_drift, drift_form, cluster_m" in out
    assert "tile-order probe at N = K = 8192" in out and "L2 survival probe" in out and str(tmp_path / "probes") in out
    assert "fitted under h200-x2's l2_reuse_law 'lru'" in out
    assert "ticket_spread, ticket_law, ticket_mainloop_factor" in out and "one-layer microbenchmark" in out
    assert not (tmp_path / "probes").exists()  # a dry run writes nothing
    assert cli.main(["calibrate", "--dry-run", "--no-memory"]) == 0
    out = capsys.readouterr().out
    assert "hbm_gbps" in out and "l2_" not in out and "cta_drift" not in out and "memory probes" not in out
    assert "ticket_mainloop_factor" not in out and "microbenchmark" not in out


def test_calibrate_dry_run_names_the_one_cta_per_tile_probe_unless_skipped(capsys, tmp_path):
    # the per-tile probe writes into --probe-out without the memory probes; with neither, --probe-out is an error
    assert cli.main(["calibrate", "--dry-run", "--no-memory", "--probe-out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "one-CTA-per-tile probe" in out and "M = 4096, 16384" in out and str(tmp_path / "p") in out
    assert not (tmp_path / "p").exists()
    assert cli.main(["calibrate", "--dry-run", "--no-percta"]) == 0
    assert "one-CTA-per-tile" not in capsys.readouterr().out


def test_calibrate_dry_run_names_the_fold_probe_unless_skipped(capsys, tmp_path):
    assert cli.main(["calibrate", "--dry-run", "--no-memory", "--no-percta", "--probe-out", str(tmp_path / "p")]) == 0
    out = capsys.readouterr().out
    assert "fold probe" in out and "norm_fold_epilogue_ns_per_element" in out and str(tmp_path / "p") in out
    assert cli.main(["calibrate", "--dry-run", "--no-fold"]) == 0
    out = capsys.readouterr().out
    assert "fold probe" not in out and "norm_stats_epilogue" not in out
    assert cli.main(["calibrate", "--dry-run", "--no-memory", "--no-percta", "--no-fold", "--probe-out",
                     str(tmp_path / "q")]) == 2
    assert "--no-fold" in capsys.readouterr().err


def test_run_options_come_from_the_sweep_config():
    args = cli.parser().parse_args(["run", "all", "--ms", "1024", "--reps", "3", "--backends", "cutlass"])
    assert args.ms == (1024,) and args.reps == 3 and args.backends == ("cutlass",)
    assert args.h == SweepConfig().h and args.chunks == SweepConfig().chunks


def test_bad_integer_list_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as ei:
        cli.parser().parse_args(["run", "all", "--ms", "1k"])
    assert ei.value.code == 2 and "comma-separated integers" in capsys.readouterr().err


def test_format_table():
    t = cli.format_table([dict(experiment="gemm", backend="cublas", m=1024, median_ms=1.23456, best=True)],
                         ("experiment", "backend", "m", "median_ms", "best"))
    head, row = t.splitlines()
    assert head.split() == ["experiment", "backend", "m", "median_ms", "best"]
    assert row.split() == ["gemm", "cublas", "1024", "1.235", "*"]


def test_all_joined_with_ctapipe_keeps_both():
    p = run("run", "all,ctapipe", "--ms", "1024", "--dry-run")
    assert p.returncode == 0, p.stderr
    kinds = {l.split()[0] for l in p.stdout.splitlines()[1:]}
    assert set(SweepConfig().experiments) | {"ctapipe"} <= kinds


def test_a_cuda_fault_or_a_protocol_timeout_ends_in_one_line(monkeypatch, capsys):
    """Errors stay typed to the CLI: a CUDA fault (CuPy's CUDARuntimeError, by name) stops the run with one line
    and exit 4; a protocol timeout (ctahw.runner.ProtocolError) too; any other RuntimeError is a bug and raises."""
    from ctahw import cli
    from ctahw.runner import ProtocolError

    class CUDARuntimeError(RuntimeError):
        pass

    for exc, says in ((CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access"), "CUDA fault"),
                      (ProtocolError("ctapipe L1", 1, 7, 3, 0, 1, 1), "protocol error")):
        def boom(args, exc=exc):
            raise exc

        monkeypatch.setattr(cli, "cmd_run", boom)
        assert cli.main(["run", "fig5"]) == cli.EXIT_FAILED
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1 and "Traceback" not in err

    def bug(args):
        raise RuntimeError("a programming error")

    monkeypatch.setattr(cli, "cmd_run", bug)
    with pytest.raises(RuntimeError, match="programming error"):
        cli.main(["run", "fig5"])


def test_validate_predicts_runs_and_compares_in_one_go_and_says_post_hoc(monkeypatch, tmp_path, capsys):
    """ctahw validate with a fake GPU run: predictions/, results/ and report/ under --out, the report post-hoc
    (the predictions were never committed); with no GPU it stops before writing anything."""
    import pandas as pd

    from ctahw import device, experiment

    def fake_run(exp, cfg, log=None, traces=None):
        df = experiment.plan_runs(exp, 1)
        ok = df["status"] == "planned"
        df.loc[ok, "status"], df.loc[ok, "makespan_ms"], df.loc[ok, "rel_err"] = "ok", 0.5, 1e-3
        return df

    assert cli.main(["validate", "reg-gemm-h4096", "--out", str(tmp_path / "none")]) == cli.EXIT_NO_GPU
    assert not (tmp_path / "none").exists()
    monkeypatch.setattr(device, "gpus", lambda: [object()])
    monkeypatch.setattr(experiment, "run", fake_run)
    assert cli.main(["validate", "reg-gemm-h4096", "--out", str(tmp_path / "v")]) == 0
    out = capsys.readouterr().out
    assert "POST-HOC" in out
    assert {p.name for p in (tmp_path / "v").iterdir()} == {"predictions", "results", "report"}
    acc = pd.read_csv(tmp_path / "v" / "report" / "accuracy.csv")
    assert len(acc[acc["source"] == "model"]) == 3 and not acc["registered"].any()
    assert cli.main(["validate", "reg-gemm-h4096", "--out", str(tmp_path / "v")]) == 2  # predictions never overwritten


def test_a_specs_clock_regime_must_match_the_measurement(tmp_path, capsys):
    """A sustained-regime spec's predictions describe runs repeated back to back: ctahw run refuses it without
    --sustain-s, and refuses --sustain-s for a burst spec, in one line each, before anything runs; matched, it plans."""
    from ctahw import cli
    from ctasim.spec import SPECS_DIR

    text = (SPECS_DIR / "experiments" / "reg28-reference.toml").read_text()
    burst = tmp_path / "burst.toml"
    burst.write_text(text)
    sustained = tmp_path / "sustained.toml"
    sustained.write_text(text.replace('regime = "burst"', 'regime = "sustained"'))
    assert 'regime = "sustained"' in sustained.read_text()
    for args, words in (([str(sustained)], "is a sustained-regime experiment"),
                        ([str(burst), "--sustain-s", "1"], "is a burst-regime experiment")):
        assert cli.main(["run", *args, "--out", str(tmp_path / "o"), "--dry-run"]) == 2
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1
    assert cli.main(["run", str(sustained), "--sustain-s", "1", "--out", str(tmp_path / "o"), "--dry-run",
                     "--gpus-assumed", "1"]) == 0
    assert cli.main(["run", str(burst), "--out", str(tmp_path / "o"), "--dry-run", "--gpus-assumed", "1"]) == 0
    assert not (tmp_path / "o").exists()


def test_calibrate_fits_under_the_base_profiles_reuse_law_and_curve(tmp_path, monkeypatch):
    """`ctahw calibrate --base NAME` hands the base's l2_reuse_law and L2 survival curve to the measurement (a stand-in
    for ctahw.calibrate.measure records them; the profile written from it is not under test here)."""
    from ctahw import calibrate, provenance
    from ctasim.spec import load_hardware

    seen = {}

    class Stop(Exception):
        pass

    def measure(**kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(calibrate, "measure", measure)
    monkeypatch.setattr(provenance, "collect", lambda: {})
    for base in ("h100-x1-datasheet", "h200-x2"):
        with pytest.raises(Stop):
            cli.main(["calibrate", "--base", base, "--out", str(tmp_path / "p.toml")])
        hw = load_hardware(base)
        assert seen["reuse_law"] == hw.l2_reuse_law
        assert seen["survival"] == (hw.l2_survival_taken, hw.l2_survival_share)
    assert load_hardware("h100-x1-datasheet").l2_reuse_law == "survival"


OWN_CALLS = ("2026-12-04-registered47-1gpu", "2026-12-04-registered47-1gpu-run2", "2026-12-04-registered48-1gpu",
             "2026-12-04-registered48-1gpu-run2")
"""The committed calls of registered plans 47 and 48: ``ctahw calibrate`` (base h200-x2) on four H200s, each with its
calibration.json and the profile it wrote (h200-x1-own.toml)."""


@pytest.mark.parametrize("call", OWN_CALLS)
def test_calibrate_from_json_writes_the_profile_the_calibration_wrote(tmp_path, call):
    """`ctahw calibrate --from-json` (no GPU) against the base a calibration ran with writes the profile it wrote on the
    device: every field the same (but calibrated_from, which profiles name since); the header says it was refitted."""
    import dataclasses

    from ctasim.spec import load_hardware

    root = Path(__file__).resolve().parents[2] / "bench" / "results" / "hw" / call
    out = tmp_path / "own.toml"
    assert cli.main(["calibrate", "--from-json", str(root / "calibration.json"), "--base", "h200-x2", "--name",
                     "h200-x1-own", "--out", str(out)]) == 0
    got, was = load_hardware(out), load_hardware(root / "h200-x1-own.toml")
    assert got.calibrated_from == "h200-x2"
    assert dataclasses.replace(got, calibrated_from="") == was
    assert "ctahw calibrate --from-json" in out.read_text().split("[hardware]")[0]


def test_calibrate_from_json_refits_the_l2_constants_under_the_bases_reuse_law(tmp_path):
    """Against a survival-law base the profile takes that law and the base's survival curve (plan 47's calibration
    measured none), and its L2 constants are fitted again under it: the fit's error moves, and on each of the four
    committed calibrations the constants come out as under the LRU (docs/hardware.md says so)."""
    from ctahw import calibrate

    from ctasim.spec import load_hardware

    surv = load_hardware("h200-x1-calibrated")
    assert surv.l2_reuse_law == "survival" and surv.l2_survival_taken
    hw = Path(__file__).resolve().parents[2] / "bench" / "results" / "hw"
    for call in OWN_CALLS:
        res = json.loads((hw / call / "calibration.json").read_text())["measured"]
        assert not res.get("l2_survival_taken") and res.get("l2_reuse_law", "lru") == "lru"
        got = calibrate.refit(res, surv)
        assert got["l2_reuse_law"] == "survival" and got["l2_survival_base"][0] == list(surv.l2_survival_taken)
        assert got["l2_fit_error"] != res["l2_fit_error"]
        assert (got["l2_sm_tflops"], got["l2_hbm_exposed"]) == (res["l2_sm_tflops"], res["l2_hbm_exposed"])
    out = tmp_path / "own.toml"
    assert cli.main(["calibrate", "--from-json", str(hw / OWN_CALLS[0] / "calibration.json"), "--base",
                     "h200-x1-calibrated", "--name", "own", "--out", str(out)]) == 0
    own = load_hardware(out)
    assert (own.l2_reuse_law, own.l2_survival_taken, own.calibrated_from) == ("survival", surv.l2_survival_taken,
                                                                                "h200-x1-calibrated")
    assert own.config(128, 256).l2_sm_tflops == 6.74 and own.l2_hbm_exposed == 0.155
    assert "fitted under the 'survival' reuse law" in out.read_text()


@pytest.mark.parametrize("content, extra, says", [
    (None, [], "No such file"),
    ("{not json", [], "not JSON"),
    ('{"measured": {}}', [], "not a calibration"),
    ('{"measured": {"gpu_name": "H200"}}', ["--quick", "--reps", "3"], "--quick, --reps cannot go with it"),
    ('{"measured": {"gpu_name": "H200"}}', ["--dry-run"], "--dry-run cannot go with it"),
])
def test_calibrate_from_json_refuses_bad_input_in_one_line(tmp_path, capsys, content, extra, says):
    src = tmp_path / "cal.json"
    if content is not None:
        src.write_text(content)
    out = tmp_path / "p.toml"
    assert cli.main(["calibrate", "--from-json", str(src), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("change, says", [
    (lambda d: d["measured"].pop("hbm_gbps"), "its measured figures lack 'hbm_gbps'"),
    (lambda d: d.update(provenance="a string"), "'provenance' is not a table"),
    (lambda d: d["measured"].update(l2_survival_taken=[0.1, 0.2, 0.3], l2_survival_share=[1.0, 0.5]), "l2_survival"),
])
def test_calibrate_from_json_refuses_a_damaged_calibration_in_one_line(tmp_path, capsys, change, says):
    """A calibration json that lacks a figure, has a provenance that is not a table, or a survival curve whose two
    lists differ in length: one line naming the problem, exit 2, and neither the profile nor a file beside it."""
    src = Path(__file__).resolve().parents[2] / "bench/results/hw" / OWN_CALLS[0] / "calibration.json"
    data = json.loads(src.read_text())
    change(data)
    bad = tmp_path / "cal.json"
    bad.write_text(json.dumps(data))
    out = tmp_path / "p" / "own.toml"
    out.parent.mkdir()
    assert cli.main(["calibrate", "--from-json", str(bad), "--base", "h200-x1-calibrated", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1, err
    assert list(out.parent.iterdir()) == []
