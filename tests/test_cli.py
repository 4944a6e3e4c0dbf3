"""The ctasim command line."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from ctasim.cli import main
from ctasim.spec import SPECS_DIR, reference_markdown


def test_run_default_prints_every_strategy(capsys):
    assert main(["run", "-q"]) == 0
    out = capsys.readouterr().out
    for label in ("sequential", "microbatch", "tp2", "tp8", "ctapipe", "hybrid-tp4"):
        assert f" {label} " in out
    assert "(not measured)" in out and "invariants checked" in out


def test_run_writes_table_and_plots(tmp_path, capsys):
    assert main(["run", "raster", "-q", "--out", str(tmp_path), "--plots"]) == 0
    df = pd.read_csv(tmp_path / "raster.csv")
    assert set(df.strategy) == {"row-major", "column-major", "sequential"}
    row = df[(df.strategy == "row-major") & (df.m == 16384)].latency_us.item()
    col = df[(df.strategy == "column-major") & (df.m == 16384)].latency_us.item()
    assert row < col
    assert (tmp_path / "raster-latency.png").stat().st_size > 1000


def test_sweep_over_a_hardware_field(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["sweep", "raster", "-q", "--set", "hardware.link_gbps=50,400", "--set", "m=4096",
                 "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert sorted(df["hardware.link_gbps"].unique()) == [50, 400] and set(df.m) == {4096}
    pipe = df[df.strategy == "row-major"].set_index("hardware.link_gbps").latency_us
    assert pipe[50] > pipe[400]  # a slower link delays the consumer


def test_sweep_rejects_an_unknown_field_before_running(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["sweep", "raster", "-q", "--set", "hardware.warp_speed=1", "--out", str(out)]) == 2
    assert "hardware.warp_speed" in capsys.readouterr().err
    assert not out.exists()


def test_sweep_rejects_a_bad_value(tmp_path, capsys):
    assert main(["sweep", "raster", "-q", "--set", "hardware.link_gbps=-1", "--out", str(tmp_path / "s.csv")]) == 2
    assert "must be positive" in capsys.readouterr().err


def test_trace_exports_files(tmp_path, capsys):
    assert main(["trace", "raster", "--case", "m=4096", "--strategy", "row-major", "--out", str(tmp_path),
                 "--format", "csv", "-q"]) == 0
    names = {p.name for p in tmp_path.iterdir()}
    stem = "raster-row-major-m4096"
    assert {f"{stem}.tiles.csv", f"{stem}.chrome.json", f"{stem}-gantt.png"} <= names


def test_trace_names_an_unknown_case(tmp_path, capsys):
    assert main(["trace", "raster", "--case", "m=7", "--out", str(tmp_path)]) == 2
    assert "no case 'm=7'" in capsys.readouterr().err


def test_spec_reference_in_docs_is_current():
    doc = (SPECS_DIR.parent / "docs" / "spec-format.md").read_text()
    block = doc.split("<!-- BEGIN GENERATED -->\n", 1)[1].split("<!-- END GENERATED -->", 1)[0]
    assert block.strip() == reference_markdown().strip(), "run: python -m ctasim.spec, paste into docs/spec-format.md"


def test_sweep_over_a_sweep_axis(tmp_path, capsys):
    out = tmp_path / "s.csv"
    assert main(["sweep", "fig4", "-q", "--set", "layers=2,3", "--set", "hardware.link_gbps=400",
                 "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert sorted(df.layers.unique()) == [2, 3] and set(df.gpus) == {2, 3}


@pytest.mark.parametrize("name", sorted(__import__("ctasim.spec", fromlist=["list_specs"]).list_specs()["experiments"]))
def test_every_shipped_experiment_runs_and_passes_its_invariants(name):
    from ctasim.run import run_experiment
    from ctasim.cases import load_experiment

    exp = load_experiment(name)
    df, results = run_experiment(exp, check=True)
    assert len(df) == len(results) > 0
    assert (df.latency_us > 0).all() and df.latency_us.notna().all()


@pytest.mark.parametrize("pkg", ["ctasim", "ctahw"])
def test_python_dash_m_is_the_console_script(pkg, capsys):
    import importlib
    import subprocess
    import sys

    got = subprocess.run([sys.executable, "-m", pkg, "--help"], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    with pytest.raises(SystemExit) as e:
        importlib.import_module(f"{pkg}.cli").main(["--help"])
    assert e.value.code == 0
    assert got.stdout == capsys.readouterr().out
    bad = subprocess.run([sys.executable, "-m", pkg, "no-such-command"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_the_readme_sample_table_is_what_ctasim_run_prints(capsys):
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = readme.split("## Reading the output\n\n```\n", 1)[1].split("```", 1)[0].strip()
    assert main(["run", "-q"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert block == "\n".join(printed[2:]).strip(), "paste `ctasim run -q` (its table) into the README"


def test_docs_advice_is_what_ctasim_advise_writes_now():
    """docs/advice.md (ctasim advise --doc): one section per model x documented machine, and two sections (the quick
    2-GPU machine, and an H100 machine, whose lines quote the H100 plans) regenerated equal to the committed ones."""
    from pathlib import Path

    from ctasim import advise as A
    from ctasim.cli import DOC_HARDWARE
    from ctasim.spec import list_specs, load_hardware, load_model

    doc = (Path(__file__).resolve().parent.parent / "docs" / "advice.md").read_text()
    heads = [line for line in doc.splitlines() if line.startswith("### ")]
    assert heads == [f"### {m} on {h} (burst clocks)" for h in DOC_HARDWARE for m in list_specs()["models"]]
    model, hw = load_model("llama3.1-8b"), load_hardware("h200-x2-calibrated")
    section = A.markdown(model, hw, A.advise(model, hw, A.TOKENS), "burst")
    assert section in doc, "run: ctasim advise --doc docs/advice.md"
    h100 = load_hardware("h100-x8")
    section = A.markdown(model, h100, A.advise(model, h100, A.TOKENS), "burst")
    assert "an H100's blocks: registered plans" in section
    assert section in doc, "run: ctasim advise --doc docs/advice.md (an H100 section)"


def test_the_advice_summary_counts_wins_per_machine_and_sets_apart_incomplete_comparisons():
    """docs/advice.md's "In short" table (ctasim.advise.machine_summary): per machine the points, the CTA-pipelined
    wins, the wins in blocks where every strategy ran, the models won there, and the ratio's median and range."""
    from pathlib import Path

    from ctasim import advise as A

    points = pd.DataFrame({
        "hardware": ["x", "x", "x", "x", "y", "y"],
        "model": ["a", "a", "b", "b", "a", "b"],
        "pipelined_vs_other": [0.9, 1.2, 0.8, 0.95, 1.1, float("nan")],
    })
    s = A.machine_summary(points, incomplete={("b", "x")}).set_index("hardware")
    assert s.loc["x", ["points", "wins", "complete_wins", "models", "models_won"]].tolist() == [4, 3, 1, 2, 1]
    assert s.loc["x", "median"] == pytest.approx(0.925) and s.loc["x", "least"] == 0.8 and s.loc["x", "most"] == 1.2
    assert s.loc["y", ["points", "wins", "complete_wins", "models_won"]].tolist() == [2, 0, 0, 0]
    assert s.loc["y", "median"] == 1.1  # a point with no CTA-pipelined strategy counts as a point, not in the ratio
    rows = A.summary_markdown(s.reset_index())
    assert rows[2] == "| x | 4 | 3 | 1 | 1 of 2 | 0.925× (0.800-1.200×) |"
    doc = (Path(__file__).resolve().parent.parent / "docs" / "advice.md").read_text()
    assert rows[0] in doc, "run: ctasim advise --doc docs/advice.md"


def test_advise_says_a_derived_profile_is_derived_not_datasheet(capsys):
    assert main(["advise", "--model", "llama3.1-8b", "--hardware", "h200-x8-mechanism", "--tokens", "1024"]) == 0
    out = capsys.readouterr().out
    assert "profile h200-x8-mechanism: derived from h200-x2-mechanism by ctasim.profiles" in out
    assert main(["advise", "--model", "llama3.1-8b", "--hardware", "h200-x8", "--tokens", "1024"]) == 0
    assert "profile h200-x8: datasheet figures" in capsys.readouterr().out


