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
    ("link_sharing", "lifo", "fair", "must be one of ('fcfs', 'fair'), got 'lifo'"),
    ("epilogue_store_overlap", 1.01, 1.0, "must be within [0, 1], got 1.01"),
    ("epilogue_store_overlap", -0.01, 0.0, "must be within [0, 1], got -0.01"),
])
def test_each_hardware_bound_is_checked_at_its_edge(field, bad, good, words):
    with pytest.raises(SpecError) as ei:
        _hw(**{field: bad})
    assert str(ei.value) == f"hw.toml: hardware.{field}: {words}"
    assert getattr(_hw(**{field: good}), field) == good


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
