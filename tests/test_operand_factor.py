"""bench/operand_factor.py: the GeLU'd-A factor table from registered plans 35 and 36, its two readings (by K, by the
launch's length), registered plan 43's registration derived from them, and the judge, which must tell the readings
apart (no GPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
REG = ROOT / "bench" / "predictions" / "reg43-gelu-k-shapes"


@pytest.fixture(scope="module")
def of(bench_module):
    return bench_module("operand_factor")


def test_the_table_holds_plans_35_and_36_measured_factors(of):
    t = of.table().set_index("k")
    assert list(t.index) == [4096, 8192, 14336, 28672]
    assert list(t["n"]) == [1, 2, 1, 2]  # K = 8192 and 28672 on both machines
    assert t.loc[4096, "factor"] == pytest.approx(1.2287 / 1.3317, abs=1e-4)
    assert t.loc[8192, "factor"] == pytest.approx((2.7683 / 2.8554 + 2.7807 / 2.8789) / 2, abs=1e-4)


def test_the_readings_interpolate_and_hold_their_end_values(of):
    t = pd.DataFrame({"k": [4096, 16384], "factor": [0.9, 1.0], "random_ms": [1.0, 4.0]})
    assert of.by_k(t, 8192) == pytest.approx(0.95)  # half way in log2 K
    assert of.by_k(t, 1024) == 0.9 and of.by_k(t, 65536) == 1.0
    assert of.by_launch(t, 2.0) == pytest.approx(0.95)  # half way in log time
    assert of.waves(16384, 8192) == 32 and of.waves(2048, 8192) == 4
    # a wave at K = 8192 interpolates 1/32 and 4/32 ms linearly in K: 2/32 ms; 4 waves of it
    assert of.launch_ms(t, 2048, 8192, 8192) == pytest.approx(4 * 2.0 / 32)


def test_the_registration_is_what_the_table_gives(of):
    """factors.csv and constants.csv were written from the committed table: recomputing them gives the same values
    (a change of the table or the readings after the registration shows here)."""
    f = pd.read_csv(REG / "factors.csv")
    t = of.table()
    pd.testing.assert_frame_equal(t.round(4), pd.read_csv(REG / "table.csv"), check_dtype=False)
    kernels = pd.read_csv(REG / "kernels.csv")
    spec = {r.kernel: (r.m, r.n, r.k, () if pd.isna(r.op) else (r.op,)) for r in kernels.itertuples()}
    again = of.register(spec, t)
    pd.testing.assert_frame_equal(again, f, check_dtype=False)
    c = pd.read_csv(REG / "constants.csv").set_index("kernel")
    for r in f.itertuples():
        assert c.loc[f"{r.pair}-gelu/{r.pair}", "value"] == pytest.approx(r.by_k, abs=1e-4)
    assert int(((f["by_k"] - f["by_launch"]).abs() > 0.02).sum()) == 5  # the separating pairs


def _judged(factors: pd.DataFrame, col: str) -> pd.DataFrame:
    rows = []
    for r in factors.itertuples():
        rows += [{"kernel": r.pair, "rested_ms": 2.0}, {"kernel": f"{r.pair}-gelu", "rested_ms": 2.0 * getattr(r, col)}]
    return pd.DataFrame(rows)


def test_the_judge_meets_the_by_k_reading_and_rejects_the_other(of):
    f = pd.read_csv(REG / "factors.csv")
    good = of.judge(f, _judged(f, "by_k"))["factor_claims"].set_index("claim")["met"]
    assert good.all()
    bad = of.judge(f, _judged(f, "by_launch"))
    met = bad["factor_claims"].set_index("claim")["met"]
    assert not met["a"] and not met["c"]
    assert (bad["pairs"][bad["pairs"]["separating"]]["nearer"] == "by_launch").all()
    ones = of.judge(f, _judged(f, "naive"))["factor_claims"].set_index("claim")["met"]
    assert not ones["b"]


def test_the_judge_names_a_missing_kernel(of):
    f = pd.read_csv(REG / "factors.csv")
    with pytest.raises(ValueError, match="k28672-m2048-gelu"):
        of.judge(f, _judged(f, "by_k").iloc[:-1])


def test_elapsed_compares_the_pairs_bin_by_bin(of):
    rows = []
    for kernel, dur in (("a", 2.0), ("a-gelu", 1.8), ("b", 1.0)):
        t = 0.0
        for i in range(12):
            rows.append({"kernel": kernel, "i": i, "t_start_ms": t, "dur_ms": dur if i else 9.0})
            t += dur
    e = of.elapsed(pd.DataFrame(rows)).set_index("elapsed_ms")
    assert list(e.columns) == ["a"]
    assert e.loc["4-6", "a"] == pytest.approx(0.9)
    assert pd.isna(e.loc["0-2", "a"])  # launch 0 is dropped


@pytest.mark.parametrize("args, says", [
    (["--judge", "x"], "--judge needs --registered"),
    ([], "give one of"),
    (["--elapsed", "no-such.csv"], "no no-such.csv"),
    (["--register", "a=16384x8192x4096,b=16384x8192x4096+relu_input"], "no pair"),
])
def test_bad_input_is_one_line_and_exit_2(args, says, tmp_path):
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "operand_factor.py"), *args, "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("plan, registration, lo, hi, naive", [("43", REG, 0.987, 1.003, 1.3),
                                                                ("44", REG.parent / "reg44-activation-factor-one",
                                                                 0.995, 1.002, 0.5),
                                                                ("44-run2", REG.parent / "reg44-activation-factor-one",
                                                                 0.997, 1.0, 0.3),
                                                                ("43-run2", REG, 0.999, 1.002, 0.3)])
def test_the_committed_judgement_is_what_the_script_writes_and_the_docs_quote(of, plan, registration, lo, hi, naive):
    """bench/results/validation-registered43 and -44's pairs.csv and factor_claims.csv from the committed judged
    kernels; the figures docs/validation.md quotes (the by-K reading's claims all missed, the GeLU'd factor's range,
    the naive 1's worst error)."""
    folder = ROOT / "bench" / "results" / f"validation-registered{plan}"
    out = of.judge(pd.read_csv(registration / "factors.csv"), pd.read_csv(folder / "kernels.csv"))
    for name, table in out.items():
        committed = pd.read_csv(folder / f"{name}.csv")
        pd.testing.assert_frame_equal(table.round(4).reset_index(drop=True), committed, check_dtype=False,
                                      check_exact=False, rtol=1e-9, atol=1e-4)
    assert not out["factor_claims"]["met"].any()
    p = out["pairs"]
    assert round(p["measured"].min(), 3) == lo and round(p["measured"].max(), 3) == hi
    assert p["naive_err_pct"].abs().max() < naive