def test_advise_puts_the_fastest_strategy_first_and_says_what_it_could_not_run(capsys):
    assert main(["advise", "--model", "qwen2.5-72b", "--hardware", "h200-x2-calibrated", "--tokens", "1024,4096"]) == 0
    out = capsys.readouterr().out
    assert "Not run: tp2 (layer 0: N=59136 does not split" in out
    assert "profile h200-x2-calibrated: measured" in out and "ctapipe: not yet predicted-then-measured" in out
    rows = [line for line in out.splitlines() if line.startswith("| 1024 |")]
    assert rows and "ctapipe" in rows[0]  # with TP2 out, ctapipe is the fastest 2-GPU strategy here


def test_advise_runs_the_chain_kernels_ring_pair_where_the_block_fuses_into_it(capsys):
    from ctasim import advise as A
    from ctasim.spec import load_hardware, load_model

    hw = load_hardware("h200-x2-calibrated")
    df = A.advise(load_model("gpt3-175b"), hw, tokens=(4096,))  # GeLU + residual: the ring's fused ops
    ring = df[df.strategy == "ctapipe-ring"]
    assert len(ring) == 1 and int(ring.gpus.iloc[0]) == 2 and ring.latency_us.iloc[0] > 0
    why = A.dropped(load_model("llama3.1-8b"), hw, (4096,))  # a gated activation: no ring kernel fuses it
    assert set(why) == {"ctapipe-ring"} and "layer 0: swiglu" in why["ctapipe-ring"]


def test_advise_with_fewer_gpus_lists_only_its_own_strategies(capsys):
    assert main(["advise", "--model", "qwen2.5-72b", "--hardware", "h200-x8", "--gpus", "2", "--tokens", "1024"]) == 0
    out = capsys.readouterr().out
    assert "Not run: tp2" in out and "tp4" not in out and "hybrid" not in out


def test_advise_on_one_gpu_says_why_the_chain_kernel_does_not_run_a_block(capsys):
    """One GPU: the question is intra-GPU CTA-pipelining (the chain kernel), which runs layers of one square shape
    only; the answer names it and says why, rather than listing sequential alone in silence."""
    from ctasim import advise as A

    assert [s.label for s in A.strategies_for(1)] == ["sequential", "ctapipe-1gpu"]
    assert "ctapipe-1gpu" not in [s.label for s in A.strategies_for(2)]
    assert main(["advise", "--model", "llama3.1-8b", "--hardware", "h200-x1-calibrated", "--tokens", "1024"]) == 0
    out = capsys.readouterr().out
    assert "Not run: ctapipe-1gpu (the chain kernel runs layers of one square shape" in out
    assert "| 1024 | sequential (1) |" in out


def test_advise_says_that_the_hardware_runs_swiglu_unfused_only_where_the_model_fuses_it():
    import dataclasses

    from ctasim import advise as A
    from ctasim.spec import load_hardware, load_model

    model, hw = load_model("llama3.1-8b"), load_hardware("h200-x2-calibrated")
    df = A.advise(model, hw, tokens=(1024,), gpus=1)
    assert "ctahw runs it as a kernel of its own" in A.markdown(model, hw, df, "burst")
    l0, l1 = model.workload.layers
    unfused = dataclasses.replace(model, workload=dataclasses.replace(
        model.workload, layers=(dataclasses.replace(l0, epilogue_fused=False), l1)))
    assert "ctahw runs it as a kernel of its own" not in A.markdown(unfused, hw, df, "burst")


def test_advise_states_the_clock_curve_or_the_one_step_of_the_profile():
    """The trust line on the clock says what the engine applies (ctasim.engine.clock_steps): a profile with a clock
    curve, its factors at 30, 50 and 70 ms busy and its last; without one, the step's onset and slowdown; the
    sustained regime's factor; a curve with no sustained slowdown is still a clock in the profile; none: none."""
    from ctasim import advise as A
    from ctasim.spec import load_hardware

    hw = dataclasses.replace(load_hardware("h200-x2-calibrated"), clock_curve_ns=(0.0, 4e7, 6e7),
                             clock_curve_factor=(1.0, 1.05, 1.2))
    line = lambda h: next(l for l in A.trust(h, []) if l.startswith("clock regime"))  # noqa: E731
    assert "1.000x at 30 ms, 1.050x at 50 ms, 1.200x at 70 ms busy, 1.200x from 60 ms" in line(hw)
    assert f"sustained: every tile {hw.clock_sustained_slowdown:.3f}x" in line(hw)
    step = dataclasses.replace(hw, clock_curve_ns=(), clock_curve_factor=(), clock_onset_ns=5.6e7)
    assert f"slows {hw.clock_sustained_slowdown:.3f}x after 56 ms busy" in line(step) and "curve" not in line(step)
    only_curve = dataclasses.replace(hw, clock_sustained_slowdown=1.0)
    assert "curve" in line(only_curve) and "sustained: every tile 1.000x" in line(only_curve)
    assert "not in this profile" in line(dataclasses.replace(step, clock_sustained_slowdown=1.0))


