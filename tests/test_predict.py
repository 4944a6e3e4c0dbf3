"""ctasim.predict and ctasim.results: registered predictions in the result schema both executors write."""

from __future__ import annotations

import dataclasses

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from ctasim import results
from ctasim.cli import main
from ctasim.harness import Harness, timed_makespan_ns, timed_plans
from ctasim.predict import Naive, predict
from ctasim.cases import load_experiment
from ctasim.spec import Strategy

ROOT = Path(__file__).resolve().parent.parent

HARNESS = Harness(6000.0, 3000.0, 4800.0, 3000.0, 14000.0)
NAIVE = Naive(0.004, 800.0, "test line")


def _exp():
    return load_experiment("reg-h4096")


def test_model_rows_are_the_harness_makespans_of_each_plan():
    exp = _exp()
    df = predict(exp, HARNESS, NAIVE)
    row = df[(df["case"] == "m=3072") & (df["strategy"] == "microbatch") & (df["variant"] == "chunks=4")
             & (df["source"] == "model")].iloc[0]
    from ctasim.cases import expand
    case = expand(exp)[0]
    s = next(s for s in exp.strategies if s.kind == "microbatch")
    plan = next(p for p in timed_plans(s, case.workload, exp.hardware, 2, case.label, HARNESS) if p.params["chunks"] == 4)
    assert row["makespan_ms"] == pytest.approx(timed_makespan_ns(plan, exp.hardware, HARNESS)[0] / 1e6)
    # every chunk count that cuts M = 3072 (24 row tiles) into whole tiles, and no other
    mb = df[(df["case"] == "m=3072") & (df["strategy"] == "microbatch") & (df["source"] == "model")]
    assert sorted(mb["variant"]) == sorted(f"chunks={c}" for c in (1, 2, 4, 8))


def test_naive_rules():
    exp = _exp()
    df = predict(exp, HARNESS, NAIVE)
    nv = df[(df["source"] == "naive") & (df["case"] == "m=6144")].set_index(["strategy", "variant"])["makespan_ms"]
    one = NAIVE.gemm_ms(6144, 4096, 4096)
    assert nv[("sequential", "")] == pytest.approx(2 * one)
    assert nv[("microbatch", "chunks=8")] == pytest.approx(9 * NAIVE.gemm_ms(768, 4096, 4096))
    assert nv[("ctapipe-w21g4", "")] == pytest.approx(one + one / 48)


def test_a_strategy_that_needs_more_gpus_is_a_skipped_row_with_its_reason():
    exp = load_experiment("reg-gemm-h4096")
    import dataclasses
    exp = dataclasses.replace(exp, strategies=exp.strategies + (Strategy("tp", tp_degree=2),))
    df = predict(exp, HARNESS, None)
    tp = df[df["strategy"] == "tp"]
    # no naive line given: model, the clock's one step (the profile has a clock curve) and waves only
    assert sorted(tp["source"]) == ["clock-step"] * 3 + ["model"] * 3 + ["waves"] * 3
    assert (tp["status"] == "skipped").all() and tp["reason"].str.contains("GPU").all()


def test_naive_fit_is_the_line_through_the_gemm_rows(tmp_path):
    rows = [{"experiment": "gemm", "backend": "cutlass", "ok": True, "m": m, "k": 1000, "median_ms": 0.01 + 2 * m * 1e6 / 5e11}
            for m in (1000, 2000, 4000)]
    rows.append({"experiment": "gemm", "backend": "cublas", "ok": True, "m": 1000, "k": 1000, "median_ms": 99.0})
    pd.DataFrame(rows).to_csv(tmp_path / "b.csv", index=False)
    n = Naive.fit(tmp_path / "b.csv")
    assert n.a_ms == pytest.approx(0.01) and n.tflops == pytest.approx(500.0)


def test_predict_cli_registers_once_and_refuses_to_overwrite(tmp_path, capsys):
    out = tmp_path / "reg"
    assert main(["predict", "reg-gemm-h4096", "--out", str(out)]) == 0
    rec = json.loads((out / "registration.json").read_text())
    assert rec["rules"]["judged"] and rec["harness"]["run_ns"] > 0 and "reg-gemm-h4096.toml" in rec["spec_sha256"]
    df = results.read(out / "predictions.csv")
    assert set(df["status"]) == {"ok"} and sorted(df["source"]) == ["clock-step"] * 3 + ["model"] * 3 + ["waves"] * 3
    assert main(["predict", "reg-gemm-h4096", "--out", str(out)]) == 2
    assert "never overwritten" in capsys.readouterr().err


