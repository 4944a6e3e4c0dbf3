"""Registered plan 29's judges, on synthetic inputs whose answer is known: bench/clock_kernels.py (does the clock slow
every kernel alike?) and block_gemm_orders.py's errors less the reference GEMM's."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
REG = ROOT / "bench/predictions/reg29-clock-kernels"


@pytest.fixture(scope="module")
def ck(bench_module):
    return bench_module("clock_kernels")


def _rounds(kernel: str, shape: tuple, rested: float, curve, rounds: int = 3, run_ms: float = 400.0) -> list[dict]:
    """A trajectory whose every launch takes ``rested`` times the curve's factor at its start (a step function of
    ((t_ms, factor), ...)), as clock_trajectory.py writes it."""
    rows = []
    for rnd in range(rounds):
        t, i = 0.0, 0
        while t < run_ms:
            f = [fac for at, fac in curve if at <= t][-1]
            d = rested * f
            rows.append({"kernel": kernel, "m": shape[0], "n": shape[1], "k": shape[2], "epilogue": "", "round": rnd,
                         "i": i, "t_start_ms": t, "dur_ms": d})
            t, i = t + d, i + 1
    return rows


def _trajectory(reg: pd.DataFrame, curve, sustained=None, relu_scale: float = 0.946) -> pd.DataFrame:
    """Every registered kernel on ``curve`` (its last factor the sustained level), kernel ``k`` instead levelling at
    ``sustained[k]``; relu-16384 at ``relu_scale`` of square-16384's rested time."""
    rows = []
    for r in reg.itertuples():
        c = list(curve)
        if sustained and r.kernel in sustained:
            c[-1] = (c[-1][0], sustained[r.kernel])
        rested = {"square-16384": 2.8, "relu-16384": 2.8 * relu_scale, "square-4096": 0.7}.get(r.kernel, 10.0)
        rows += _rounds(r.kernel, (r.m, r.n, r.k), rested, c)
    return pd.DataFrame(rows)


CURVE = ((0.0, 1.0), (30.0, 1.05), (60.0, 1.1683))