def test_advise_quotes_registered_validation_per_profile_it_was_predicted_with(tmp_path):
    """Registered figures are grouped by the profile each registration was predicted with (its registration.json):
    a registration of another profile is not quoted as if it were this one's; without the file it says '?'."""
    import shutil

    from ctasim import advise as A
    from ctasim.spec import SPECS_DIR, load_hardware

    parts = A.registered_by_profile("sequential")
    assert set(parts) == {"h200-x1-calibrated", "h200-x1-calibrated-carried", "h200-x1-calibrated-wave",
                          "h200-x1-calibrated-partition", "h200-x1-calibrated-threshold", "h200-x2-calibrated",
                          "h200-x8-mechanism", "h200-x1-calibrated-mechanism", "h200-x1-calibrated-threshold-rate",
                          "h200-x1-calibrated-survival-own", "h200-x1-calibrated-threshold-own",
                          "h200-x1-calibrated-gaps", "h100-x1-datasheet", "h100-x1-datasheet-latency",
                          "h100-x1-datasheet-tickets", "h100-x1-datasheet-reuse", "h200-x1-calibrated-reuse",
                          "h100-x1-datasheet-tile", "h100-x1-datasheet-exposed"}
    # plans 64's to 68's H100 runs, filed under their registrations: quoted under the H100 profiles, not the H200
    # one (filed under their experiments' names they would count as h200-x1-calibrated's); the sequential line counts
    # the registrations with a sequential case: plan 64's four (12 runs; the reference's 3 more from plan 65's calls),
    # plan 65's H = 5120 (3 runs), plan 66's two (2 runs each), plan 68's two (2 runs each), plan 74's six (2 runs
    # each; its tile-law twins under h100-x1-datasheet-tile), plan 75's seven (1 run each), plan 76's six (2 each;
    # their twins under h100-x1-datasheet-exposed), plan 77's two (1 each), plan 96's four blocks and plan 99's five
    # (1 run each, filed under their experiments' names: their registrations were made with h100-x1-datasheet)
    assert "reg64-h100-h5632" in parts["h100-x1-datasheet"] and "over 68 measured runs" in parts["h100-x1-datasheet"]
    assert "reg96-pythia-410m-1gpu" in parts["h100-x1-datasheet"]
    assert "reg99-stablelm-2-1.6b-1gpu" in parts["h100-x1-datasheet"]
    assert "reg77-h100-h9216" in parts["h100-x1-datasheet"]
    assert "reg76-h100-qwen2.5-7b" in parts["h100-x1-datasheet"]
    assert "reg76-h100-qwen2.5-7b-exposed" in parts["h100-x1-datasheet-exposed"]
    assert "reg75-h100-yi-34b-exposed" in parts["h100-x1-datasheet-exposed"]
    assert "reg75-h100-yi-34b-exposed" not in parts["h100-x1-datasheet"]
    assert "reg74-h100-opt-30b-tile" in parts["h100-x1-datasheet-tile"]
    assert "reg74-h100-opt-30b-tile" not in parts["h100-x1-datasheet"]
    assert "reg68-h100-h4608-reuse" in parts["h100-x1-datasheet-reuse"]
    assert "reg65-h100-h5120-latency" in parts["h100-x1-datasheet-latency"]
    assert "reg65-h100-h5120-latency" not in parts["h100-x1-datasheet"]
    assert "reg66-h100-h7168-tickets" in parts["h100-x1-datasheet-tickets"]
    assert "reg66-h100-h7168-tickets" not in parts["h100-x1-datasheet"]
    # a derived profile with registered validations of its own is not said to have none
    (head,) = [l for l in A.trust(load_hardware("h100-x1-datasheet"), ["sequential"]) if l.startswith("profile ")]
    assert "derived from h200-x1-calibrated" in head and "no validation" not in head
    assert "over 128 measured runs" in parts["h200-x1-calibrated"]
    # plan 68's H200 call (2026-12-06): its twin registrations (the survival reuse law) under their own profile
    assert "reg68-chain-reuse-h4096-reuse" in parts["h200-x1-calibrated-reuse"]
    assert "reg68-chain-reuse-h4096-reuse" not in parts["h200-x1-calibrated"]
    # plan 58's twin (the survival law with the gap spread and the touched bytes)
    assert "reg58-gap-law-h7424-gaps" in parts["h200-x1-calibrated-gaps"]
    assert "reg58-gap-law-h7424-gaps" not in parts["h200-x1-calibrated"]
    # plans 51 and 52's twins (the measured L2 curve's law or the threshold law, each with the tickets mainloop factor)
    assert "reg52-chain-faster-h7680-mechanism" in parts["h200-x1-calibrated-mechanism"]
    assert "reg52-chain-faster-h7680-mechanism" not in parts["h200-x1-calibrated"]
    # plan 53's twins (the survival or threshold law, each with the factor measured under it)
    assert "reg53-chain-law-h8704-survival-own" in parts["h200-x1-calibrated-survival-own"]
    assert "reg53-chain-law-h8704-survival-own" not in parts["h200-x1-calibrated"]
    # plan 49's twin registrations, the ticket law "partition": their sequential rows quoted under their own profile
    assert "reg49-chain-order-h7168-partition" in parts["h200-x1-calibrated-partition"]
    assert "reg49-chain-order-h7168-partition" not in parts["h200-x1-calibrated"]
    assert "earlier version" not in parts["h200-x1-calibrated-partition"]
    # plan 38's one-GPU rows (the layers one after another), predicted with the whole host's profile before its chain
    # config took the partition ticket law (after plan 49)
    assert "reg38-fig4-x8" in parts["h200-x8-mechanism"] and "2 of them with an earlier version" in parts["h200-x8-mechanism"]
    assert "reg8-yi-34b-1gpu" in parts["h200-x1-calibrated"] and "reg8-yi-34b-1gpu" not in parts["h200-x2-calibrated"]
    assert "reg20-yi-34b-1gpu-wave" in parts["h200-x1-calibrated-wave"]  # plan 20's second model, its own profile
    assert "reg20-yi-34b-1gpu-wave" not in parts["h200-x1-calibrated"]
    # every registration on the h200-x1 profiles was predicted before their present files (the activation factors
    # came after plan 21, the ReLU-input factor after plan 22): said, for each profile and every one of its
    # registrations
    assert "of them with an earlier version of the profile's file" in parts["h200-x1-calibrated"]
    assert "16 of them with an earlier version" in parts["h200-x1-calibrated-wave"]
    assert "reg21-opt-66b-1gpu-carried" in parts["h200-x1-calibrated-carried"]
    assert "11 of them with an earlier version" in parts["h200-x1-calibrated-carried"]
    assert "reg5-llama8b-1gpu" in parts["h200-x2-calibrated"]
    # results without the registrations beside them: the profile is unknown, said so
    root = SPECS_DIR.parent / "bench" / "results"
    dest = tmp_path / "results" / "validation-registered8" / "reg8-yi-34b-1gpu"
    dest.mkdir(parents=True)
    shutil.copy(root / "validation-registered8" / "reg8-yi-34b-1gpu" / "summary.csv", dest)
    assert list(A.registered_by_profile("sequential", tmp_path / "results")) == ["?"]
    assert "reg8-yi-34b-1gpu" in A.registered_by_profile("sequential", tmp_path / "results")["?"]
    hw = load_hardware("h200-x2-calibrated")
    (line,) = [l for l in A.trust(hw, ["sequential"], tmp_path / "results") if l.startswith("sequential:")]
    assert line.startswith("sequential: registered model: none of this profile's own; 1 other profile (?): ")


def test_advise_leads_with_the_profile_in_hand_and_its_bases_and_counts_the_others(monkeypatch):
    """The trust line quotes the profile advised on and the profiles it is derived from, by name, with their
    registrations; every other profile's registered runs in one summary, their registrations not named."""
    from ctasim import advise as A
    from ctasim.spec import load_hardware

    by = A.registered_by_profile("sequential")
    assert A.lineage("h100-x1-datasheet") == ["h100-x1-datasheet", "h200-x1-calibrated"]
    assert A.lineage("h200-x8-mechanism")[:2] == ["h200-x8-mechanism", "h200-x2-mechanism"]
    assert A.lineage("h200-x2-calibrated") == ["h200-x2-calibrated"]
    (line,) = [l for l in A.trust(load_hardware("h100-x1-datasheet"), ["sequential"]) if l.startswith("sequential:")]
    this, base, others = line.removeprefix("sequential: registered model: ").split("; ")
    assert this == "this profile h100-x1-datasheet: " + by["h100-x1-datasheet"]
    assert base == "its base h200-x1-calibrated: " + by["h200-x1-calibrated"]
    n = len(by) - 2
    assert others.startswith(f"{n} other profiles (h100-x1-datasheet-exposed, h100-x1-datasheet-latency, ")
    assert "h200-x2-calibrated" in others
    assert "reg65-h100-h5120-latency" not in line and "reg5-llama8b-1gpu" not in line  # the others' not named
    # the others' summary pools their runs: as many as their per-profile texts count
    runs = sum(int(t.split(" measured runs")[0].rsplit(" ", 1)[1]) for p, t in by.items()
               if p not in ("h100-x1-datasheet", "h200-x1-calibrated"))
    assert f"over {runs} measured runs" in others
    # a deeper lineage (a made-up base for h200-x1-calibrated): each base named by its depth
    import types

    from ctasim import profiles

    fake = dict(profiles.DERIVED, **{"h200-x1-calibrated": types.SimpleNamespace(base="h200-x2-calibrated")})
    monkeypatch.setattr(profiles, "DERIVED", fake)
    assert A.lineage("h100-x1-datasheet") == ["h100-x1-datasheet", "h200-x1-calibrated", "h200-x2-calibrated"]
    (line,) = [l for l in A.trust(load_hardware("h100-x1-datasheet"), ["sequential"]) if l.startswith("sequential:")]
    assert "; its base h200-x1-calibrated: " in line and "; its base's base h200-x2-calibrated: " in line
    monkeypatch.undo()
    # a calibration's profile follows its --base: ctahw calibrate --base h100-x1-datasheet (plan 69's own profile)
    import dataclasses

    own = dataclasses.replace(load_hardware("h100-x1-datasheet"), name="h100-x1-own", measured=True,
                              calibrated_from="h100-x1-datasheet")
    assert A.lineage(own.name, own.calibrated_from) == ["h100-x1-own", "h100-x1-datasheet", "h200-x1-calibrated"]
    (line,) = [l for l in A.trust(own, ["sequential"]) if l.startswith("sequential:")]
    assert line.startswith("sequential: registered model: none of this profile's own; its base h100-x1-datasheet: ")
    assert "; its base's base h200-x1-calibrated: " in line
    # a measured profile with no base: itself first
    (line,) = [l for l in A.trust(load_hardware("h200-x2-calibrated"), ["sequential"]) if l.startswith("sequential:")]
    assert line.startswith("sequential: registered model: this profile h200-x2-calibrated: ")
    assert line.count("; ") == 1