def test_a_reference_time_adds_the_model_rows_scaled_by_the_calibration_gemms_ratio(tmp_path, capsys):
    """--reference-ms T: every model row again as model-ref, times T over the model's time of the calibration GEMM
    (16384 x 8192 x 8192 under the experiment's profile: reg49-reference's model row as predict writes it; the committed
    registration's 2.770 ms for h200-x1-calibrated as it was before registered plan 67's adoption on an H200), the
    ratio recorded; without it no such row; a time that is no positive number is one line and no folder (registered
    plan 63's correction)."""
    def model_ms(folder):
        df = pd.read_csv(folder / "predictions.csv")
        return float(df[(df["case"] == "m=16384") & (df["source"] == "model")]["makespan_ms"].iloc[0])

    # the committed registration, a record made before plan 67's adoption on an H200 (2026-12-06): the profile then
    assert main(["predict", "reg49-reference", "--hardware", "h200-x1-calibrated-lru", "--out", str(tmp_path / "lru"),
                 "--no-schedules"]) == 0
    assert model_ms(tmp_path / "lru") == pytest.approx(model_ms(ROOT / "bench/predictions/reg49-reference"), rel=1e-9)
    out = tmp_path / "scaled"
    assert main(["predict", "reg58-gap-law-h7424", "--out", str(out), "--no-schedules",
                 "--reference-ms", "2.7230"]) == 0
    got = capsys.readouterr()
    assert "every model row x 0.9829" in got.out and "warning" not in got.err
    # a time far from the profile's own (another machine's or shape's) is written but warned about
    assert main(["predict", "reg49-reference", "--out", str(tmp_path / "far"), "--no-schedules",
                 "--reference-ms", "4.0"]) == 0
    assert "warning: --reference-ms is 1.44 x the profile's own time" in capsys.readouterr().err
    ref_model = model_ms(tmp_path / "far")  # the calibration GEMM under the profile now
    rec = json.loads((out / "registration.json").read_text())["reference"]
    assert rec["model_ms"] == pytest.approx(ref_model, rel=1e-9) and rec["ratio"] == pytest.approx(2.7230 / ref_model)
    df = results.read(out / "predictions.csv")
    key = ["case", "strategy", "variant"]
    model = df[df["source"] == "model"].set_index(key)["makespan_ms"]
    scaled = df[df["source"] == "model-ref"].set_index(key)["makespan_ms"]
    assert len(scaled) == len(model) == 10
    pd.testing.assert_series_equal(scaled, model * rec["ratio"], check_names=False)
    assert main(["predict", "reg58-gap-law-h7424", "--out", str(tmp_path / "plain"), "--no-schedules"]) == 0
    plain = results.read(tmp_path / "plain/predictions.csv")
    assert "model-ref" not in set(plain["source"])
    assert json.loads((tmp_path / "plain/registration.json").read_text())["reference"] is None
    for bad in ("0", "-2.7", "nan", "inf", "fast"):
        capsys.readouterr()
        with pytest.raises(SystemExit) as e:
            main(["predict", "reg49-reference", "--out", str(tmp_path / "bad"), "--reference-ms", bad])
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert e.value.code == 2 and len(err) == 1 and "--reference-ms" in err[0] and not (tmp_path / "bad").exists()


def test_predict_writes_the_schedules_unless_told_not_to(tmp_path):
    wl = "[workload]\nname = \"w\"\n[[workload.layer]]\nm = 1024\nk = 2048\nn = 2048\n[[workload.layer]]\nm = 1024\nk = 2048\nn = 2048\n"
    (tmp_path / "e.toml").write_text('[experiment]\nname = "e"\nhardware = "h200-x8-mechanism"\n' + wl.replace(
        "[workload]", "[experiment.workload]").replace("[[workload.layer]]", "[[experiment.workload.layer]]")
        + '[[experiment.strategy]]\nkind = "ctapipe"\nplacement = "ring"\n')
    assert main(["predict", str(tmp_path / "e.toml"), "--out", str(tmp_path / "with")]) == 0
    assert main(["predict", str(tmp_path / "e.toml"), "--out", str(tmp_path / "without"), "--no-schedules"]) == 0
    assert [p.name for p in (tmp_path / "with/schedules").iterdir()] == ["w-ctapipe.tiles.csv.gz"]
    assert not (tmp_path / "without/schedules").exists()
    assert json.loads((tmp_path / "with/registration.json").read_text())["schedules"] is True
    assert json.loads((tmp_path / "without/registration.json").read_text())["schedules"] is False
    # the makespans do not depend on it
    assert (tmp_path / "with/predictions.csv").read_text() == (tmp_path / "without/predictions.csv").read_text()


