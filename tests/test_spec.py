"""Spec loading and validation: every shipped spec loads; bad specs name file, field and problem."""

from __future__ import annotations

import re
import textwrap

import pytest

from ctasim.cases import load_experiment
from ctasim.spec import SPECS_DIR, SpecError, list_specs, load_hardware, load_workload
from ctasim.cli import main


def test_every_shipped_spec_loads():
    specs = list_specs()
    assert {"default", "fig4", "fig5", "fig7", "h200x2-sweep"} <= set(specs["experiments"])
    for name in specs["hardware"]:
        hw = load_hardware(name)
        assert hw.gpus >= 1 and hw.kernel_configs
    for name in specs["workloads"]:
        assert load_workload(name).layers
    for name in specs["experiments"]:
        assert load_experiment(name).strategies


def test_profiles_say_whether_they_were_measured():
    assert load_hardware("h200-x2").measured is True
    assert load_hardware("h200-x8").measured is False
    assert load_hardware("b200-x8").measured is False


def test_tile_time_matches_the_measured_gemm():
    # 16384x8192x8192 with 128x256 tiles: 4096 tiles in 32 persistent rounds took 2.90 ms (DEVICE.md).
    cfg = load_hardware("h200-x2").config(128, 256)
    assert 32 * cfg.tile_ns(8192) == pytest.approx(2.90e6, rel=1e-3)


GOOD = """
[experiment]
name = "t"
hardware = "h200-x2"
[experiment.workload]
layers = 2
m = 1024
k = 8192
n = 8192
tile = [128, 256]
[[experiment.strategy]]
kind = "ctapipe"
"""


def write(tmp_path, text):
    p = tmp_path / "exp.toml"
    p.write_text(textwrap.dedent(text))
    return p


def test_good_inline_experiment(tmp_path):
    exp = load_experiment(str(write(tmp_path, GOOD)))
    assert exp.workload.layers[0].m == 1024 and exp.hardware.name == "h200-x2"


@pytest.mark.parametrize(
    "change, field, words",
    [
        (("m = 1024", "m = 1000"), "workload.m", "not divisible by tile_m"),
        (("n = 8192", "n = 8000"), "workload.n", "not divisible by tile_n"),
        (('kind = "ctapipe"', 'kind = "pipedream"'), "kind", "unknown strategy"),
        (("layers = 2", "layers = 3"), "experiment.strategy", "needs 3 GPUs"),
        (("m = 1024", "m = 1024\nmm = 3"), "workload.mm", "unknown field"),
        (("tile = [128, 256]", "tile = [128, 64]"), "tile", "no kernel config 128x64"),
        (('hardware = "h200-x2"', 'hardware = "h900"'), "hardware", "no hardware spec named"),
        (("m = 1024", "m = -128"), "workload.m", "must be >= 1"),
    ],
)
def test_bad_experiment_names_file_field_and_problem(tmp_path, change, field, words):
    p = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(SpecError) as ei:
        load_experiment(str(p))
    msg = str(ei.value)
    assert str(p) in msg or "h900" in msg
    assert field in msg and words in msg


def test_negative_bandwidth_is_rejected(tmp_path):
    text = (SPECS_DIR / "hardware" / "h200-x2.toml").read_text()
    p = tmp_path / "hw.toml"
    p.write_text(text.replace("link_gbps = 370.0", "link_gbps = -370.0"))
    with pytest.raises(SpecError, match=r"hardware\.link_gbps: must be positive"):
        load_hardware(str(p))