def test_advise_says_what_the_operands_and_the_machine_leave_out(tmp_path):
    """Where a layer reads a GeLU's, SiLU's or SwiGLU's output: that GEMM's K and registered plan 36's factors from its
    committed tables; a ReLU's output (modelled) gets no such line; the machines' spread from machine-spread; an
    installation without the tables says neither."""
    from ctasim import advise as A
    from ctasim.spec import load_model

    (ops, machine) = A.operand_lines(load_model("llama3.1-8b"))
    assert "GEMM at K = 14336 reads an activation's output" in ops  # SwiGLU: the down GEMM reads N/2 = 14336 columns
    assert "0.923x at K = 4096, 0.969x at K = 8192, 0.979x at K = 14336, 1.007x at K = 28672" in ops
    assert "plans 43 and 44 timed 0.987-1.003x at 30 shapes (K = 4096-28672) on 4 other H200s" in ops
    assert machine.startswith("machine: 31 lent H200s") and "7.1% apart" in machine
    relu = [l for l in A.operand_lines(load_model("opt-13b")) if l.startswith("operands")]
    assert relu == []
    assert A.operand_lines(load_model("llama3.1-8b"), results_dir=tmp_path) == []


def test_advise_says_where_a_pipelined_producer_loses_its_reuse_and_that_runs_differ_there(tmp_path):
    """Where a CTA-pipelined strategy is priced on two or more GPUs, registered plans 13, 14 and 83's producer alone by
    H (its mean tile time over the no-miss one, from their committed tables), plan 84's runs on another H100 and the
    widest spread of runs at the edge; nothing
    without one (a one-GPU profile's table: its chain kernel is another kernel), nor where an installation has none of
    the tables; a table gone leaves its plan out."""
    import shutil

    from ctasim import advise as A

    (line,) = A.producer_edge_lines(["sequential", "microbatch", "ctapipe", "tp"])
    assert "H200s (plans 13, 14, one GPU each) 10240 1.07x, 11264 1.31x, 12288 1.32-1.35x" in line
    assert ("H100s (plans 83, 85, 86, 88, one GPU each) 6144 1.10x, 6656 1.14x, 7168 1.10x, 7680 1.18x, 8192 1.15x, "
            "8448 1.15x, 9216 1.49-1.72x, 10240 2.02-2.06x, 11264 2.07-2.08x, 12288 2.08x, 13312 2.09x, 14336 2.08x, "
            "15360 2.11x") in line
    assert ("another H100 (plan 84, each run's late mainloop over its early one) 8704 1.86-1.97x, 9216 1.08-2.02x, "
            "9728 1.98-2.09x") in line
    assert "runs of one case took 4.91-7.19 ms (H = 9216, M = 16384, one H100), and the edge's H differs" in line
    assert A.producer_edge_lines(["sequential", "ctapipe"]) == A.producer_edge_lines(["hybrid"])
    assert A.producer_edge_lines(["sequential"]) == []
    from ctasim.spec import load_hardware, load_model

    model = load_model("llama3.1-8b")
    for name, quoted in (("h200-x1-calibrated", False), ("h200-x2-calibrated", True)):
        hw = load_hardware(name)
        assert ("runs of one case took" in A.markdown(model, hw, A.advise(model, hw, (4096,)), "burst")) == quoted
    # the one-GPU chain kernel is a ctapipe strategy too, but another kernel: a table with it alone gets no line
    hw = load_hardware("h200-x1-calibrated")
    df = A.advise(model, hw, (4096,))
    chain = df.assign(strategy="ctapipe-1gpu", kind="ctapipe", gpus=1, latency_us=df["latency_us"] * 0.9)
    assert "runs of one case took" not in A.markdown(model, hw, pd.concat([df, chain], ignore_index=True), "burst")
    assert A.producer_edge_lines(["ctapipe"], results_dir=tmp_path) == []
    root = A._results_root(None)
    for folder in ("validation-registered13", "validation-registered83", A.EDGE_RUNS[0]):
        shutil.copytree(root / folder, tmp_path / folder)
    (line,) = A.producer_edge_lines(["ctapipe"], results_dir=tmp_path)
    assert "an H200 (plan 13) 12288 1.32-1.35x; an H100 (plan 83)" in line and "10240 1.07x" not in line
    # one H100's call alone: its own runs' spread, and no word of a second unit
    assert "took 4.73-6.46 ms (H = 9216, M = 16384, one H100): near it" in line and "another" not in line
    alone = tmp_path / "84"
    shutil.copytree(root / "validation-registered84", alone / "validation-registered84")
    (line,) = A.producer_edge_lines(["ctapipe"], results_dir=alone)
    assert "as registered plans measured it: an H100 (plan 84, each run's late" in line and "differs" not in line


def test_advise_says_where_the_machine_decides_the_long_k_error(tmp_path):
    """A block with a GEMM at K >= 20480 (llama3.1-70b's down GEMM, K = 28672) gets registered plans 45 and 46's errors
    from their committed tables (six machines); a block without one (llama3.1-8b, K <= 14336) and an installation
    without the tables get nothing."""
    from ctasim import advise as A
    from ctasim.spec import load_model

    (line,) = A.long_k_lines(load_model("llama3.1-70b"))
    assert line.startswith("long K: this block's GEMM at K = 28672 is where the machine decides the model's error")
    assert "K = 28672-53248 on 6 H200s, the model's time -2.7 to +6.1% from the measured" in line
    assert "over it on all but the slowest machine" in line
    assert "the naive FLOPs line's -8.9 to +0.8%" in line
    assert A.long_k_lines(load_model("llama3.1-8b")) == []
    assert A.long_k_lines(load_model("llama3.1-70b"), results_dir=tmp_path) == []


def test_advise_on_an_h100_says_which_drift_law_prices_long_k(tmp_path):
    """On an H100 profile that prices the drift, a block with K >= 20480 gets registered plans 72-73's errors of both
    drift laws (three H100s) and the law the profile prices by: the absolute one in h100-x1-datasheet (plan 73's
    adoption), the tile one in h100-x8-mechanism; an H200 profile, an H100 profile without the drift, a block
    without long K and an installation without the tables get nothing."""
    from ctasim import advise as A
    from ctasim.spec import load_hardware, load_model

    m70 = load_model("llama3.1-70b")
    (one,) = A.h100_drift_lines(m70, load_hardware("h100-x1-datasheet"))
    (eight,) = A.h100_drift_lines(m70, load_hardware("h100-x8-mechanism"))
    for line in (one, eight):
        assert "on 3 H100s: the drift charged as tile times at every K (the tile law) +3.4 to +21.4%" in line
        assert "(the absolute law) +0.5 to +3.1%" in line
    assert ("h100-x1-datasheet prices it by the absolute law, capped at the tile law below K = 8192 (registered plan "
            "98's adoption)") in one
    assert "h100-x8-mechanism prices it by the tile law" in eight
    assert A.h100_drift_lines(m70, load_hardware("h200-x8-mechanism")) == []
    assert A.h100_drift_lines(m70, load_hardware("h100-x8")) == []
    assert A.h100_drift_lines(load_model("llama3.1-8b"), load_hardware("h100-x1-datasheet")) == []
    assert A.h100_drift_lines(m70, load_hardware("h100-x1-datasheet"), results_dir=tmp_path) == []


def test_advise_says_what_a_machines_own_calibration_gave(tmp_path):
    """Registered plans 47 and 48's errors from their committed tables (two machines each): the own profile's MAPE
    range beside the committed profile's, and how to calibrate; an installation without the tables gets nothing."""
    from ctasim import advise as A

    (line,) = A.own_profile_lines()
    assert "ran `ctahw calibrate` on 2 H200s" in line
    assert "at MAPE 1.00-1.42% (worst +3.9%) where the committed profile was at 2.01-3.49% (worst +6.6%)" in line
    assert "plan 48, on 2 more," in line and "at 1.65-1.68% (worst -7.8%) against 1.56-2.87% (worst -6.1%)" in line
    assert "--hardware NAME" in line
    assert A.own_profile_lines(results_dir=tmp_path) == []


