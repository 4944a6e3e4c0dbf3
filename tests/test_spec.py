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
