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


def test_two_gpus_plan_every_registered_row_of_a_square_chain():
    """On 2 GPUs every (case, strategy, variant) that reg-h4096's registration predicts is planned, and nothing else
    (micro-batching chunk counts that cannot cut M are skipped rows, as the simulator does not predict them)."""
    import pandas as pd

    from pathlib import Path

    exp = load_experiment("reg-h4096")
    df = plan_runs(exp, gpus=2)
    pred = pd.read_csv(Path(__file__).resolve().parents[2] / "bench/predictions/reg-h4096/predictions.csv")
    pred = pred[(pred["source"] == "model") & (pred["status"] == "ok")].fillna({"variant": ""})
    key = ["case", "strategy", "variant"]
    planned = set(map(tuple, df[df["status"] == "planned"][key].to_numpy()))
    assert planned == set(map(tuple, pred[key].to_numpy()))
    skipped = df[df["status"] == "skipped"]
    assert (skipped["kind"] == "microbatch").all() and skipped["reason"].str.contains("128-row tiles").all()


def test_two_gpu_strategies_on_an_mlp_block_are_skipped_with_their_reason():
    df = plan_runs(load_experiment("reg-mlp"), gpus=2)
    multi = df[df["kind"] != "sequential"]
    assert (multi["status"] == "skipped").all()
    assert multi["reason"].str.contains("square chains|epilogue or row-wise").all()
    bad = Strategy("ctapipe", name="c", variant="cutlass_ctapipe_w21g4_trace")
    case = expand(load_experiment("reg-h4096"))[0]
    assert "not an untraced" in reason_for(bad, case, 2)
    assert "without a variant" in reason_for(Strategy("ctapipe"), case, 2)


def _rows(kind):
    base = dict(median_ms=1.0, rel_err=1e-3, ok=True, tflops=500.0)
    if kind == "microbatch":
        return [dict(base, backend=b, chunks=c, median_ms=1.0 + c / 10 + (b == "cublas")) for b in ("cublas", "cutlass")
                for c in (1, 2, 4)]
    if kind == "tp":
        return [dict(base, backend="cublas", median_ms=3.0), dict(base, backend="cutlass", median_ms=2.0)]
    return [dict(base, backend=v, median_ms=1.5 + i, trace_makespans_ms="1.7 1.8") for i, v in enumerate(
        ("cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g4_trace", "cutlass_ctapipe_g21", "cutlass_ctapipe_g21_trace"))]


def test_sweep_rows_map_the_cutlass_rows_to_the_specs_variants():
    from ctahw.experiment import sweep_rows

    mb = sweep_rows("microbatch", Strategy("microbatch", chunks=(1, 2, 4)), _rows("microbatch"))
    assert {k: v["makespan_ms"] for k, v in mb.items()} == {"chunks=1": 1.1, "chunks=2": 1.2, "chunks=4": 1.4}
    assert sweep_rows("tp", Strategy("tp"), _rows("tp"))[""]["makespan_ms"] == 2.0
    g21 = sweep_rows("ctapipe", Strategy("ctapipe", variant="cutlass_ctapipe_g21"), _rows("ctapipe"))
    assert list(g21) == [""] and g21[""]["makespan_ms"] == 3.5 and g21[""]["trace_median_ms"] == 4.5