def test_advise_on_an_h100_says_what_its_own_calibration_gave(tmp_path):
    """Registered plan 69's committed tables (one H100): the own profile's GEMM and chain MAPE beside the datasheet
    profile's and its worst case; an installation without them gets nothing."""
    from ctasim import advise as A
    from ctasim.spec import load_hardware

    (line,) = A.own_profile_lines(gpu=load_hardware("h100-x8").gpu)
    assert "ran `ctahw calibrate --base h100-x1-datasheet` on one H100" in line
    assert "11 GEMMs with that machine's own profile at MAPE 1.78% against h100-x1-datasheet's 1.70%" in line
    assert ("20 chain-kernel and sequential cases at 2.67 against 2.98% (worst -10.2%, intragpu-row, against -8.7%, "
            "intragpu-row)") in line
    assert "h100-x1-datasheet stays the profile for one H100" in line and "H200s" not in line
    assert A.own_profile_lines(results_dir=tmp_path, gpu="H100") == []


def test_advise_on_a_gpu_no_plan_calibrated_says_so_and_quotes_no_h200_figures():
    """A B200 profile gets no calibration figures of another GPU, and the line names the arch ctahw builds for."""
    from ctahw.build import ARCH
    from ctasim import advise as A
    from ctasim.spec import load_hardware

    for name in ("b200-x8", "gb200-nvl72"):
        (line,) = A.own_profile_lines(gpu=load_hardware(name).gpu)
        assert "no registered plan has calibrated a B200" in line and "H200s and H100s only" in line
        assert ARCH.replace("_", "") in line.replace("_", "") and "MAPE" not in line
    assert "H200s differ" in A.own_profile_lines(gpu="H200")[0]


def test_advise_on_an_h100_takes_the_worst_by_size_and_the_verdict_from_the_claims(tmp_path):
    import shutil

    from ctasim import advise as A

    d = tmp_path / A.OWN_H100_PLAN
    shutil.copytree(A._results_root(None) / A.OWN_H100_PLAN, d)
    c = pd.read_csv(d / "cases.csv")
    c.loc[(c["source"] == "own") & (c["strategy"] == "sequential"), "error_pct"] = 12.5  # a positive worst
    c.to_csv(d / "cases.csv", index=False)
    (line,) = A.own_profile_lines(results_dir=tmp_path, gpu="H100")
    assert "(worst +12.5%, sequential, against" in line and "stays the profile" in line
    cl = pd.read_csv(d / "claims.csv")
    cl["met"] = True
    cl.to_csv(d / "claims.csv", index=False)
    (line,) = A.own_profile_lines(results_dir=tmp_path, gpu="H100")
    assert "on an H100, calibrate first" in line


def test_advise_on_an_h100_machine_prints_plan_69s_line(capsys):
    assert main(["advise", "--model", "llama3.1-8b", "--hardware", "h100-x8", "--tokens", "1024"]) == 0
    out = capsys.readouterr().out
    assert "registered plan 69 ran" in out and "registered plan 47" not in out


def test_advise_quotes_the_pooled_registered_record_per_kind(tmp_path):
    """Each kind the record holds gets one line of its pooled figures, read from the committed record.csv; a kind it
    lacks gets none, nor does an installation without the record."""
    import shutil

    from ctasim import advise as A
    from ctasim.spec import load_hardware

    hw = load_hardware("h200-x1-calibrated")
    rec = pd.read_csv(SPECS_DIR.parent / "bench/results" / A.RECORD).set_index(["kind", "source"])
    lines = A.trust(hw, ["sequential", "tp"])
    (line,) = [l for l in lines if l.startswith("sequential (every registration measured on lent H200s pooled")]
    m = rec.loc[("sequential", "model")]
    assert f"model MAPE {m['mape_pct']:.2f}% over {int(m['cases'])} measured cases" in line
    assert f"the naive FLOPs line {rec.loc[('sequential', 'naive'), 'mape_pct']:.2f}%" in line
    assert "(bench/results/registered-record, " in line
    assert not [l for l in lines if l.startswith("tp (every registration")]
    # an H100 profile is quoted with the H100 calls' record, whose figures differ from the H200s'
    h100 = pd.read_csv(SPECS_DIR.parent / "bench/results" / A.RECORDS["H100"]).set_index(["kind", "source"])
    assert h100.loc[("sequential", "model"), "cases"] != m["cases"]
    (line,) = [l for l in A.trust(load_hardware("h100-x1-datasheet"), ["sequential"])
               if l.startswith("sequential (every registration measured on lent H100s pooled")]
    m = h100.loc[("sequential", "model")]
    assert f"model MAPE {m['mape_pct']:.2f}% over {int(m['cases'])} measured cases" in line
    assert "(bench/results/registered-record-h100, " in line
    empty = tmp_path / "results" / "validation-registered8" / "reg8-yi-34b-1gpu"
    empty.mkdir(parents=True)
    shutil.copy(SPECS_DIR.parent / "bench/results/validation-registered8/reg8-yi-34b-1gpu/summary.csv", empty)
    assert not [l for l in A.trust(hw, ["sequential"], tmp_path / "results") if "pooled" in l]


def test_advise_keeps_the_fastest_ctapipe_design_per_token_count():
    """Each ctapipe design is a strategy of its own; the table keeps one ctapipe row per token count, the fastest, and
    names the design (a made-up frame: the slower default and a faster variant at 1024, the default alone faster at
    2048)."""
    from ctasim import advise as A

    df = pd.DataFrame([
        (1024, "sequential", "sequential", 1, "", 100.0), (1024, "ctapipe", "ctapipe", 2, "x", 90.0),
        (1024, A.DESIGN + "cutlass_ctapipe_w21g4", "ctapipe", 2, "y", 80.0),
        (1024, A.DESIGN + "cutlass_ctapipe_c21", "ctapipe", 2, "z", 85.0),
        (2048, "sequential", "sequential", 1, "", 200.0), (2048, "ctapipe", "ctapipe", 2, "x", 150.0),
        (2048, A.DESIGN + "cutlass_ctapipe_w21g4", "ctapipe", 2, "y", 160.0),
        (2048, "ctapipe-ring", "ctapipe", 2, "r", 170.0)],
        columns=["tokens", "strategy", "kind", "gpus", "variant", "latency_us"])
    got = A.fastest_design(df)
    cp = got[got["strategy"] == "ctapipe"].set_index("tokens")
    assert cp["latency_us"].to_dict() == {1024: 80.0, 2048: 150.0}
    assert cp["variant"].to_dict() == {1024: "cutlass_ctapipe_w21g4", 2048: A.DEFAULT_DESIGN}
    assert len(got) == 5 and not got["strategy"].str.startswith(A.DESIGN).any()
    assert "ctapipe-ring" in set(got["strategy"])  # the ring is a strategy of its own, never folded in
    best = A.best_table(got).set_index("tokens")
    assert best.loc[1024, "ctapipe_2gpu"] == "cutlass_ctapipe_w21g4" and best.loc[2048, "ctapipe_2gpu"] == "ctapipe"


def test_advise_tries_every_design_the_profile_models():
    """The mechanism profile models every ctahw variant with a kernel config (one family config); a datasheet profile
    none, so ctapipe there is the default design alone; on a gated 70B block the row-order default loses to a grouped
    variant (the weights re-read once per row-block), and advise reports the variant's time."""
    from ctasim import advise as A
    from ctasim.spec import Strategy, load_hardware, load_model
    from ctasim.variants import VARIANTS

    model = load_model("llama3.1-70b")
    mech, sheet = load_hardware("h200-x8-mechanism"), load_hardware("h100-x8")
    assert A.designs_tried(model, mech, [1024])[1:] == list(A.ctapipe_designs())
    assert all(VARIANTS[v].kernels and not v.endswith("_trace") for v in A.ctapipe_designs())
    assert A.designs_tried(model, sheet, [1024]) == [A.DEFAULT_DESIGN]
    assert not any(k.startswith(A.DESIGN) for k in A.dropped(model, sheet, [1024]))
    df = A.advise(model, mech, [1024], gpus=2)
    cp = df[df["strategy"] == "ctapipe"]
    assert len(cp) == 1 and cp["variant"].iloc[0] != A.DEFAULT_DESIGN
    exp = A.experiment(model, mech, [1024], 2)
    from ctasim.cases import expand
    from ctasim.run import run_strategy

    case = next(iter(expand(exp)))
    default = run_strategy(Strategy("ctapipe"), case, mech, check=False).trace.makespan_ns / 1e3
    won = run_strategy(Strategy("ctapipe", variant=cp["variant"].iloc[0]), case, mech, check=False)
    assert cp["latency_us"].iloc[0] == won.trace.makespan_ns / 1e3 < 0.9 * default