def test_not_toml_is_one_clear_error(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[experiment\nname=")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_experiment(str(p))


def test_cli_bad_spec_exits_2_and_writes_nothing(tmp_path, capsys):
    p = write(tmp_path, GOOD.replace("m = 1024", "m = 1000"))
    out = tmp_path / "out"
    rc = main(["run", str(p), "--out", str(out), "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "not divisible by tile_m" in err and str(p) in err
    assert not out.exists()


@pytest.mark.parametrize("value", ["-0.01", "0.5", "0.9"])
def test_tile_cv_outside_its_range_is_rejected(tmp_path, value):
    text = (SPECS_DIR / "hardware" / "h200-x2-calibrated.toml").read_text()
    p = tmp_path / "hw.toml"
    changed, n = re.subn(r"^tile_cv = [0-9.]+", f"tile_cv = {value}", text, count=1, flags=re.M)
    assert n == 1
    p.write_text(changed)
    with pytest.raises(SpecError, match=r"kernel_config\[\d\]\.tile_cv: must be within \[0, 0.5\)"):
        load_hardware(str(p))


def test_tile_cv_inside_its_range_is_accepted(tmp_path):
    text = (SPECS_DIR / "hardware" / "h200-x2-calibrated.toml").read_text()
    p = tmp_path / "hw.toml"
    changed, n = re.subn(r"^tile_cv = [0-9.]+", "tile_cv = 0.4999", text, count=1, flags=re.M)
    assert n == 1
    p.write_text(changed)
    assert load_hardware(str(p)).config(128, 256).tile_cv == 0.4999


def test_swiglu_stores_half_its_columns_and_the_next_layer_reads_them():
    from ctasim.spec import SpecError, workload_from_dict

    base = {"name": "ffn", "dtype": "bf16", "layer": [
        {"m": 1024, "k": 4096, "n": 2 * 14336, "epilogue": ["swiglu"]},
        {"m": 1024, "k": 14336, "n": 4096, "epilogue": ["residual"]}]}
    wl = workload_from_dict(base, "t")
    assert wl.layers[0].out_n == 14336 and wl.layers[0].out_tile_n == 128 and wl.layers[1].out_n == 4096
    bad = dict(base, layer=[dict(base["layer"][0]), dict(base["layer"][1], k=2 * 14336)])
    with pytest.raises(SpecError, match="stored columns 14336"):
        workload_from_dict(bad, "t")
    both = dict(base, layer=[dict(base["layer"][0], epilogue=["swiglu", "residual"]), base["layer"][1]])
    with pytest.raises(SpecError, match="stands alone"):
        workload_from_dict(both, "t")


def test_a_residual_adds_the_input_or_the_residual_stream_of_one_width():
    from ctasim.spec import SpecError, workload_from_dict

    base = {"name": "boundary", "dtype": "bf16", "layer": [
        {"m": 1024, "k": 3584, "n": 1024, "epilogue": ["residual"], "residual_source": "stream", "rowwise": "layernorm"},
        {"m": 1024, "k": 1024, "n": 3584, "epilogue": ["gelu"]}]}
    wl = workload_from_dict(base, "t")
    assert wl.stream_cols == 1024 and wl.layers[0].residual_source == "stream" and wl.layers[1].residual_source == "input"
    assert load_workload("mlp-block").stream_cols == 0 and load_workload("mlp-boundary").stream_cols == 8192
    for change, msg in [(dict(residual_source="carry"), r"residual_source: must be one of \('input', 'stream'\)"),
                        (dict(epilogue=[]), "residual_source: names what a residual op adds")]:
        bad = dict(base, layer=[dict(base["layer"][0], **change), base["layer"][1]])
        with pytest.raises(SpecError, match=msg):
            workload_from_dict(bad, "t")
    two = dict(base, layer=base["layer"] + [{"m": 1024, "k": 3584, "n": 512, "epilogue": ["residual"],
                                             "residual_source": "stream"}])
    with pytest.raises(SpecError, match=r"layer\[2\]\.n: adds the residual stream of 1024 columns to its 512"):
        workload_from_dict(two, "t")


# ------------------------------------------------------------------------------- validation, field by field
# Each check gets one spec broken in that one way next to the same spec that is valid (so that deleting the check,
# or moving its bound by one, fails a test).

def _hw(**changes):
    from ctasim.spec import hardware_from_dict
    from tests.helpers import TINY

    data = dict(TINY, **{k: v for k, v in changes.items() if k != "config"})
    if "config" in changes:
        data["kernel_config"] = [dict(TINY["kernel_config"][0], **changes["config"])]
    return hardware_from_dict(data, "hw.toml")


@pytest.mark.parametrize("field, bad, good, words", [
    ("gpus", 0, 1, "must be >= 1, got 0"),
    ("sm_count", 0, 1, "must be >= 1, got 0"),
    ("topology", "ring", "switch", "must be one of ('direct', 'switch'), got 'ring'"),
    ("hbm_gbps", 0.0, 0.5, "must be positive, got 0.0"),
    ("allreduce_bus_gbps", -1.0, 1.0, "must be positive, got -1.0"),
    ("sm_remote_store_gbps", 0.0, 1.0, "must be positive, got 0.0"),
    ("poll_ns", -0.5, 0.0, "must be >= 0, got -0.5"),
    ("local_signal_ns", -1.0, 0.0, "must be >= 0, got -1.0"),
    ("allreduce_latency_ns", -1.0, 0.0, "must be >= 0, got -1.0"),
    ("max_clock_boost", 0.99, 1.0, "must be >= 1, got 0.99"),
    ("clock_onset_ns", -1.0, 0.0, "must be >= 0, got -1.0"),
    ("clock_sustained_slowdown", 0.99, 1.0, "must be >= 1, got 0.99"),
    ("activation_epilogue_ns_per_element", -0.01, 0.0, "must be >= 0, got -0.01"),
    ("epilogue_pass_gbps", -1.0, 0.0, "must be >= 0, got -1.0"),
    ("rowwise_gbps", -0.5, 0.0, "must be >= 0, got -0.5"),
    ("relu_epilogue_factor", -0.1, 0.0, "must be >= 0, got -0.1"),
    ("relu_input_tile_factor", 0.49, 0.5, "must be within [0.5, 1.5], got 0.49"),
    ("relu_input_tile_factor", 1.51, 1.5, "must be within [0.5, 1.5], got 1.51"),
    ("link_sharing", "lifo", "fair", "must be one of ('fcfs', 'fair'), got 'lifo'"),
    ("epilogue_store_overlap", 1.01, 1.0, "must be within [0, 1], got 1.01"),
    ("epilogue_store_overlap", -0.01, 0.0, "must be within [0, 1], got -0.01"),
    ("l2_hbm_exposed_gbps", -1.0, 0.0, "must be >= 0 (0: hbm_gbps), got -1.0"),
    ("l2_reuse_law", "fifo", "lru", "must be one of lru, survival, got 'fifo'"),
])
def test_each_hardware_bound_is_checked_at_its_edge(field, bad, good, words):
    with pytest.raises(SpecError) as ei:
        _hw(**{field: bad})
    assert str(ei.value) == f"hw.toml: hardware.{field}: {words}"
    assert getattr(_hw(**{field: good}), field) == good


@pytest.mark.parametrize("taken, share, field, words", [
    ([0.0, 0.5], [1.0], "l2_survival_share", "needs one share per l2_survival_taken entry (2), got 1"),
    ([0.1, 0.5], [1.0, 0.5], "l2_survival_taken", "must start at 0 and be strictly ascending"),
    ([0.0, 0.5, 0.5], [1.0, 0.5, 0.2], "l2_survival_taken", "must start at 0 and be strictly ascending"),
    ([0.0, 0.5], [1.0, 1.01], "l2_survival_share", "each must be within [0, 1], and none above the one before"),
    ([0.0, 0.5, 1.0], [1.0, 0.2, 0.3], "l2_survival_share", "each must be within [0, 1], and none above the one before"),
    ([0.0, 0.5], [1.0, -0.01], "l2_survival_share", "each must be within [0, 1], and none above the one before"),
])
def test_the_l2_survival_curve_is_checked(taken, share, field, words):
    with pytest.raises(SpecError) as ei:
        _hw(l2_survival_taken=taken, l2_survival_share=share)
    assert str(ei.value) == f"hw.toml: hardware.{field}: {words}"
    assert _hw(l2_survival_taken=[0.0, 0.5, 1.0], l2_survival_share=[1.0, 0.5, 0.5]).l2_survival_share == (1.0, 0.5, 0.5)


def test_the_survival_ticket_law_needs_the_curve():
    with pytest.raises(SpecError, match=r"ticket_law: 'survival' needs the profile's L2 survival curve"):
        _hw(config={"ticket_law": "survival"})
    assert _hw(config={"ticket_law": "survival"}, l2_survival_taken=[0.0], l2_survival_share=[1.0])


def test_the_survival_reuse_law_needs_the_curve():
    with pytest.raises(SpecError, match=r"hardware\.l2_reuse_law: 'survival' needs the L2 survival curve"):
        _hw(l2_reuse_law="survival")
    assert _hw(l2_reuse_law="survival", l2_survival_taken=[0.0], l2_survival_share=[1.0]).l2_reuse_law == "survival"


def test_fair_sharing_needs_no_store_overlap():
    with pytest.raises(SpecError, match=r"hardware\.link_sharing: 'fair' needs epilogue_store_overlap = 0"):
        _hw(link_sharing="fair", epilogue_store_overlap=0.5)
    assert _hw(link_sharing="fcfs", epilogue_store_overlap=0.5).epilogue_store_overlap == 0.5


@pytest.mark.parametrize("field, bad, good, words", [
    ("tile_m", 0, 1, "must be >= 1, got 0"),
    ("tile_k", 0, 1, "must be >= 1, got 0"),
    ("cta_slots_per_sm", 0, 1, "must be >= 1, got 0"),
    ("sm_tflops", 0.0, 0.001, "must be positive, got 0.0"),
    ("tile_fixed_ns", -1.0, 0.0, "must be >= 0, got -1.0"),
    ("cta_launch_ns", -1.0, 0.0, "must be >= 0, got -1.0"),
    ("kernel_fixed_ns", -1.0, 0.0, "must be >= 0, got -1.0"),
    ("wave_slowdown", -0.1, 0.0, "must be >= 0, got -0.1"),
    ("signal_ns", -1.0, 0.0, "must be >= 0, got -1.0"),
    ("wave_slowdown_waves", 0.0, 0.01, "must be > 0, got 0.0"),
    ("signal_hold_ns", -1.0, 0.0, "must be >= 0, got -1.0"),
])
def test_each_kernel_config_bound_is_checked_at_its_edge(field, bad, good, words):
    with pytest.raises(SpecError) as ei:
        _hw(config={field: bad})
    assert str(ei.value) == f"hw.toml: hardware.kernel_config[0].{field}: {words}"
    assert getattr(_hw(config={field: good}).kernel_configs[0], field) == good


def test_kernel_configs_are_required_and_unique_by_shape_and_variant():
    from ctasim.spec import hardware_from_dict
    from tests.helpers import TINY

    with pytest.raises(SpecError, match=r"hardware\.kernel_config: at least one"):
        hardware_from_dict(dict(TINY, kernel_config=[]), "hw.toml")
    c = TINY["kernel_config"][0]
    with pytest.raises(SpecError, match=r"kernel_config\[1\]\.tile_m: duplicate kernel config 128x128$"):
        hardware_from_dict(dict(TINY, kernel_config=[c, dict(c)]), "hw.toml")
    hw = hardware_from_dict(dict(TINY, kernel_config=[c, dict(c, kernel="v2")]), "hw.toml")
    assert [k.key() for k in hw.kernel_configs] == ["128x128", "128x128/v2"]


def _wl(**changes):
    from ctasim.spec import workload_from_dict

    return workload_from_dict(dict({"name": "w", "layers": 2, "m": 256, "k": 128, "n": 128, "tile": [128, 128]},
                                   **changes), "wl.toml")


def test_layer_fields_are_checked():
    assert _wl(layers=1).layers[0].tiles == 2  # 256 / 128 x 128 / 128
    for change, words in (({"layers": 0}, "workload.layers: expected the number of layers (>= 1), got 0"),
                          ({"layers": True}, "workload.layers: expected the number of layers (>= 1), got True"),
                          ({"k": 0}, "workload.k: must be >= 1, got 0"),
                          ({"raster": "spiral"}, "workload.raster: must be one of ('row', 'column'), got 'spiral'"),
                          ({"epilogue": ["tanh"]}, "workload.epilogue: unknown op 'tanh'"),
                          ({"rowwise": "batchnorm"}, "workload.rowwise: unknown row-wise op 'batchnorm'"),
                          ({"tile": [128]}, "workload.tile: expected [tile_m, tile_n], got [128]"),
                          ({"dtype": "int4"}, "workload.dtype: must be one of"),
                          ({"layers": 1, "epilogue": ["swiglu"], "tile": [128, 1], "n": 3},
                           "workload.tile_n: swiglu pairs gate and up columns within a tile: tile_n=1 must be even")):
        with pytest.raises(SpecError) as ei:
            _wl(**change)
        assert str(ei.value).startswith("wl.toml: " + words)
    # the bounds themselves: 1 is fine, the raster and the row-wise ops named are accepted
    wl = _wl(layers=1, m=1, k=1, n=1, tile=[1, 1], raster="column", rowwise="rmsnorm", epilogue=["gelu", "residual"])
    assert wl.layers[0].raster == "column" and wl.layers[0].rowwise == "rmsnorm"
    assert _wl(layers=1, epilogue=["swiglu"]).layers[0].out_n == 64


def test_layer_chaining_is_checked():
    from ctasim.spec import workload_from_dict

    def two(first, second):
        return workload_from_dict({"name": "w", "layer": [dict(dict(m=256, k=128, n=128, tile_n=128), **first),
                                                          dict(dict(m=256, k=128, n=128, tile_n=128), **second)]}, "wl.toml")

    assert len(two({}, {}).layers) == 2
    with pytest.raises(SpecError) as ei:
        two({}, {"m": 384})
    assert str(ei.value) == "wl.toml: workload.layer[1].m: M=384 differs from the previous layer's M=256"
    with pytest.raises(SpecError) as ei:
        two({"n": 256}, {})
    assert str(ei.value) == ("wl.toml: workload.layer[1].k: K=128 must equal the previous layer's stored columns 256 "
                             "(layer 1 reads layer 0's output)")
    with pytest.raises(SpecError, match=r"workload\.layers: give either"):
        workload_from_dict({"name": "w", "layers": 2, "layer": [dict(m=256, k=128, n=128, tile_n=128)]}, "wl.toml")
    with pytest.raises(SpecError, match=r"workload\.layer: expected a list of tables"):
        workload_from_dict({"name": "w", "layer": []}, "wl.toml")


def test_strategy_fields_are_checked():
    from ctasim.spec import strategy_from_dict

    def st(**kw):
        return strategy_from_dict(kw, "e.toml", "s.")

    assert st(kind="microbatch", chunks=[1]).chunks == (1,)
    assert st(kind="hybrid", tp_degree=1).tp_degree == 1
    assert st(kind="ctapipe", gpus=1, counter_rows=0, tp_degree=0, raster="column").gpus == 1
    assert st(kind="ctapipe", variant="v").variant == "v"
    for kw, words in (({"kind": "microbatch", "chunks": [0]}, "s.chunks: chunk counts must be >= 1, got (0,)"),
                      ({"kind": "microbatch", "chunks": [2, 0]}, "s.chunks: chunk counts must be >= 1, got (2, 0)"),
                      ({"kind": "microbatch", "chunks": []}, "s.chunks: chunk counts must be >= 1, got ()"),
                      ({"kind": "tp", "tp_degree": -1}, "s.tp_degree: must be >= 0, got -1"),
                      ({"kind": "ctapipe", "tile_source": "stack"}, "s.tile_source: must be one of"),
                      ({"kind": "ctapipe", "counter_rows": -1}, "s.counter_rows: must be >= 0, got -1"),
                      ({"kind": "ctapipe", "raster": "spiral"}, "s.raster: must be one of ('row', 'column')"),
                      ({"kind": "tp", "variant": "v"}, "s.variant: only a ctapipe strategy names a variant"),
                      ({"kind": "ctapipe", "gpus": -1}, "s.gpus: must be >= 0, got -1"),
                      ({"kind": "tp", "gpus": 1}, "s.gpus: only a ctapipe strategy places its layers"),
                      ({"kind": "ctapipe", "gpus": 1, "variant": "v"}, "s.gpus: a named variant runs one layer"),
                      ({"kind": "hybrid"}, "s.tp_degree: hybrid needs tp_degree >= 1")):
        with pytest.raises(SpecError) as ei:
            st(**kw)
        assert str(ei.value).startswith("e.toml: " + words)


def test_experiment_fields_and_sweep_values_are_checked():
    from ctasim.spec import parse_experiment
    from tests.helpers import TINY

    base = {"name": "e", "hardware": dict(TINY), "workload": {"layers": 2, "m": 256, "k": 128, "n": 128,
                                                               "tile": [128, 128]},
            "strategy": [{"kind": "ctapipe"}]}
    exp = parse_experiment(dict(base, sweep={"m": [1, 256], "layers": 2}, gpus=8, regime="sustained"), "e.toml")
    assert exp.sweep == (("m", (1, 256)), ("layers", (2,))) and exp.gpus == 8 and exp.workload.name == "e"
    for change, words in (({"sweep": {"m": [0]}}, "experiment.sweep.m: values must be >= 1"),
                          ({"sweep": {"layers": [2, 0]}}, "experiment.sweep.layers: values must be >= 1"),
                          ({"sweep": {"m": []}}, "experiment.sweep.m: values must be >= 1"),
                          ({"sweep": {"n": [1]}}, "experiment.sweep.n: unknown axis (known: m, layers)"),
                          ({"sweep": [1]}, "experiment.sweep: expected a table of axis = [values]"),
                          ({"gpus": 9}, "experiment.gpus: asks for 9 GPUs but profile 'tiny' has 8"),
                          ({"gpus": -1}, "experiment.gpus: asks for -1 GPUs"),
                          ({"regime": "warm"}, "experiment.regime: must be one of ('burst', 'sustained'), got 'warm'"),
                          ({"strategy": []}, "experiment.strategy: at least one"),
                          ({"strategy": [{"kind": "tp"}, {"kind": "tp"}]},
                           "experiment.strategy: duplicate strategy labels ['tp', 'tp']"),
                          ({"hardware": 3}, "experiment.hardware: expected a profile name or an inline table"),
                          ({"workload": 3}, "experiment.workload: expected a workload name or an inline table")):
        with pytest.raises(SpecError) as ei:
            parse_experiment(dict(base, **change), "e.toml")
        assert str(ei.value).startswith("e.toml: " + words)


@pytest.mark.parametrize("field, value, words", [
    ("gpus", 1.0, "expected an integer, got 1.0"),
    ("gpus", True, "expected an integer, got True"),
    ("hbm_gbps", "fast", "expected a number, got 'fast'"),
    ("hbm_gbps", True, "expected a number, got True"),
    ("hbm_gbps", float("nan"), "expected a number, got nan"),
    ("hbm_gbps", float("inf"), "expected a number, got inf"),
    ("measured", 1, "expected true/false, got 1"),
    ("name", 3, "expected a string, got 3"),
])
def test_field_types_are_checked(field, value, words):
    with pytest.raises(SpecError) as ei:
        _hw(**{field: value})
    assert str(ei.value) == f"hw.toml: hardware.{field}: {words}"
    assert _hw(hbm_gbps=2000).hbm_gbps == 2000.0 and isinstance(_hw(hbm_gbps=2000).hbm_gbps, float)
    assert _hw(clock_onset_ns=float("inf")).clock_onset_ns == float("inf")  # inf where it is the default


# Against the survivors of the mutation run on the spec validation (docs/testing.md): each check's exact
# file, field and message on a spec broken once, beside the same spec valid.

def _err(fn, *args, **kw) -> str:
    with pytest.raises(SpecError) as ei:
        fn(*args, **kw)
    return str(ei.value)


def _help(cls, name):
    import dataclasses

    return next(f.metadata["help"] for f in dataclasses.fields(cls) if f.name == name)


def test_unknown_and_missing_fields_are_named_with_a_suggestion():
    from ctasim.spec import Hardware, hardware_from_dict
    from tests.helpers import TINY

    assert _hw().hbm_gbps == 1000.0
    assert _err(_hw, hb=1) == "hw.toml: hardware.hb: unknown field (did you mean hbm_gbps?)"
    assert _err(_hw, hbm_gbpss=1) == "hw.toml: hardware.hbm_gbpss: unknown field (did you mean hbm_gbps?)"
    # a field filled in by the loader itself is unknown in the file, and never suggested
    assert _err(_hw, kernel_configs=[]) == "hw.toml: hardware.kernel_configs: unknown field (did you mean kernel_gap_ns?)"
    assert _err(_hw, zzz=1) == "hw.toml: hardware.zzz: unknown field"
    data = {k: v for k, v in TINY.items() if k != "gpus"}
    assert _err(hardware_from_dict, data, "hw.toml") == f"hw.toml: hardware.gpus: missing ({_help(Hardware, 'gpus')})"
    assert _help(Hardware, "gpus")
    no_configs = {k: v for k, v in TINY.items() if k != "kernel_config"}
    assert _err(hardware_from_dict, no_configs, "hw.toml") == (
        "hw.toml: hardware.kernel_config: at least one [[hardware.kernel_config]] table is required")
    # the default file name when none is given
    assert _err(hardware_from_dict, dict(TINY, gpus=0)) == "<hardware>: hardware.gpus: must be >= 1, got 0"
    assert _err(hardware_from_dict, dict(TINY, kernel_config=[{"tile_m": 1}])).startswith(
        "<hardware>: hardware.kernel_config[0].tile_n: missing (")


def test_hardware_checks_name_their_file():
    from ctasim.spec import hardware_from_dict
    from tests.helpers import TINY

    c = TINY["kernel_config"][0]
    assert _err(_hw, link_sharing="fair", epilogue_store_overlap=0.5) == (
        "hw.toml: hardware.link_sharing: 'fair' needs epilogue_store_overlap = 0 (a store's end is known only when "
        "it ends; got 0.5)")
    assert _err(_hw, config={"tile_cv": 0.5}) == "hw.toml: hardware.kernel_config[0].tile_cv: must be within [0, 0.5), got 0.5"
    assert _hw(config={"tile_cv": 0.49}).kernel_configs[0].tile_cv == 0.49
    assert _err(hardware_from_dict, dict(TINY, kernel_config=[c, dict(c)]), "hw.toml") == (
        "hw.toml: hardware.kernel_config[1].tile_m: duplicate kernel config 128x128")
    assert _err(_hw, config={"tile_q": 1}) == "hw.toml: hardware.kernel_config[0].tile_q: unknown field (did you mean tile_m, tile_n, tile_k, tile_fixed_ns, tile_cv?)"


def test_list_fields_take_lists_of_their_type():
    from ctasim.spec import strategy_from_dict

    def st(**kw):
        return strategy_from_dict(dict(kind="microbatch", **kw), "e.toml", "s.")

    assert st(chunks=[2, 4]).chunks == (2, 4) and st(chunks=2).chunks == (2,)
    assert _err(st, chunks=2.5) == "e.toml: s.chunks: expected a list of integers, got 2.5"
    assert _err(st, chunks=[1.5]) == "e.toml: s.chunks: expected a list of integers, got [1.5]"
    assert _err(st, chunks=[True]) == "e.toml: s.chunks: expected a list of integers, got [True]"
    assert st(kernels=["a"]).kernels == ("a",)
    assert _err(st, kernels="ab") == "e.toml: s.kernels: expected a list of strings, got 'ab'"
    assert _err(st, kernels=[1]) == "e.toml: s.kernels: expected a list of strings, got [1]"
    assert _wl(epilogue=["gelu"]).layers[0].epilogue == ("gelu",)
    assert _err(_wl, epilogue="gelu") == "wl.toml: workload.epilogue: expected a list of strings, got 'gelu'"


def test_a_field_of_no_known_type_is_an_error():
    from ctasim.spec import coerce

    assert _err(coerce, {}, "dict", None, "f.toml", "x.y") == "f.toml: x.y: cannot read a value of type dict"


def test_strategy_checks_name_their_field():
    from ctasim.spec import strategy_from_dict

    def st(**kw):
        return strategy_from_dict(kw, "e.toml", "s.")

    assert st(kind="tp").kind == "tp"
    assert _err(st, kind="pp").startswith("e.toml: s.kind: unknown strategy 'pp' (known: ")
    assert _err(st, kind="tp", chunk=[1]) == "e.toml: s.chunk: unknown field (did you mean chunks?)"
    assert _err(st, kind="ctapipe", gpus=1, variant="v") == (
        "e.toml: s.gpus: a named variant runs one layer per GPU; gpus applies to the chain kernel (gpus = 1)")


def test_workload_checks_name_their_file_and_field():
    from ctasim.spec import workload_from_dict

    layer = dict(m=256, k=128, n=128, tile_n=128)
    # the shorthand takes tile_m and tile_n as well as tile
    wl = workload_from_dict({"name": "w", "layers": 2, "m": 256, "k": 128, "n": 128, "tile_m": 64, "tile_n": 32})
    assert (wl.layers[1].tile_m, wl.layers[1].tile_n) == (64, 32)
    assert _err(workload_from_dict, {"name": "w", "layers": 0, "m": 256, "k": 128, "n": 128}) == (
        "<workload>: workload.layers: expected the number of layers (>= 1), got 0")
    assert _err(workload_from_dict, {"name": "w", "layers": 2, "layer": [layer]}, "wl.toml") == (
        "wl.toml: workload.layers: give either [[workload.layer]] tables or the chain shorthand (layers, m, k, n), "
        "not both")
    assert _err(workload_from_dict, {"name": "w", "layer": {}}, "wl.toml") == (
        "wl.toml: workload.layer: expected a list of tables")
    assert _err(workload_from_dict, {"name": "w", "layer": [dict(layer, q=1)]}, "wl.toml") == (
        "wl.toml: workload.layer[0].q: unknown field")
    assert _err(workload_from_dict, {"name": "w", "layer": [dict(layer, m=100)]}, "wl.toml") == (
        "wl.toml: workload.layer[0].m: M=100 is not divisible by tile_m=128")
    assert _err(_wl, layers=1, epilogue=["swiglu", "gelu"]) == (
        "wl.toml: workload.epilogue: a gated op stands alone in the epilogue, got ['swiglu', 'gelu']")
    assert _wl(layers=1, epilogue=["swiglu"]).layers[0].epilogue == ("swiglu",)
    # a swiglu layer stores N/2 columns: the next layer's K is checked against them, and the message says so
    two = [dict(layer, n=256, epilogue=["swiglu"]), dict(layer, k=128)]
    assert len(workload_from_dict({"name": "w", "layer": two}).layers) == 2
    assert _err(workload_from_dict, {"name": "w", "layer": [two[0], dict(layer, k=256)]}, "wl.toml") == (
        "wl.toml: workload.layer[1].k: K=256 must equal the previous layer's stored columns 128 (layer 1 reads "
        "layer 0's output; its swiglu stores N/2)")


def test_spec_tables_are_required_and_must_be_tables(tmp_path):
    p = tmp_path / "w.toml"
    p.write_text("[other]\nx = 1\n")
    assert _err(load_workload, str(p)) == f"{p}: workload: missing [workload] table"
    p.write_text("workload = 3\n")
    assert _err(load_workload, str(p)) == f"{p}: workload: expected a table"
    p.write_text('[workload]\nname = "w"\nlayers = 1\nm = 128\nk = 128\nn = 128\ntile = [128, 128]\n')
    assert load_workload(str(p)).name == "w"


def test_experiment_checks_name_their_file_and_field(tmp_path):
    import shutil

    from ctasim.spec import parse_experiment
    from tests.helpers import TINY

    wl = {"layers": 2, "m": 256, "k": 128, "n": 128, "tile": [128, 128]}
    base = {"name": "e", "hardware": dict(TINY), "workload": dict(wl), "strategy": [{"kind": "ctapipe"}]}
    assert parse_experiment(dict(base), "e.toml").name == "e"

    def bad(**change):
        data = {k: v for k, v in dict(base, **change).items() if v is not None}
        return _err(parse_experiment, data, "e.toml")

    assert bad(hardware=None) == "e.toml: experiment.hardware: expected a profile name or an inline table"
    assert bad(workload=None) == "e.toml: experiment.workload: expected a workload name or an inline table"
    assert bad(strategy=None) == "e.toml: experiment.strategy: at least one [[experiment.strategy]] table is required"
    assert bad(hardware=dict(TINY, gpus=0)) == "e.toml: hardware.gpus: must be >= 1, got 0"
    assert bad(sweep={"m": "x"}) == "e.toml: experiment.sweep.m: expected a list of integers, got 'x'"
    assert bad(colour=1) == "e.toml: experiment.colour: unknown field"
    assert bad(gpus="x") == "e.toml: experiment.gpus: expected an integer, got 'x'"
    # with no name, the experiment's name is the one missing (the inline workload's is taken from it)
    assert bad(name=None).startswith("e.toml: experiment.name: missing (")
    # profile and workload files named relative to the experiment's folder
    shutil.copy(SPECS_DIR / "hardware" / "h200-x2.toml", tmp_path / "my-hw.toml")
    (tmp_path / "my-wl.toml").write_text('[workload]\nname = "mine"\nlayers = 2\nm = 1024\nk = 8192\nn = 8192\n'
                                         'tile = [128, 256]\n')
    exp = parse_experiment(dict(base, hardware="my-hw.toml", workload="my-wl.toml"), "e.toml", tmp_path)
    assert exp.hardware.name == "h200-x2" and exp.workload.name == "mine"
