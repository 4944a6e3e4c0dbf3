"""ctahw run EXPERIMENT: planning a spec's cases on the CPU (no GPU), the reasons for skipped rows."""

from __future__ import annotations

import dataclasses

from ctahw.cli import main
from ctahw.experiment import plan_runs, reason_for
from ctasim.cases import expand
from ctasim.cases import load_experiment
from ctasim.spec import Strategy


def test_dry_run_lists_fig5_and_mlp_block_without_a_gpu(capsys):
    for exp, cases in (("fig5", 5), ("mlp-block", 2)):
        assert main(["run", exp, "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert out.count("sequential") >= cases and "planned" in out and "skipped" in out


def test_one_gpu_plans_sequential_and_skips_the_rest_with_reasons():
    df = plan_runs(load_experiment("reg-mlp"), gpus=1)
    seq = df[df["kind"] == "sequential"]
    assert (seq["status"] == "planned").all() and len(seq) == 2
    rest = df[df["kind"] != "sequential"]
    assert (rest["status"] == "skipped").all() and rest["reason"].str.contains("needs 2 GPUs, this machine has 1").all()


def test_an_unfusable_epilogue_and_a_mismatched_residual_are_skipped_rows():
    exp = load_experiment("reg-mlp")
    case = expand(exp)[0]
    l0, l1 = case.workload.layers
    two_ops = dataclasses.replace(case, workload=dataclasses.replace(
        case.workload, layers=(dataclasses.replace(l0, epilogue=("gelu", "residual")), l1)))
    assert "no fused CUTLASS epilogue" in reason_for(Strategy("sequential"), two_ops, 1)
    bad_res = dataclasses.replace(case, workload=dataclasses.replace(
        case.workload, layers=(dataclasses.replace(l0, epilogue=("residual",)), l1)))
    assert "residual is the workload's input" in reason_for(Strategy("sequential"), bad_res, 1)
    assert reason_for(Strategy("sequential"), case, 1) is None


def test_bad_experiment_names_and_registrations_are_one_line_exit_2(tmp_path, capsys):
    assert main(["run", "no-such-experiment", "--dry-run"]) == 2
    assert "no experiments spec named" in capsys.readouterr().err
    assert main(["run", "reg-mlp", "--dry-run", "--registration", str(tmp_path)]) == 2
    assert "no registration.json" in capsys.readouterr().err
    (tmp_path / "f").write_text("x")
    assert main(["run", "reg-mlp", "--dry-run", "--out", str(tmp_path / "f")]) == 2
    assert "not a folder" in capsys.readouterr().err