def test_advise_on_an_h100_says_what_plans_74_to_76_measured_of_its_blocks(tmp_path):
    """On an H100 profile, registered plans 74's, 75's and 76's five H100 calls from their committed tables, sequential
    and groups of 8 and 4 only: the datasheet profile's error range as registered and MAPE, and
    on plans 75's and 76's cases that profile's, its twin's and the H200s' measured times'; what the profile itself
    charges (the adopted rate, or the datasheet's on the pin before it and on the 8-GPU profile); an H200 profile and
    an installation without the tables get nothing; a table whose model is fast somewhere is not called slow, and plan
    74's table alone names neither plan 75 nor the twin."""
    import pandas as pd

    from ctasim import advise as A
    from ctasim.spec import load_hardware

    (one,) = A.h100_block_lines(load_hardware("h100-x1-datasheet"))
    assert "registered plans 74, 75 and 76 timed" in one and "in 5 calls on H100s" in one
    assert ("h100-x1-datasheet as registered (before plan 76's adoption) priced -1.4 to +7.3% from the measured (MAPE "
            "3.2% over 107 cases)") in one and "every case slow" not in one  # plan 76's second H100: -1.4%
    assert ("on plans 75 and 76's 67 of them that profile 3.0%, its twin h100-x1-datasheet-exposed (the exposed HBM "
            "share charged at the H200's rate) 1.2%, the H200s' measured times 1.6%") in one
    assert "h100-x1-datasheet charges the exposed HBM share at the H200's rate (since registered plan 76's" in one
    (before,) = A.h100_block_lines(load_hardware("h100-x1-datasheet-hbm3"))
    assert "h100-x1-datasheet-hbm3 charges the datasheet's rate there" in before
    (eight,) = A.h100_block_lines(load_hardware("h100-x8-mechanism"))
    assert ("h100-x8-mechanism charges the exposed HBM share at the H200's rate (since registered plan 87's adoption, "
            "judged on the producers alone") in eight
    from ctasim.profiles import before_h100_x8_exposed

    (eight_before,) = A.h100_block_lines(before_h100_x8_exposed("h100-x8-mechanism"))
    assert "h100-x8-mechanism charges the datasheet's rate there" in eight_before
    import dataclasses

    own = dataclasses.replace(load_hardware("h100-x1-datasheet"), name="h100-x1-own", measured=True,
                              l2_hbm_exposed_gbps=0.0)  # as ctahw calibrate writes it with the memory hierarchy
    (mine,) = A.h100_block_lines(own)
    assert "h100-x1-own charges the exposed share at its own measured HBM rate" in mine and "datasheet's" not in mine
    (latency,) = A.h100_block_lines(load_hardware("h100-x1-datasheet-latency"))
    assert "charges the datasheet's rate" not in latency and "as h100-x1-datasheet does since registered" in latency
    assert A.h100_block_lines(load_hardware("h200-x8-mechanism")) == []
    assert A.h100_block_lines(load_hardware("h100-x1-datasheet"), results_dir=tmp_path) == []
    c = pd.read_csv(A._results_root(None) / A.H100_BLOCK_PLANS[0] / "cases.csv")
    c.loc[c.index[(c["source"] == "model") & (c["strategy"] == "sequential")][0], "error_pct"] = -3.0
    (tmp_path / A.H100_BLOCK_PLANS[0]).mkdir()
    c.to_csv(tmp_path / A.H100_BLOCK_PLANS[0] / "cases.csv", index=False)
    (line,) = A.h100_block_lines(load_hardware("h100-x1-datasheet"), results_dir=tmp_path)
    assert "registered plan 74 timed" in line and "in 1 call on H100s: h100-x1-datasheet as registered" in line
    assert "-3.0 to" in line and "every case slow" not in line and "plan 75" not in line and "exposed-" not in line


def test_kept_reuse_zeroes_only_the_one_cta_per_tile_grids_spread():
    """The kept level changes the ticket spread of the ``ctapipe`` kernel configs alone (the chain kernel's tickets and
    every other field as they are); a profile without such a config has no kept level."""
    from ctasim import advise as A
    from ctasim.spec import load_hardware

    calibrated = load_hardware("h200-x2-calibrated")
    assert A.kept_reuse(calibrated) is None
    hw = load_hardware("h100-x8-mechanism")
    kept = A.kept_reuse(hw)
    assert any(a.kernel == "" and a.ticket_spread > 0 for a in hw.kernel_configs)  # the chain kernel's: kept as is
    for a, b in zip(hw.kernel_configs, kept.kernel_configs):
        if a.kernel == "ctapipe" and a.ticket_spread > 0:
            assert b.ticket_spread == 0.0 and dataclasses.replace(b, ticket_spread=a.ticket_spread) == a
        else:
            assert b == a
    assert dataclasses.replace(kept, kernel_configs=hw.kernel_configs) == hw
    # a variant's own config of the family (ctapipe-2x1) with a spread is one of those grids too
    i = next(i for i, c in enumerate(calibrated.kernel_configs) if c.kernel == "ctapipe-2x1")
    configs = list(calibrated.kernel_configs)
    configs[i] = dataclasses.replace(configs[i], ticket_spread=0.05)
    kept = A.kept_reuse(dataclasses.replace(calibrated, kernel_configs=tuple(configs)))
    assert kept.kernel_configs[i].ticket_spread == 0.0 and kept.kernel_configs[:i] == calibrated.kernel_configs[:i]


def test_advise_prices_the_pipelined_strategies_at_the_kept_level_too(tmp_path):
    """On a profile whose one-CTA-per-tile grids have a ticket spread, each CTA-pipelined row on two GPUs has a kept
    latency (its fastest design again, never slower than as priced by more than the event noise), the others none."""
    from ctasim import advise as A
    from ctasim.spec import load_hardware, load_model

    df = A.advise(load_model("llama3.1-8b"), load_hardware("h100-x8-mechanism"), (4096,), gpus=2)
    pipe = df["kind"] == "ctapipe"
    assert pipe.sum() == 1 and df.loc[pipe, "kept_us"].notna().all() and df.loc[~pipe, "kept_us"].isna().all()
    assert (df.loc[pipe, "kept_us"] <= df.loc[pipe, "latency_us"] * 1.001).all()
    assert df.loc[pipe, "kept_variant"].str.startswith("cutlass_ctapipe").all()
    model, plain_hw = load_model("llama3.1-8b"), load_hardware("h200-x2-calibrated")
    said = "* with the one-CTA-per-tile grids of ctahw's variants (producers and consumers) keeping their weights' L2"
    assert said in A.markdown(model, load_hardware("h100-x8-mechanism"), df, "burst")
    plain = A.advise(model, plain_hw, (4096,))
    assert plain["kept_us"].isna().all() and said not in A.markdown(model, plain_hw, plain, "burst")
    # the committed 2xH200 traces' place in the range, where the installation has the table
    (line,) = A.kept_lines(df)
    assert line.endswith("lay inside that range on h200-x2-mechanism in 31 of 32 traces, from -0.01 to 0.82 of the way "
                         "from the kept level to the profile's")
    assert "post-hoc" not in A.kept_lines(df, results_dir=tmp_path)[0]