def test_the_registration_is_what_the_script_writes(ck, tmp_path):
    """--predict with the README's kernels reproduces predicted.csv and curve.csv; --spec gives them back."""
    text = (REG / "README.md").read_text()
    kernels = text.split('--predict "')[1].split('"')[0]
    # registered before plan 67's adoption on an H200 (2026-12-06): the flag prices the H200 as it was
    assert ck.main(["--predict", kernels, "--before-reuse-adoption", "--out", str(tmp_path)]) == 0
    for name in ("predicted.csv", "curve.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), pd.read_csv(REG / name))
    assert (tmp_path / "pricing.txt").read_text() == "lru\n"
    # a registration written now prices the profile as it is: at H = 4608 (registered plan 67's shape) the survival
    # law prices the GEMM 3% slower than the LRU did
    small = "square-16384=16384x8192x8192,h4608=16384x4608x4608"
    times = {}
    for name, flag in (("now", []), ("was", ["--before-reuse-adoption"])):
        assert ck.main(["--predict", small, *flag, "--out", str(tmp_path / name)]) == 0
        times[name] = pd.read_csv(tmp_path / name / "predicted.csv").set_index("kernel").model_rested_ms
    assert (tmp_path / "now" / "pricing.txt").read_text() == "profile\n"
    assert times["now"]["h4608"] / times["was"]["h4608"] == pytest.approx(1.032, abs=2e-3)
    assert times["now"]["square-16384"] == pytest.approx(times["was"]["square-16384"], rel=1e-4)
    assert ck.main(["--spec", str(REG), "--before-reuse-adoption"]) == 2
    reg = pd.read_csv(REG / "predicted.csv")
    assert ck.spec(reg) == kernels
    assert (reg.model_sustained_slowdown == 1.1683).all() and (reg.model_relu_input_factor == 0.946).all()
    by = reg.set_index("kernel").model_rested_ms
    assert by["relu-16384"] == pytest.approx(0.946 * by["square-16384"], abs=1e-3) and pd.isna(by["gelu-16384"])


def test_kernels_on_one_curve_meet_every_claim(ck):
    reg = pd.read_csv(REG / "predicted.csv")
    t = ck.judge(_trajectory(reg, CURVE), reg, pd.read_csv(REG / "curve.csv"))
    claims = t["claims"].set_index("claim")
    assert list(claims.index) == ["a", "b", "c", "d"] and claims.met.all(), claims
    kern = t["kernels"].set_index("kernel")
    assert kern.sustained_slowdown.round(4).eq(1.1683).all()
    assert kern.rounds.eq(3).all()
    relu = t["relu"].set_index("regime")
    assert relu.factor.round(4).eq(0.946).all()
    # launches of other lengths meet the curve's steps at other times: the pooled curves differ by that much only
    assert claims.loc["c", "value"] == pytest.approx(0.0, abs=0.005)


def test_a_kernel_that_sustains_apart_or_a_relu_factor_off_misses(ck):
    reg = pd.read_csv(REG / "predicted.csv")
    curve = pd.read_csv(REG / "curve.csv")
    t = ck.judge(_trajectory(reg, CURVE, sustained={"wide-8192": 1.12}), reg, curve)
    claims = t["claims"].set_index("claim")
    assert not claims.loc["a", "met"] and not claims.loc["d", "met"]
    assert claims.loc["a", "value"] == pytest.approx(0.0483, abs=1e-3) and claims.loc["b", "met"]
    assert claims.loc["c", "met"]  # one kernel of four moves the pooled curve by a quarter of its gap
    new = {k: 1.10 for k in ("relu-16384", "wide-8192", "longk-16384", "gelu-16384")}
    claims = ck.judge(_trajectory(reg, CURVE, sustained=new), reg, curve)["claims"].set_index("claim")
    assert not claims.loc["c", "met"] and claims.loc["c", "value"] > 0.03
    # the ReLU'd A loses less clock: its sustained factor drifts from the rested one
    t = ck.judge(_trajectory(reg, CURVE, sustained={"relu-16384": 1.10}), reg, curve)
    claims = t["claims"].set_index("claim")
    relu = t["relu"].set_index("regime")
    assert relu.loc["rested", "factor"] == pytest.approx(0.946, abs=1e-4)
    assert relu.loc["sustained", "factor"] == pytest.approx(0.946 * 1.10 / 1.1683, abs=1e-3)
    assert not claims.loc["b", "met"] and claims.loc["b", "naive_value"] > claims.loc["b", "value"]


def test_bad_input_is_one_line(ck, tmp_path, capsys):
    reg = pd.read_csv(REG / "predicted.csv")
    traj = _trajectory(reg, CURVE)
    traj[traj.kernel != "wide-8192"].to_csv(tmp_path / "t.csv", index=False)
    assert ck.main(["--trajectory", str(tmp_path / "t.csv"), "--registered", str(REG), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["clock_kernels: the trajectory has no kernel 'wide-8192'"] and not (tmp_path / "o").exists()
    moved = traj.copy()
    moved.loc[moved.kernel == "wide-8192", "n"] = 1024
    moved.to_csv(tmp_path / "t.csv", index=False)
    assert ck.main(["--trajectory", str(tmp_path / "t.csv"), "--registered", str(REG), "--out", str(tmp_path / "o")]) == 2
    assert "another shape" in capsys.readouterr().err and not (tmp_path / "o").exists()
    lone = reg[reg.kernel != "square-16384"]  # the ReLU'd A without its plain kernel
    with pytest.raises(ValueError, match="'relu-16384' has no plain kernel of its shape"):
        ck.judge(traj[traj.kernel != "square-16384"], lone, pd.read_csv(REG / "curve.csv"))
    for bad, word in (("a=1x2", "not MxNxK"), ("a=1x2x3+tanh", "at most one of"), ("1x2x3", "NAME=MxNxK"),
                      ("a=1x2x3,a=4x5x6", "twice")):
        assert ck.main(["--predict", bad, "--out", str(tmp_path / "p")]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and word in lines[0], lines
    assert not (tmp_path / "p").exists()


def test_errors_less_the_reference_cancel_the_machine(bench_module):
    """block_gemm_orders.normalised: a machine 3% slow on every shape leaves each shape's own error; the classes are
    plan 29's (wide N, long K); a reference not judged is refused."""
    bgo = bench_module("block_gemm_orders")
    own = {(16384, 8192, 8192): 0.0, (8192, 59136, 8192): -1.0, (16384, 40960, 7168): -2.0,
           (16384, 8192, 28672): 1.5, (2048, 4096, 8192): 0.5}
    rows = []
    for (m, n, k), e in own.items():
        best = 10.0 * 1.03  # the machine: 3% slower than the model on everything
        rows.append({"m": m, "n": n, "k": k, "best_ms": best, "interleaved_ms": 10.0 * (1 + e / 100)})
    shapes = pd.DataFrame(rows)
    out, classes = bgo.normalised(shapes, (16384, 8192, 8192), {"interleaved": None})
    got = out.set_index(["m", "n", "k"])
    for key, e in own.items():
        assert got.loc[key, "interleaved_normalised_pct"] == pytest.approx(e * 1 / 1.03, abs=1e-9)
    assert got.interleaved_err_pct.max() < -1  # the raw errors all carry the machine
    assert dict(zip(got["class"], got.index)) == {"reference": (16384, 8192, 8192), "wide-N": (16384, 40960, 7168),
                                                   "long-K": (16384, 8192, 28672), "other": (2048, 4096, 8192)}
    c = classes.set_index("class")
    assert c.loc["wide-N", "interleaved_normalised_pct_count"] == 2
    assert c.loc["wide-N", "interleaved_normalised_pct_mean"] == pytest.approx(-1.5 / 1.03)
    with pytest.raises(ValueError, match="reference 4096x8192x8192 is not among"):
        bgo.normalised(shapes, (4096, 8192, 8192), {"interleaved": None})


RUN29 = ROOT / "bench/results/hw/2026-12-03-registered29-1gpu"
VAL29 = ROOT / "bench/results/validation-registered29"


def _rejudge(ck, out: Path, run: Path, registration: Path, committed: Path, smi_start: str | None = None):
    """clock_kernels.py on a committed trajectory (``run``) and registration gives the ``committed`` tables (smi.csv
    too where ``smi_start`` is given); returns the committed ReLU'd-A factors by (kernel, regime)."""
    args = ["--trajectory", str(run / "trajectory.csv"), "--registered", str(registration), "--out", str(out)]
    if smi_start:
        args += ["--smi", str(run / "smi.csv.gz"), "--smi-start", smi_start]
    assert ck.main(args) == 0
    for name in ("kernels.csv", "relu.csv", "claims.csv") + (("smi.csv",) if smi_start else ()):
        pd.testing.assert_frame_equal(pd.read_csv(out / name), pd.read_csv(committed / name))
    return pd.read_csv(committed / "relu.csv").set_index(["kernel", "regime"]).factor


def test_registered_plan_29s_judgement_is_what_the_scripts_write(tmp_path, ck, bench_module):
    """Registered plan 29 on its committed measurement: block_gemm_orders.py --reference and clock_kernels.py give
    the committed tables (the figures docs/validation.md quotes)."""
    bgo = bench_module("block_gemm_orders")
    out = tmp_path / "g"
    assert bgo.main(["--probe", str(RUN29 / "gemm_shapes.csv"), "--registered",
                     str(ROOT / "bench/predictions/reg29-gemm-reference"), "--reference", "16384x8192x8192",
                     "--out", str(out)]) == 0
    for name in ("claims.csv", "shapes.csv", "normalised.csv", "normalised_classes.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / name), pd.read_csv(VAL29 / "gemm-reference" / name))
    relu = _rejudge(ck, tmp_path / "c", RUN29, REG, VAL29 / "clock-kernels")
    # the claims as docs/validation.md states them
    g = pd.read_csv(VAL29 / "gemm-reference" / "claims.csv").set_index("predictor")
    assert round(g.loc["interleaved", "unpadded_mape_pct"], 2) == 2.32 and round(g.loc["interleaved", "best_mape_pct"], 2) == 1.49
    assert round(g.loc["interleaved", "best_worst_pct"], 2) == 5.10 and round(g.loc["naive", "best_mape_pct"], 2) == 0.94
    assert g.loc["interleaved", "pick_lost_max_pct"] < 2  # (c) met
    assert g.loc["interleaved", "best_mape_pct"] > g.loc["naive", "best_mape_pct"] / 2  # (b) missed
    cls = pd.read_csv(VAL29 / "gemm-reference" / "normalised_classes.csv").set_index("class")
    assert abs(cls.loc["wide-N", "interleaved_normalised_pct_mean"]) <= 1.0  # (d) met: -0.60
    assert cls.loc["long-K", "interleaved_normalised_pct_mean"] > 0  # (e) met: +1.86
    c = pd.read_csv(VAL29 / "clock-kernels" / "claims.csv").set_index("claim")
    assert not c.met.any() and list(c.index) == ["a", "b", "c", "d"]  # every claim of part 2 missed
    assert (round(relu[("relu-16384", "rested")], 3), round(relu[("relu-16384", "sustained")], 3)) == (0.848, 0.785)


def test_the_smi_diagnostic_finds_each_round_and_refuses_a_miscount(ck):
    """smi_rounds: runs of samples under 1900 MHz after the start are the rounds, in the kernels' order; a count that
    is not kernels x rounds is refused; plan 29's committed samples give the committed smi.csv."""
    # idle at 345 MHz first (not a round), a rest of 12 samples between the rounds, a one-sample blip inside the second
    clocks = [345] * 6 + [1965] * 3 + [1500, 1420, 1410, 1400] + [1965] * 12 + [1880, 1830, 1965, 1830, 1840] + [1965] * 2
    smi = pd.DataFrame({"timestamp": [f"2026/12/03 12:00:{i:02d}.000" for i in range(len(clocks))],
                        " clocks.current.sm [MHz]": [f" {c} MHz" for c in clocks]})
    got = ck.smi_rounds(smi, ["plain", "relu"], 1, "2026/12/03 12:00:00").set_index("kernel")
    assert got.loc["plain", "lowest_mhz"] == 1400 and got.loc["relu", "median_mhz"] == 1835
    with pytest.raises(ValueError, match="2 runs .* expected 4"):
        ck.smi_rounds(smi, ["plain", "relu"], 2, "2026/12/03 12:00:00")
    # a round before the start is not counted
    assert ck.smi_rounds(smi, ["relu"], 1, "2026/12/03 12:00:14").median_mhz.tolist() == [1835]
    s = ck.smi_rounds(pd.read_csv(RUN29 / "smi.csv.gz"), list(pd.read_csv(REG / "predicted.csv").kernel), 3,
                      "2026/12/03 12:51:19")
    pd.testing.assert_frame_equal(s.round(4), pd.read_csv(VAL29 / "clock-kernels" / "smi.csv"), check_dtype=False)


def test_registered_plan_30s_judgement_is_what_the_script_writes(tmp_path, ck):
    """Registered plan 30 on its committed measurement: clock_kernels.py gives the committed tables, and its three
    rules as docs/validation.md states them: (a) met, (b) met, (c) plan 29's square pair not replicated."""
    f = _rejudge(ck, tmp_path, ROOT / "bench/results/hw/2026-12-03-registered30-1gpu",
                 ROOT / "bench/predictions/reg30-relu-shapes", ROOT / "bench/results/validation-registered30",
                 "2026/12/03 13:03:44")
    assert all(abs(f[(k, "rested")] - 0.946) <= 0.02 for k in ("relu-longk-16384", "relu-wide-8192"))  # (a)
    assert all(abs(f[(k, "sustained")] - 0.946) <= 0.02 for k in ("relu-16384", "relu-longk-16384", "relu-wide-8192"))
    assert abs(f[("relu-16384", "rested")] - 0.848) > 0.03  # (c) missed: 0.944 here
    assert round(f[("relu-16384", "rested")], 3) == 0.944


def test_registered_plan_31s_judgement_is_what_the_script_writes(tmp_path, ck):
    """Registered plan 31 on its committed measurement: the committed tables, and its rules as docs/validation.md states
    them: (a), (b), (c) met -- the ReLU'd-A factor at the profile's 0.946 on a third machine."""
    f = _rejudge(ck, tmp_path, ROOT / "bench/results/hw/2026-12-03-registered31-1gpu",
                 ROOT / "bench/predictions/reg31-relu-machine", ROOT / "bench/results/validation-registered31",
                 "2026/12/03 13:33:57")
    assert abs(f[("relu-16384", "rested")] - 0.946) <= 0.02  # (a)
    assert all(abs(f[(k, "sustained")] - 0.946) <= 0.02 for k in ("relu-16384", "relu-4096"))  # (b)
    assert abs(f[("relu-4096", "rested")] - 0.946) <= 0.02  # (c)
    assert (round(f[("relu-16384", "rested")], 3), round(f[("relu-4096", "rested")], 3)) == (0.951, 0.944)
