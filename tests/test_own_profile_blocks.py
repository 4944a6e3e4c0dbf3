"""bench/own_profile_blocks.py (registered plan 48): the committed-profile registrations are what ctasim predict
writes, and the judge tells an own profile that is right from one that is not, on the committed earlier
measurements of the same experiments (no GPU)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "bench" / "results" / "hw"
EARLIER = {"reg28-reference": "2026-12-03-registered28-1gpu", "reg10-chain-order-h6144": "2026-12-02-registered10-1gpu",
           "reg10-chain-order-h10240": "2026-12-02-registered10-1gpu",
           "reg26-llama3.1-70b-1gpu": "2026-12-03-registered26-1gpu"}


@pytest.fixture(scope="module")
def opb(bench_module):
    return bench_module("own_profile_blocks")


def test_the_committed_registrations_are_what_ctasim_predict_writes(opb, tmp_path):
    """With the profile as plan 48 registered it: its ticket law "threshold" (the profile's until plan 49) and a
    panel's reuse across waves an LRU of the whole L2 (until registered plan 67's adoption on an H200, 2026-12-06)."""
    from ctasim import results

    assert tuple(EARLIER) == opb.EXPERIMENTS
    exp = "reg10-chain-order-h6144"
    import subprocess
    import sys

    # the profile's 128x256 config: the survival law and the factor 1.019 since registered plan 53, its gap spread and
    # touched bytes since plan 58 (one line each, in that order)
    lines = (ROOT / "specs" / "hardware" / "h200-x1-calibrated.toml").read_text().splitlines(keepends=True)
    law = [i for i, s in enumerate(lines) if s.startswith('ticket_law = "survival"')]
    later = [i for i, s in enumerate(lines) if s.startswith(("ticket_mainloop_factor = 1.019", "ticket_gap_cv = 0.74",
                                                              "ticket_touched = 1.3"))]
    assert len(law) == 1 and later == [law[0] + 1, law[0] + 2, law[0] + 3]
    lines[law[0]] = 'ticket_law = "threshold"\n'
    for i in later:
        lines[i] = ""
    # a record made before plan 67's adoption on an H200 (2026-12-06): its l2_reuse_law line out, the LRU (the default)
    reuse = [i for i, s in enumerate(lines) if s.startswith('l2_reuse_law = "survival"')]
    assert len(reuse) == 1
    lines[reuse[0]] = ""
    (tmp_path / "h200-x1-calibrated.toml").write_text("".join(lines))
    subprocess.run([sys.executable, "-m", "ctasim.cli", "predict", exp, "--out", str(tmp_path / exp), "--naive-from",
                    str(opb.NAIVE_FROM), "--no-schedules", "--hardware", str(tmp_path / "h200-x1-calibrated.toml")],
                   check=True, cwd=ROOT, capture_output=True)
    pd.testing.assert_frame_equal(results.read(tmp_path / exp / "predictions.csv"),
                                  results.read(opb.REGISTERED / exp / "predictions.csv"))


def _run_dir(tmp: Path, own_of) -> Path:
    """A run folder of the earlier committed measurements, with an 'own' registration whose model rows are
    ``own_of(predictions, measured)``."""
    from ctasim import results

    for exp, folder in EARLIER.items():
        (tmp / exp).mkdir(parents=True)
        shutil.copy(HW / folder / exp / "results.csv", tmp / exp / "results.csv")
        pred = results.read(ROOT / "bench" / "predictions" / "reg48-committed" / exp / "predictions.csv")
        meas = results.read(tmp / exp / "results.csv")
        own = tmp / "reg48-own" / exp
        own.mkdir(parents=True)
        own_of(pred, meas).to_csv(own / "predictions.csv", index=False)
    return tmp


def _measured(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """The model rows set to what was measured (a perfect own profile)."""
    key = ["case", "strategy"]
    m = meas[meas["status"] == "ok"].drop_duplicates(key).set_index(key)["makespan_ms"]
    pred = pred.copy()
    rows = pred["source"] == "model"
    pred.loc[rows, "makespan_ms"] = [m.get((c, s), v) for c, s, v in pred.loc[rows, key + ["makespan_ms"]].itertuples(index=False)]
    return pred


def test_the_judge_tells_a_right_own_profile_from_a_wrong_one(opb, tmp_path):
    right = opb.cases(_run_dir(tmp_path / "right", _measured))
    s = opb.summary(right)
    met = opb.claims(s, opb.rankings(right)).set_index("claim")["met"]
    assert met.all(), met
    assert s.set_index(["predictor", "kind"]).loc[("own", "all"), "mape_pct"] == pytest.approx(0.0, abs=1e-9)

    def slow(pred, meas):  # the committed model's times 10% slower: targets, committed and half naive all missed
        pred = pred.copy()
        pred.loc[pred["source"] == "model", "makespan_ms"] *= 1.10
        return pred

    wrong = opb.cases(_run_dir(tmp_path / "wrong", slow))
    s = opb.summary(wrong)
    met = opb.claims(s, opb.rankings(wrong)).set_index("claim")["met"]
    assert not met["a"] and not met["b"] and not met["c"]
    # a uniform factor keeps the committed model's ranking: (d) is the committed profile's answer
    r = opb.rankings(wrong)
    chains = r[r["experiment"].str.startswith("reg10-")]
    assert met["d"] == bool(chains["committed_fastest_right"].all())


def test_bad_input_is_one_line_and_exit_2(opb, tmp_path, capsys):
    assert opb.main([]) == 2
    assert opb.main(["--judge", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "give --register or --judge" in err[0] and "no " in err[1]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("run, met, figures", [
    # claims met; (own, committed, naive MAPE over the 26 cases; own worst; chain cases whose fastest own and
    # committed got right)
    ("", {"b", "c", "d"}, (1.65, 2.87, 5.89, -7.12, 4, 2)),
    ("-run2", {"c"}, (1.68, 1.56, 4.42, -7.83, 3, 3)),
])
def test_plan_48s_judgement_is_what_the_committed_run_gives_and_the_docs_quote(opb, tmp_path, run, met, figures):
    """Registered plan 48 on its two machines: the own registrations the device wrote before the experiments ran are
    what ctasim predict gives from the committed own profile (the block on one machine, a chain experiment on the
    other, re-derived: nothing chosen after the runs), the judged tables are what the judge writes, and the claims as docs/validation.md says."""
    import subprocess
    import sys

    from ctasim import results

    run_dir = HW / f"2026-12-04-registered48-1gpu{run}"
    for exp in ("reg10-chain-order-h6144",) if run else ("reg26-llama3.1-70b-1gpu",):  # a chain and the block
        subprocess.run([sys.executable, "-m", "ctasim.cli", "predict", exp, "--hardware", str(run_dir / "h200-x1-own.toml"),
                        "--out", str(tmp_path / exp), "--naive-from", str(opb.NAIVE_FROM), "--no-schedules"],
                       check=True, cwd=ROOT, capture_output=True)
        pd.testing.assert_frame_equal(results.read(tmp_path / exp / "predictions.csv"),
                                      results.read(run_dir / "reg48-own" / exp / "predictions.csv"))
    c = opb.cases(run_dir)
    s, r = opb.summary(c), opb.rankings(c)
    cl = opb.claims(s, r)
    committed = ROOT / "bench" / "results" / f"validation-registered48{run}"
    for name, table in (("cases", c), ("summary", s), ("rankings", r), ("claims", cl)):
        assert table.round(4).to_csv(index=False) == (committed / f"{name}.csv").read_text(), name
    assert set(cl.loc[cl["met"], "claim"]) == met
    a = s[s["kind"] == "all"].set_index("predictor")
    chains = r[r["experiment"].str.startswith("reg10-")]
    got = (round(a.loc["own", "mape_pct"], 2), round(a.loc["committed", "mape_pct"], 2), round(a.loc["naive", "mape_pct"], 2),
           round(a.loc["own", "worst_pct"], 2), int(chains["own_fastest_right"].sum()),
           int(chains["committed_fastest_right"].sum()))
    assert got == figures