def test_results_read_rejects_garbage_missing_and_bad_rows(tmp_path):
    with pytest.raises(results.ResultsError, match="no such results file"):
        results.read(tmp_path / "none.csv")
    (tmp_path / "bin.csv").write_bytes(b"\x00\xff\xfe" * 50)
    with pytest.raises(results.ResultsError):
        results.read(tmp_path / "bin.csv")
    (tmp_path / "cols.csv").write_text("a,b\n1,2\n")
    with pytest.raises(results.ResultsError, match="missing columns"):
        results.read(tmp_path / "cols.csv")
    row = {c: "" for c in results.COLUMNS} | {"status": "ok", "makespan_ms": "-1"}
    pd.DataFrame([row]).to_csv(tmp_path / "neg.csv", index=False)
    with pytest.raises(results.ResultsError, match="positive makespan"):
        results.read(tmp_path / "neg.csv")


def test_staged_folder_is_written_whole_or_not_at_all(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(RuntimeError):
        with results.staged_folder(out) as tmp:
            (tmp / "a.csv").write_text("half")
            raise RuntimeError("simulated failure")
    assert list(tmp_path.iterdir()) == []  # neither out nor its temporary sibling
    with results.staged_folder(out) as tmp:
        (tmp / "a.csv").write_text("1")
        (tmp / "b.csv").write_text("1")
    with results.staged_folder(out, merge=True) as tmp:
        (tmp / "a.csv").write_text("2")
    assert (out / "a.csv").read_text() == "2" and (out / "b.csv").read_text() == "1"
    with results.staged_folder(out) as tmp:
        (tmp / "c.csv").write_text("3")
    assert sorted(p.name for p in out.iterdir()) == ["c.csv"] and len(list(tmp_path.iterdir())) == 1


def test_waves_rules_are_wave_quantized_tile_times_of_the_profile():
    """The profile-only predictor: whole waves of the profile's tile time; pipelined = the slower layer + one wave."""
    import math

    from ctasim import costs
    from ctasim.predict import Waves

    exp = _exp()
    df = predict(exp, HARNESS, None)
    wv = df[(df["source"] == "waves") & (df["case"] == "m=6144")].set_index(["strategy", "variant"])["makespan_ms"]
    hw = exp.hardware
    layer = dataclasses.replace(exp.workload.layers[0], m=6144)
    cfg = hw.config(layer.tile_m, layer.tile_n)
    tile_ms = costs.tile_ns(layer, layer.k, hw, 2) / 1e6
    waves = math.ceil((6144 // 128) * (4096 // 256) / (hw.sm_count * cfg.cta_slots_per_sm))
    one = cfg.kernel_fixed_ns / 1e6 + waves * tile_ms
    assert wv[("sequential", "")] == pytest.approx(2 * one)
    assert wv[("ctapipe-w21g4", "")] == pytest.approx(one + tile_ms)
    chunk = dataclasses.replace(layer, m=768)
    copy = 768 * 4096 * 2 / hw.copy_engine_gbps / 1e6
    assert wv[("microbatch", "chunks=8")] == pytest.approx(9 * Waves().gemm_ms(chunk, hw, 2) + copy)
    assert wv[("tp", "")] > one  # two half GEMMs plus an all-reduce


MODEL_EXPERIMENTS = {"llama3.1-8b": "reg5-llama8b-1gpu", "llama3.1-70b": "reg5-llama70b-1gpu",
                     "qwen2.5-72b": "reg6-qwen2.5-72b-1gpu", "mixtral-8x22b-expert": "reg6-mixtral-8x22b-expert-1gpu",
                     "deepseek-v3-dense": "reg6-deepseek-v3-dense-1gpu", "llama3.1-405b": "reg6-llama3.1-405b-1gpu",
                     "qwen2.5-32b": "reg7-qwen2.5-32b-1gpu", "mistral-large-2": "reg7-mistral-large-2-1gpu",
                     "gpt3-175b": "reg7-gpt3-175b-1gpu", "llama2-13b": "reg8-llama2-13b-1gpu", "yi-34b": "reg8-yi-34b-1gpu",
                     "command-r-plus": "reg8-command-r-plus-1gpu", "falcon-40b": "reg8-falcon-40b-1gpu",
                     "mistral-nemo-12b": "reg21-mistral-nemo-12b-1gpu", "phi3-medium": "reg21-phi3-medium-1gpu",
                     "internlm2-20b": "reg21-internlm2-20b-1gpu", "gpt-neox-20b": "reg21-gpt-neox-20b-1gpu",
                     "opt-66b": "reg21-opt-66b-1gpu", "opt-30b": "reg22-opt-30b-1gpu",
                     "pythia-6.9b": "reg22-pythia-6.9b-1gpu", "qwen2.5-7b": "reg22-qwen2.5-7b-1gpu",
                     "qwen2.5-14b": "reg22-qwen2.5-14b-1gpu", "opt-13b": "reg25-opt-13b-1gpu",
                     "opt-175b": "reg25-opt-175b-1gpu", "llama3.2-1b": "reg96-llama3.2-1b-1gpu",
                     "llama3.2-3b": "reg96-llama3.2-3b-1gpu", "qwen2.5-1.5b": "reg96-qwen2.5-1.5b-1gpu",
                     "pythia-410m": "reg96-pythia-410m-1gpu", "qwen2.5-3b": "reg99-qwen2.5-3b-1gpu",
                     "stablelm-2-1.6b": "reg99-stablelm-2-1.6b-1gpu", "phi-2": "reg99-phi-2-1gpu",
                     "pythia-1.4b": "reg99-pythia-1.4b-1gpu", "opt-1.3b": "reg99-opt-1.3b-1gpu",
                     "stablelm-3b-4e1t": "reg102-stablelm-3b-4e1t-1gpu", "minicpm-2b": "reg102-minicpm-2b-1gpu",
                     "qwen1.5-1.8b": "reg102-qwen1.5-1.8b-1gpu", "gpt-j-6b": "reg102-gpt-j-6b-1gpu",
                     "gpt2-large": "reg102-gpt2-large-1gpu", "opt-2.7b": "reg102-opt-2.7b-1gpu"}
TWIN_EXPERIMENTS = {"reg25-gpt3-175b-1gpu": "gpt3-175b", "reg26-llama3.1-70b-1gpu": "llama3.1-70b",
                    "reg26-deepseek-v3-dense-1gpu": "deepseek-v3-dense",
                    "reg26-mixtral-8x22b-expert-1gpu": "mixtral-8x22b-expert", "reg27-llama3.1-405b-1gpu": "llama3.1-405b",
                    "reg27-qwen2.5-72b-1gpu": "qwen2.5-72b", "reg27-gpt3-175b-1gpu": "gpt3-175b",
                    "reg28-command-r-plus-1gpu": "command-r-plus", "reg28-yi-34b-1gpu": "yi-34b",
                    "reg28-mistral-large-2-1gpu": "mistral-large-2", "reg103-llama3.1-8b-1gpu": "llama3.1-8b",
                    "reg103-qwen2.5-7b-1gpu": "qwen2.5-7b", "reg103-internlm2-20b-1gpu": "internlm2-20b",
                    "reg103-gpt-neox-20b-1gpu": "gpt-neox-20b"}
"""Further registered experiments of a model spec (the first is MODEL_EXPERIMENTS'), held to its layers too."""


def test_every_model_has_a_registered_one_gpu_experiment():
    from ctasim.spec import list_specs

    assert sorted(MODEL_EXPERIMENTS) == sorted(list_specs()["models"])


@pytest.mark.parametrize("model, experiment", sorted(MODEL_EXPERIMENTS.items())
                         + sorted((m, e) for e, m in TWIN_EXPERIMENTS.items()))
def test_registered_model_experiments_run_the_model_specs_layers_with_the_swiglu_unfused(model, experiment):
    """reg5's, reg6's and reg7's workloads are the model spec's MLP block with epilogue_fused = false on its gated
    layer: nothing else differs (the model spec is the one source of the shapes)."""
    from ctasim.spec import load_model

    exp = load_experiment(experiment)
    want = tuple(dataclasses.replace(l, epilogue_fused="swiglu" not in l.epilogue)
                 for l in load_model(model).workload.layers)
    assert exp.workload.layers == want
    assert [l.epilogue_pass for l in exp.workload.layers] == [l.gated for l in exp.workload.layers]


def test_naive_counts_an_unfused_epilogue_as_a_memory_pass():
    from ctasim import costs

    exp = load_experiment("reg5-llama8b-1gpu")
    from ctasim.cases import expand

    (c,) = expand(dataclasses.replace(exp, sweep=()))  # the spec's own M
    naive = Naive(0.0, 100.0, "by hand")  # 100 TFLOP/s, no intercept
    l0, l1 = c.workload.layers
    hw = exp.hardware
    gemms = sum(naive.gemm_ms(l.m, l.k, l.n) for l in (l0, l1))
    passes = (costs.epilogue_pass_ns(l0, 2, hw) + costs.rowwise_ns(l1.m, l1.out_n, 2, hw)) / 1e6
    assert naive.predict_ms(Strategy("sequential"), c, hw, {}) == pytest.approx(gemms + passes)
    fused = dataclasses.replace(c, workload=dataclasses.replace(
        c.workload, layers=(dataclasses.replace(l0, epilogue_fused=True), l1)))
    assert naive.predict_ms(Strategy("sequential"), fused, hw, {}) == pytest.approx(
        gemms + costs.rowwise_ns(l1.m, l1.out_n, 2, hw) / 1e6)


def test_gelu_priced_is_the_model_with_a_fused_relu_or_silu_at_the_gelus_cost():
    """Beside a profile that prices a fused ReLU apart from the GeLU (h200-x1-calibrated: 0), the gelu-priced
    predictor prices it as a GeLU: only the layer with the fused ReLU is slower, by its tiles' GeLU epilogue time;
    an experiment with no fused ReLU or SiLU has no gelu-priced rows, nor does a profile with both factors 1."""
    from ctasim.predict import PREDICTORS, gelu_priced

    exp = load_experiment("reg22-opt-30b-1gpu")
    exp = dataclasses.replace(exp, sweep=(("m", (4096,)),))
    hw = exp.hardware
    assert hw.relu_epilogue_factor == 0.0
    df = predict(exp, HARNESS, None).set_index("source")["makespan_ms"]
    assert "gelu-priced" in PREDICTORS and "gelu-priced" in df.index
    relu = exp.workload.layers[0]
    tiles = (4096 // relu.tile_m) * (relu.n // relu.tile_n)
    cfg = hw.config(relu.tile_m, relu.tile_n)
    waves = math.ceil(tiles / (hw.sm_count * cfg.cta_slots_per_sm))
    extra_ms = hw.activation_epilogue_ns_per_element * relu.tile_m * relu.tile_n * waves / 1e6
    assert df["gelu-priced"] - df["model"] == pytest.approx(extra_ms, rel=0.05)
    assert gelu_priced(dataclasses.replace(hw, relu_epilogue_factor=1.0, silu_epilogue_factor=1.0),
                       exp.workload.layers) is None
    plain = load_experiment("reg22-pythia-6.9b-1gpu")
    assert gelu_priced(plain.hardware, plain.workload.layers) is None
    assert "gelu-priced" not in set(predict(dataclasses.replace(plain, sweep=(("m", (4096,)),)), HARNESS, None)["source"])


def test_a_gemm_reading_a_relus_output_runs_at_the_profiles_relu_input_factor():
    """input_tile_factor: the down GEMM of a ReLU block (layer 1, its A the ReLU's output) takes relu_input_tile_factor
    of its time; layer 0 (the workload's input), a layer after a GeLU, and a layer after a ReLU with a row-wise op
    between take 1. In the sequential plan only the down kernel's tiles scale; relu-input-off is the model with the
    factor at 1, and no relu-input-off rows come where no layer reads a ReLU's output."""
    from ctasim import costs
    from ctasim.predict import PREDICTORS, relu_input_off
    from ctasim.strategies import build_plans

    exp = load_experiment("reg22-opt-30b-1gpu")
    hw, layers = exp.hardware, exp.workload.layers
    assert hw.relu_input_tile_factor == 0.946
    assert [costs.input_tile_factor(layers, i, hw) for i in range(2)] == [1.0, 0.946]
    normed = (dataclasses.replace(layers[0], rowwise="layernorm"), layers[1])
    assert costs.input_tile_factor(normed, 1, hw) == 1.0
    gelu = (dataclasses.replace(layers[0], epilogue=("gelu",)), layers[1])
    assert costs.input_tile_factor(gelu, 1, hw) == 1.0
    (case,) = [c for c in __import__("ctasim.cases", fromlist=["expand"]).expand(exp) if c.label == "m=16384"]
    off = relu_input_off(hw, layers)
    assert off is not None and off.relu_input_tile_factor == 1.0
    on_k = {k.layer: k for k in build_plans(Strategy("sequential"), case.workload, hw, 1, "c")[0].kernels()}
    off_k = {k.layer: k for k in build_plans(Strategy("sequential"), case.workload, off, 1, "c")[0].kernels()}
    assert on_k[0].tile_ns == off_k[0].tile_ns and (on_k[0].tile_times == off_k[0].tile_times).all()
    assert on_k[1].tile_ns == pytest.approx(0.946 * off_k[1].tile_ns)
    assert on_k[1].tile_times == pytest.approx(0.946 * off_k[1].tile_times)
    df = predict(dataclasses.replace(exp, sweep=(("m", (16384,)),)), HARNESS, None).set_index("source")["makespan_ms"]
    assert "relu-input-off" in PREDICTORS and df["model"] < df["relu-input-off"]
    plain = load_experiment("reg22-pythia-6.9b-1gpu")
    assert relu_input_off(plain.hardware, plain.workload.layers) is None
    assert relu_input_off(dataclasses.replace(hw, relu_input_tile_factor=1.0), layers) is None


def test_a_chain_kernel_scales_each_entry_by_its_own_layers_input():
    """scale_by_input on a chain kernel (every layer in one kernel): the entries of layer j > 0 after a ReLU layer
    take the factor, layer 0's entries keep their time."""
    from ctasim.spec import Layer, Workload, load_hardware
    from ctasim.strategies import build_plans

    hw = load_hardware("h200-x1-calibrated")
    relu = Layer(m=4096, n=4096, k=4096, epilogue=("relu",))
    wl = Workload("relu-chain", "bf16", (relu, relu, relu))
    off = dataclasses.replace(hw, relu_input_tile_factor=1.0)
    (k_on,) = build_plans(Strategy("ctapipe", gpus=1), wl, hw, 1, "c")[0].kernels()
    (k_off,) = build_plans(Strategy("ctapipe", gpus=1), wl, off, 1, "c")[0].kernels()
    assert k_on.chain_layers == 3
    layer_of = k_on.order // (k_on.tiles_m * k_on.tiles_n)
    ratio = k_on.tile_times / k_off.tile_times
    assert ratio[layer_of == 0] == pytest.approx(1.0) and ratio[layer_of > 0] == pytest.approx(0.946)
    assert k_on.tile_ns == pytest.approx(float(k_on.tile_times.mean()))


def test_clock_step_sits_beside_a_profile_with_a_clock_curve_in_the_burst_regime_only():
    """The clock-step predictor is the profile with its curve removed (the one step): present for a burst experiment
    whose profile has a curve, where a long run differs from the model; absent under the sustained regime (the same
    model) and beside a profile without a curve."""
    from ctasim.predict import clock_step, one_step

    exp = load_experiment("reg26-mixtral-8x22b-expert-1gpu")
    exp = dataclasses.replace(exp, sweep=(("m", (65536,)),))
    df = predict(exp, HARNESS, None).set_index("source").makespan_ms
    assert "clock-step" in df.index and abs(df["clock-step"] / df["model"] - 1) > 0.005
    sus = predict(dataclasses.replace(exp, regime="sustained"), HARNESS, None)
    assert "clock-step" not in set(sus["source"])
    assert clock_step(exp.hardware, "burst").clock_curve_ns == () and clock_step(exp.hardware, "sustained") is None
    assert clock_step(one_step(exp.hardware), "burst") is None and one_step(one_step(exp.hardware)) == one_step(exp.hardware)