def test_the_two_gpu_path_fills_every_planned_row_once_per_kind_and_m(monkeypatch):
    """ctahw.experiment._run_sweep_kinds with a fake Sweep: one Sweep per H, each kind run once per M, rows filled
    from the CUTLASS rows, a kind that raises leaves its rows failed with the error as the reason."""
    import ctahw.baselines as B
    import ctahw.pipelined as P
    from ctahw import experiment as E

    calls, made = [], []

    class FakeSweep:
        def __init__(self, cfg, log):
            made.append(cfg)
            self.cfg = cfg

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def free(self):
            pass

        def microbatch(self, m):
            calls.append(("microbatch", m))
            return [dict(r, chunks=c) for r in _rows("microbatch") for c in (r["chunks"],)] + \
                [dict(_rows("microbatch")[-1], backend="cutlass", chunks=8, median_ms=9.0)]

        def tp(self, m):
            calls.append(("tp", m))
            if m == 6144:
                raise RuntimeError("NCCL said no")
            return _rows("tp")

    def fake_ctapipe(sw, m):
        from types import SimpleNamespace

        calls.append(("ctapipe", m))
        for run in (0, 1):
            sw.traces[f"m{m}:g21:run{run}"] = SimpleNamespace(meta={"variant": "cutlass_ctapipe_g21_trace", "run": run})
        return [dict(r, backend=v) for r, v in zip(_rows("ctapipe") * 2, [
            "cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g4_trace", "cutlass_ctapipe_g21", "cutlass_ctapipe_g21_trace",
            "cutlass_ctapipe_c21", "cutlass_ctapipe_c21_trace"])]

    monkeypatch.setattr(B, "Sweep", FakeSweep)
    monkeypatch.setattr(P, "ctapipe_rows", fake_ctapipe)
    exp = load_experiment("reg-h4096")
    df = plan_runs(exp, gpus=2)
    extra, traces = {}, {}
    E._run_sweep_kinds(exp, df, E.RunConfig(), extra, traces, lambda s: None)
    assert sorted(traces) == sorted(f"m={m}:cutlass_ctapipe_g21_trace:run{r}" for m in (3072, 6144, 12288) for r in (0, 1))
    assert {(t.meta["case"], t.meta["strategy"]) for t in traces.values()} == {
        (f"m={m}", "ctapipe-g21") for m in (3072, 6144, 12288)}
    assert len(made) == 1 and made[0].h == 4096 and made[0].backends == ("cutlass",)
    assert made[0].ctapipe_variants == ("cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g4_trace", "cutlass_ctapipe_g21",
                                        "cutlass_ctapipe_g21_trace", "cutlass_ctapipe_c21", "cutlass_ctapipe_c21_trace")
    assert sorted(calls) == sorted({(k, m) for k in ("microbatch", "tp", "ctapipe") for m in (3072, 6144, 12288)})
    two = df[df["kind"] != "sequential"]
    tp = two[two["kind"] == "tp"].set_index("case")
    assert tp.loc["m=6144", "status"] == "failed" and "NCCL said no" in tp.loc["m=6144", "reason"]
    assert (tp.drop("m=6144")["status"] == "ok").all() and (tp.drop("m=6144")["makespan_ms"] == 2.0).all()
    mb = two[(two["kind"] == "microbatch") & (two["status"] != "skipped")]
    assert set(mb[mb["variant"] == "chunks=8"]["status"]) == {"ok"} and (mb[mb["variant"] == "chunks=8"]["makespan_ms"] == 9.0).all()
    assert (mb[mb["variant"].isin(["chunks=16", "chunks=32"])]["status"] == "failed").all()  # no such row came back
    assert (df[df["kind"] == "sequential"]["status"] == "planned").all()  # left to the one-GPU path


def test_swiglu_runs_unfused_in_sequential_chains_and_is_a_skipped_row_otherwise():
    from ctasim.spec import load_model

    wl = load_model("llama3.1-8b").workload
    fused = expand(dataclasses.replace(load_experiment("reg-mlp"), workload=wl))[0]
    assert "epilogue_fused = false" in reason_for(Strategy("sequential"), fused, 1)
    l0, l1 = wl.layers
    unfused = dataclasses.replace(fused, workload=dataclasses.replace(
        wl, layers=(dataclasses.replace(l0, epilogue_fused=False), l1)))
    assert reason_for(Strategy("sequential"), unfused, 1) is None
    assert reason_for(Strategy("microbatch", chunks=(2,)), unfused, 2) is not None
