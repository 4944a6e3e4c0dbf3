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


def test_two_gpus_plan_every_strategy_of_the_mlp_block():
    """The plan executor runs micro-batching and TP of any workload, and the CTA-pipelined kernels fuse GeLU and the
    residual, LayerNorm after the consumer: every registered row of the MLP block is planned on 2 GPUs (a chunk
    count that cannot cut M skipped)."""
    df = plan_runs(load_experiment("reg-mlp"), gpus=2)
    cut = df["variant"].isin(["chunks=64"]) & (df["m"] == 4096)
    assert (df[~cut]["status"] == "planned").all() and (df[cut]["status"] == "skipped").all()
    bad = Strategy("ctapipe", name="c", variant="cutlass_ctapipe_w21g4_trace")
    case = expand(load_experiment("reg-h4096"))[0]
    assert "not an untraced" in reason_for(bad, case, 2)
    assert "without a variant" in reason_for(Strategy("ctapipe"), case, 2)


def test_what_the_two_gpu_ctapipe_kernels_cannot_run_is_named():
    from ctahw.pipelined import workload_reason

    case = expand(load_experiment("reg-mlp"))[0]
    wl = case.workload
    l0, l1 = wl.layers
    assert workload_reason(wl) is None

    def with_layers(*layers):
        return dataclasses.replace(wl, layers=layers)

    assert "2-layer" in workload_reason(with_layers(l0, l1, l1))
    assert "row statistics" in workload_reason(with_layers(dataclasses.replace(l0, rowwise="layernorm"), l1))
    assert "fuse one op" in workload_reason(with_layers(dataclasses.replace(l0, epilogue=("gelu", "residual")), l1))
    assert "fuse one op" in workload_reason(with_layers(dataclasses.replace(l0, epilogue=("silu",),
                                                                            epilogue_fused=False), l1))
    assert "residual" in workload_reason(with_layers(dataclasses.replace(l0, epilogue=("residual",)), l1))
    assert "multiple of 64" in workload_reason(with_layers(l0, dataclasses.replace(l1, k=28672 + 32)))
    persistent = Strategy("ctapipe", name="p", variant="cutlass_ctapipe_p")
    assert "fuses no epilogue op" in reason_for(persistent, case, 2)
    assert reason_for(persistent, expand(load_experiment("reg-h4096"))[0], 2) is None


def test_plans_the_executor_cannot_issue_are_skipped_rows():
    """TP of an odd layer count ends in an all-gather, which the executor does not issue; a TP slice the CUTLASS
    kernel cannot take (K = 4096 / 2 ... with H = 4160: 2080 is no multiple of 64) is named."""
    case = expand(load_experiment("reg-h4096"))[0]
    three = dataclasses.replace(case, workload=dataclasses.replace(
        case.workload, layers=case.workload.layers + case.workload.layers[:1]))
    assert "allgather" in reason_for(Strategy("tp", tp_degree=2), three, 2)
    assert reason_for(Strategy("microbatch", chunks=(2,)), three, 3) is None
    odd = dataclasses.replace(case, workload=dataclasses.replace(case.workload, layers=tuple(
        dataclasses.replace(l, k=4160, n=4160) for l in case.workload.layers)))
    assert "multiple of 64" in reason_for(Strategy("tp", tp_degree=2), odd, 2) or \
        "column slices" in reason_for(Strategy("tp", tp_degree=2), odd, 2)


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
    import pytest

    from ctahw.experiment import sweep_rows

    g21 = sweep_rows("ctapipe", Strategy("ctapipe", variant="cutlass_ctapipe_g21"), _rows("ctapipe"))
    assert list(g21) == [""] and g21[""]["makespan_ms"] == 3.5 and g21[""]["trace_median_ms"] == 4.5
    with pytest.raises(ValueError, match="plan executor"):
        sweep_rows("microbatch", Strategy("microbatch"), _rows("ctapipe"))