def test_kept_lines_say_whether_the_answer_moves_between_the_two_ends(tmp_path):
    """The line names the largest move and, per token count, a fastest strategy or a CTA-pipelined verdict that
    changes between the profile's level and the kept one; "the same" only where neither does."""
    from ctasim import advise as A

    rows = [(1024, "tp2", "tp", 2, "tp_degree=2", 100.0, float("nan"), ""),
            (1024, "ctapipe", "ctapipe", 2, "cutlass_ctapipe_w21g8", 110.0, 109.0, "cutlass_ctapipe_w21g8"),
            (4096, "tp2", "tp", 2, "tp_degree=2", 400.0, float("nan"), ""),
            (4096, "ctapipe", "ctapipe", 2, "cutlass_ctapipe_w21g8", 420.0, 380.0, "cutlass_ctapipe")]
    df = pd.DataFrame(rows, columns=["tokens", "strategy", "kind", "gpus", "variant", "latency_us", "kept_us",
                                     "kept_variant"])
    (line,) = A.kept_lines(df, tmp_path)
    assert "moves by -9.5 to -0.9% (the most: cutlass_ctapipe_w21g8 (kept: cutlass_ctapipe) at 4096 tokens)" in line
    assert line.endswith("the answer changes between the two ends: 4096 tokens the fastest tp2 -> ctapipe")
    at = (df["tokens"] == 4096) & (df["strategy"] == "ctapipe")
    (line,) = A.kept_lines(results_dir=tmp_path, df=df.assign(kept_us=df["kept_us"].mask(at, 419.0)))
    assert line.endswith("the fastest strategy and the CTA-pipelined verdict are the same at every token count either "
                         "way")
    # the most is the largest move either way; one figure where they agree
    (line,) = A.kept_lines(results_dir=tmp_path, df=df.assign(kept_us=df["kept_us"].mask(at, 423.0)))
    assert "moves by -0.9 to +0.7% (the most: cutlass_ctapipe_w21g8 at 1024 tokens)" in line
    (line,) = A.kept_lines(results_dir=tmp_path, df=df.assign(kept_us=df["latency_us"].where(df["kept_us"].notna())))
    assert "moves by +0.0% (the most" in line
    assert A.kept_lines(results_dir=tmp_path, df=df.drop(columns=["kept_us", "kept_variant"])) == []


def test_advise_quotes_plans_85_and_86s_grouped_producers_from_the_committed_tables(tmp_path):
    """Where a CTA-pipelined strategy runs on two or more GPUs: plans 85, 86 and 88's grouped producers' ratios and the
    profile's and the flat predictor's errors, read from the committed cases.csv (a changed table changes the line, a
    run over 1.15 says some runs lost reuse; one table, one plan; no table, no line)."""
    import shutil

    from ctasim import advise as A

    (line,) = A.grouped_kept_lines(["sequential", "ctapipe"])
    assert "registered plans 85, 86 and 88 ran the grouped producers" in line and "alone on three H100s" in line
    assert "every traced run kept its weights' L2 reuse (late-over-early mainloop 0.99-1.02 at H = 9216-12288, " \
           "0.98-1.03 at H = 6144-14336, 0.98-1.03 at H = 6656-15360)" in line
    assert "+2.2 to +5.0%, +0.8 to +6.3% and +0.6 to +5.4% off the measured" in line
    assert "mean |error| 3.7%, 3.4% and 3.2%, the flat predictor's, no memory hierarchy, 1.5%, 1.9% and 1.9%" in line
    assert "the mechanism profile as registered (h100-x8-mechanism) priced" in line
    assert ("since registered plan 87's adoption the profile charges the exposed HBM share at the H200's rate, which "
            "at its lockstep level priced them at M = 32768 on another H100 0.61% off (mean |error|)") in line
    assert A.grouped_kept_lines(["sequential", "tp"]) == [] and A.grouped_kept_lines(["hybrid"]) == [line]
    assert A.grouped_kept_lines(["ctapipe"], results_dir=tmp_path) == []
    folder = A.GROUPED_KEPT[0]
    shutil.copytree(A._results_root(None) / folder, tmp_path / folder)
    (one,) = A.grouped_kept_lines(["ctapipe"], results_dir=tmp_path)
    assert "registered plan 85 ran" in one and "on an H100" in one and "+2.2 to +5.0% off" in one
    assert "plan 87" not in one  # its table not in this installation
    shutil.copytree(A._results_root(None) / A.GROUPED_ADOPTED, tmp_path / A.GROUPED_ADOPTED)
    claims = pd.read_csv(tmp_path / A.GROUPED_ADOPTED / "claims.csv")
    claims.loc[claims.claim == "adopt", "value"] = "no"
    claims.to_csv(tmp_path / A.GROUPED_ADOPTED / "claims.csv", index=False)
    assert "plan 87" not in A.grouped_kept_lines(["ctapipe"], results_dir=tmp_path)[0]  # not adopted: no word of it
    d = pd.read_csv(tmp_path / folder / "cases.csv")
    at = d.variant.isin(A.GROUPED_PRODUCERS) & (d.predictor == "profile")
    d.loc[at, "mean_err_pct"] = -d.loc[at, "mean_err_pct"]
    d.loc[at, "ratio_max"] = 1.15
    d.to_csv(tmp_path / folder / "cases.csv", index=False)
    (moved,) = A.grouped_kept_lines(["ctapipe"], results_dir=tmp_path)
    assert "-5.0 to -2.2% off the measured" in moved and "mainloop 0.99-1.15" in moved
    assert "some traced runs lost part of their weights' L2 reuse" in moved


def test_advise_reads_the_row_order_producer_from_a_judged_cases_table(tmp_path):
    """Plans 85 and 86's cases.csv (one row per predictor): the row-order producer's measured mean over its lockstep
    prediction; another predictor's rows do not enter."""
    import shutil

    from ctasim import advise as A

    root = A._results_root(None)
    shutil.copytree(root / "validation-registered86", tmp_path / "validation-registered86")
    (line,) = A.producer_edge_lines(["ctapipe"], results_dir=tmp_path)
    assert "an H100 (plan 86) 6144 1.10x, 7168 1.10x, 13312 2.09x, 14336 2.08x" in line
    f = tmp_path / "validation-registered86" / "cases.csv"
    d = pd.read_csv(f)
    d.loc[(d.variant == A.EDGE_PRODUCER) & (d.predictor == "profile"), "predicted_us"] = 1.0
    d.to_csv(f, index=False)
    assert A.producer_edge_lines(["ctapipe"], results_dir=tmp_path) == [line]
    d.loc[(d.variant == A.EDGE_PRODUCER) & (d.predictor == "lockstep") & (d.h == 6144), "predicted_us"] /= 2
    d.to_csv(f, index=False)
    assert "6144 2.21x" in A.producer_edge_lines(["ctapipe"], results_dir=tmp_path)[0]