def test_the_two_gpu_ctapipe_path_fills_every_planned_row_once_per_m(monkeypatch):
    """ctahw.experiment._run_sweep_kinds with a fake session: one session per H, the CTA-pipelining variants run once
    per M, rows filled from the CUTLASS rows; an M that raises leaves its rows failed with the error as the reason;
    the other kinds are left to the plan executor."""
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

    def fake_ctapipe(sw, m, wl=None):
        from types import SimpleNamespace

        assert wl is not None and wl.layers[0].m == m and wl.layers[0].k == 4096
        calls.append(("ctapipe", m))
        if m == 6144:
            raise RuntimeError("protocol timeout")
        for run in (0, 1):
            sw.traces[f"m{m}:g21:run{run}"] = SimpleNamespace(meta={"variant": "cutlass_ctapipe_g21_trace", "run": run})
        return [dict(r, backend=v) for r, v in zip(_rows("ctapipe") * 2, [
            "cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g4_trace", "cutlass_ctapipe_g21", "cutlass_ctapipe_g21_trace",
            "cutlass_ctapipe_c21", "cutlass_ctapipe_c21_trace"])]

    monkeypatch.setattr(B, "Session", FakeSweep)
    monkeypatch.setattr(P, "ctapipe_rows", fake_ctapipe)
    exp = load_experiment("reg-h4096")
    df = plan_runs(exp, gpus=2)
    extra, traces = {}, {}
    E._run_sweep_kinds(exp, df, E.RunConfig(), extra, traces, lambda s: None)
    assert sorted(traces) == sorted(f"m={m}:cutlass_ctapipe_g21_trace:run{r}" for m in (3072, 12288) for r in (0, 1))
    assert {(t.meta["case"], t.meta["strategy"]) for t in traces.values()} == {
        (f"m={m}", "ctapipe-g21") for m in (3072, 12288)}
    assert len(made) == 1 and made[0].h == 4096 and made[0].backends == ("cutlass",)
    assert made[0].ctapipe_variants == ("cutlass_ctapipe_w21g4", "cutlass_ctapipe_w21g4_trace", "cutlass_ctapipe_g21",
                                        "cutlass_ctapipe_g21_trace", "cutlass_ctapipe_c21", "cutlass_ctapipe_c21_trace")
    assert sorted(calls) == [("ctapipe", m) for m in (3072, 6144, 12288)]
    cp = df[df["kind"] == "ctapipe"].set_index(["case", "strategy"])
    assert (cp.xs("m=6144")["status"] == "failed").all() and cp.xs("m=6144")["reason"].str.contains("timeout").all()
    assert (cp.drop("m=6144", level=0)["status"] == "ok").all()
    assert cp.loc[("m=3072", "ctapipe-g21"), "makespan_ms"] == 3.5
    assert (df[df["kind"] != "ctapipe"]["status"] != "ok").all()  # left to the plan executor


def test_run_sends_each_planned_row_to_its_executor(monkeypatch):
    """ctahw.experiment.run on a fake 2-GPU machine: every micro-batching row gets the plan of its own chunk count,
    TP and sequential theirs, the chain kernel its rows, CTA-pipelining on two GPUs the Sweep; a row whose check
    fails is a failed row with the reason, a CUDA fault stops the run."""
    import pytest

    import ctahw.device as D
    from ctahw import experiment as E

    seen = []

    def fake_planned(case, plan, cfg, machines, log):
        seen.append((case.label, plan.strategy, plan.params.get("chunks"), plan.gpus))
        if plan.params.get("chunks") == 2 and case.label == "m=6144":
            raise ValueError("relative error check failed")
        return {"makespan_ms": float(plan.params.get("chunks") or 0) + 1.0, "rel_err": 1e-3, "ok": True, "copy_ms": 0.1}

    monkeypatch.setattr(D, "gpus", lambda: [object(), object()])
    monkeypatch.setattr(E, "_planned", fake_planned)
    monkeypatch.setattr(E, "_free", lambda n: None)
    monkeypatch.setattr(E, "_run_sweep_kinds", lambda exp, df, cfg, extra, traces, log: seen.append("sweep"))
    monkeypatch.setattr(E, "_Machines", lambda cfg, log: None)
    exp = load_experiment("reg-h4096")
    df = E.run(exp, E.RunConfig(), log=lambda s: None)
    assert seen[0] == "sweep"
    mb = df[(df["kind"] == "microbatch") & df["status"].isin(["ok", "failed"])]
    assert len(mb) and (mb["makespan_ms"].fillna(3.0) == mb["variant"].str.removeprefix("chunks=").astype(float)
                        + 1.0).all()
    bad = df[(df["case"] == "m=6144") & (df["variant"] == "chunks=2")]
    assert bad["status"].tolist() == ["failed"] and "relative error" in bad["reason"].iloc[0]
    assert set(df[df["kind"] == "tp"]["status"]) == {"ok"} and set(df[df["kind"] == "sequential"]["status"]) == {"ok"}
    assert {s[3] for s in seen[1:] if s[1] == "tp"} == {2} and {s[3] for s in seen[1:] if s[1] == "sequential"} == {1}
    assert "copy_ms" in df.columns

    class CUDARuntimeError(RuntimeError):  # CuPy's type, by name (ctahw.device.CUDA_FAULTS)
        pass

    def fault(*a, **k):
        raise CUDARuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")

    monkeypatch.setattr(E, "_planned", fault)
    with pytest.raises(RuntimeError, match="illegal"):
        E.run(exp, E.RunConfig(), log=lambda s: None)


def test_swiglu_runs_unfused_in_sequential_chains_and_is_a_skipped_row_otherwise():
    from ctasim.spec import load_model

    wl = load_model("llama3.1-8b").workload
    fused = expand(dataclasses.replace(load_experiment("reg-mlp"), workload=wl))[0]
    assert "epilogue_fused = false" in reason_for(Strategy("sequential"), fused, 1)
    l0, l1 = wl.layers
    unfused = dataclasses.replace(fused, workload=dataclasses.replace(
        wl, layers=(dataclasses.replace(l0, epilogue_fused=False), l1)))
    assert reason_for(Strategy("sequential"), unfused, 1) is None
    assert reason_for(Strategy("microbatch", chunks=(2,)), unfused, 2) is None  # the executor runs the pass
    assert "fused epilogues only" in reason_for(Strategy("tp", tp_degree=2), unfused, 2)