def test_advise_says_what_plans_89_and_90_found_of_the_producer_alone(tmp_path):
    """Where a pipelined strategy is priced: plan 89's figures of the model as it now is (read from its claims.csv and
    cases.csv), plan 90's first waves by cluster and plan 92's at the L2-to-SM rate (their cases.csv); a changed table
    changes the line, no table no
    line, other strategies none."""
    import shutil

    from ctasim import advise as A

    line89, line90, line92, line95 = A.alone_record_lines(["sequential", "ctapipe"])
    assert ("with the model as it now is at 2.43% mean |error|, worst +5.96% (issue 13's 3% and 6% met), the flat "
            "predictor with no memory hierarchy at 2.45%; row order at 11.97%, its partial loss of reuse at H = 5632 "
            "and 7424 (1.13 and 1.24x the no-miss level)") in line89
    assert ("ran its first wave 9.4% over a 2x1 cluster's and 5.6% over a 1x2 cluster's at H = 5632" in line90
            and "within 2.0% of them where the first wave is bound by HBM" in line90)
    assert ("priced the 1x1 producer's first wave +11.6%, +3.0% and -0.9% off at 15, 23 and 31 tiles a row, where it "
            "binds (the model, which has no such rate: +4.4%, -5.5% and -8.6%); at 11, 13 and 15 tiles a row that "
            "wave ran as fast as a 2x1 cluster's") in line92
    assert ("registered plan 93 (another H100, 25-37 tiles a row) priced that wave 3.7% off at the rate against the "
            "model's 13.4% (mean |error|, mainloop against mainloop") in line92
    assert ("registered plan 95 (an H100, K != N): that 1x1 first wave ran 1.13-1.20x the 2x1 pairs' at 32-40 tiles a "
            "row with W at 26 MB, 1.00x at 12 tiles a row with W at 101 MB: its excess follows the tiles a row, not "
            "W's fit in the L2; and a first wave of K = 1280-1536 ran 19-22% over the model's mainloop even in "
            "pairs (about 2 us of it a cold start") in line95
    assert A.alone_record_lines(["sequential", "tp"]) == []
    assert A.alone_record_lines(["hybrid"]) == [line89, line90, line92, line95]
    assert A.alone_record_lines(["ctapipe"], results_dir=tmp_path) == []
    for folder in A.ALONE_RECORD:
        shutil.copytree(A._results_root(None) / folder, tmp_path / folder)
    d = pd.read_csv(tmp_path / A.ALONE_RECORD[1] / "cases.csv")
    d.loc[(d.h == 5632) & (d.variant == "cutlass_ctapipe_c12"), "measured"] = 1.011
    d.to_csv(tmp_path / A.ALONE_RECORD[1] / "cases.csv", index=False)
    c = pd.read_csv(tmp_path / A.ALONE_RECORD[0] / "cases.csv")
    row = (c.variant == "cutlass_ctapipe") & (c.h == 5632)
    c.loc[row, "measured_us"] = c.loc[row, "measured_us"] * 0.95  # 1.07x: kept, no longer a partial loss
    c.to_csv(tmp_path / A.ALONE_RECORD[0] / "cases.csv", index=False)
    e = pd.read_csv(tmp_path / A.ALONE_RECORD[2] / "cases.csv")
    e.loc[e.n == 15, "row_over"] = 1.05  # an excess at 15 tiles a row: no longer among those that ran as fast
    e.to_csv(tmp_path / A.ALONE_RECORD[2] / "cases.csv", index=False)
    x = pd.read_csv(tmp_path / A.ALONE_RECORD[4] / "excess.csv")
    x.loc[(x.n == 12) & (x.k == 16384), ["row_over", "row_on"]] = 1.08, 1  # an excess at 12 tiles a row, 101 MB
    x.to_csv(tmp_path / A.ALONE_RECORD[4] / "excess.csv", index=False)
    one, two, three, four = A.alone_record_lines(["ctapipe"], results_dir=tmp_path)
    assert "1.08x at 12 tiles a row with W at 101 MB: neither the tiles a row nor W's fit in the L2 alone" in four
    assert "and 1.1% over a 1x2 cluster's" in two
    assert "its partial loss of reuse at H = 7424 (1.24x the no-miss level)" in one
    assert "at 11 and 13 tiles a row that wave ran as fast" in three
    (tmp_path / A.ALONE_RECORD[1] / "cases.csv").unlink()
    assert "registered plan 93" in three
    (tmp_path / A.ALONE_RECORD[3] / "cases.csv").unlink()
    assert "registered plan 93" not in A.alone_record_lines(["ctapipe"], results_dir=tmp_path)[-1]
    (tmp_path / A.ALONE_RECORD[2] / "cases.csv").unlink()
    assert A.alone_record_lines(["ctapipe"], results_dir=tmp_path) == [one, four]
    (tmp_path / A.ALONE_RECORD[4] / "excess.csv").unlink()
    assert A.alone_record_lines(["ctapipe"], results_dir=tmp_path) == [one]


def test_advise_says_under_where_the_1x1_first_wave_ran_shorter(tmp_path):
    import shutil

    from ctasim import advise as A

    folder = A.ALONE_RECORD[1]
    shutil.copytree(A._results_root(None) / folder, tmp_path / folder)
    d = pd.read_csv(tmp_path / folder / "cases.csv")
    d.loc[(d.h == 5632) & (d.variant == "cutlass_ctapipe_c12"), "measured"] = 0.98
    d.to_csv(tmp_path / folder / "cases.csv", index=False)
    (line,) = A.alone_record_lines(["ctapipe"], results_dir=tmp_path)
    assert "9.4% over a 2x1 cluster's and 2.0% under a 1x2 cluster's" in line


def test_advise_says_what_plans_96_98_and_99_found_for_a_small_model_on_an_h100(tmp_path):
    """A block with a layer's K under 3584 on an H100 profile: plan 96's errors on small models' blocks (its
    cases.csv), plan 98's capped law (its claims.csv) and the drift law the profile charges, and plan 99's errors on
    five more blocks (its cases.csv); nothing for a large model or an H200, a changed table changes the line, a table
    without a source's rows or no table no part."""
    import shutil

    from ctasim import advise as A
    from ctasim.spec import load_hardware, load_model

    small, h100 = load_model("llama3.2-1b"), load_hardware("h100-x1-datasheet")
    (line,) = A.h100_small_lines(small, h100)
    assert ("registered plan 96 timed 4 small models' MLP blocks (a layer's K 1024-3072) on an H100: "
            "h100-x1-datasheet as registered then 2.10% mean |error| (worst +3.70%), the waves predictor 1.44%, the "
            "naive FLOPs line 7.00%") in line
    assert ("at 1.16% mean |error| against 4.05% under the absolute law; h100-x1-datasheet took the capped law; "
            "h100-x1-datasheet charges the drift by the capped law") in line
    assert ("registered plan 99 timed 5 more small models' blocks on an H100, priced by the capped law before any GPU "
            "ran them: 1.00% mean |error| (worst -2.50%), the absolute law 0.97%, the waves predictor 1.44%, the naive "
            "FLOPs line 5.64% (docs/validation.md)") in line
    assert A.h100_small_lines(small, load_hardware("h100-x8")) != [] and "h100-x8 charges no drift" in \
        A.h100_small_lines(small, load_hardware("h100-x8"))[0]
    assert A.h100_small_lines(load_model("llama3.1-8b"), h100) == []
    assert A.h100_small_lines(small, load_hardware("h200-x8")) == []
    assert A.h100_small_lines(small, h100, results_dir=tmp_path) == []
    for folder in A.SMALL_PLANS:
        shutil.copytree(A._results_root(None) / folder, tmp_path / folder)
    a = pd.read_csv(tmp_path / A.SMALL_PLANS[1] / "claims.csv")
    a.loc[a.claim == "adopt", "value"] = "no"
    a.to_csv(tmp_path / A.SMALL_PLANS[1] / "claims.csv", index=False)
    assert "the profile kept its law" in A.h100_small_lines(small, h100, results_dir=tmp_path)[0]
    (tmp_path / A.SMALL_PLANS[0] / "cases.csv").unlink()
    (line,) = A.h100_small_lines(small, h100, results_dir=tmp_path)
    assert "plan 96" not in line and "registered plan 98" in line
    f99 = tmp_path / A.SMALL_PLANS[2] / "cases.csv"
    c = pd.read_csv(f99)
    c.loc[c.source == "absolute", "error_pct"] *= 2
    c.to_csv(f99, index=False)
    assert "the absolute law 1.94%, the waves" in A.h100_small_lines(small, h100, results_dir=tmp_path)[0]
    c[c.source != "absolute"].to_csv(f99, index=False)
    (line,) = A.h100_small_lines(small, h100, results_dir=tmp_path)
    assert "plan 99" not in line and "registered plan 98" in line
    f99.unlink()
    (line,) = A.h100_small_lines(small, h100, results_dir=tmp_path)
    assert "plan 99" not in line and "registered plan 98" in line


def test_advise_quotes_the_h100_record_of_gemms_alone_on_an_h100_profile_with_a_memory_model(tmp_path):
    """An H100 profile that prices the drift gets the H100 record of GEMMs alone (bench/h100_gemm_record.py), its
    figures from the committed table; an H100 profile without the drift, an H200 profile and an installation without
    the table get nothing."""
    import pandas as pd

    from ctasim import advise as A
    from ctasim.spec import load_hardware

    r = pd.read_csv(A._results_root(None) / A.H100_GEMM_RECORD)
    a = r[r.group == "all"].iloc[0]
    for name in ("h100-x1-datasheet", "h100-x8-mechanism"):
        (line,) = A.h100_gemm_lines(load_hardware(name))
        assert (f"over {int(a.shapes)} shapes of 13 registered GEMM-order calls (each at its best measured order) "
                f"h100-x1-datasheet as registered was {a.model_mape_pct:.2f}% off") in line
        assert f"the naive FLOPs line {a.naive_mape_pct:.2f}%, nearer in 8 of 13 calls" in line
    assert A.h100_gemm_lines(load_hardware("h100-x8")) == []
    assert A.h100_gemm_lines(load_hardware("h200-x8-mechanism")) == []
    assert A.h100_gemm_lines(load_hardware("h100-x1-datasheet"), results_dir=tmp_path) == []
