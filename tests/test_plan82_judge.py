"""bench/plan82_judge.py: registered plan 82's claims judged on measurements made up from the committed registrations
-- the per-variant fits right, the survival law right -- and reports it must refuse."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import load_bench

ROOT = Path(__file__).resolve().parent.parent
J = load_bench("plan82_judge")


def _reports(tmp_path: Path, truth: str, scale: float = 1.01) -> Path:
    """One accuracy.csv per registration, the measurement being registration ``truth``'s model times ``scale``."""
    out = tmp_path / "reports"
    for exp in J.EXPERIMENTS:
        meas = pd.read_csv(ROOT / "bench/predictions" / f"{exp}{truth}" / "predictions.csv")
        meas = meas[meas["source"] == "model"].set_index(["case", "strategy"])["makespan_ms"] * scale
        for suffix in J.PROFILES:
            p = pd.read_csv(ROOT / "bench/predictions" / f"{exp}{suffix}" / "predictions.csv")
            p = p[p["source"].isin(["model", "naive"]) & (p["status"] == "ok")]
            m = meas.reindex(pd.MultiIndex.from_frame(p[["case", "strategy"]])).to_numpy()
            acc = pd.DataFrame({"experiment": exp, "case": p["case"].to_numpy(), "strategy": p["strategy"].to_numpy(),
                                "variant": "", "kind": p["kind"].to_numpy(), "m": p["m"].to_numpy(),
                                "measured_ms": m, "source": p["source"].to_numpy(),
                                "predicted_ms": p["makespan_ms"].to_numpy(), "registered": True})
            acc["error"] = acc["predicted_ms"] / acc["measured_ms"] - 1
            (out / f"{exp}{suffix}").mkdir(parents=True)
            acc.to_csv(out / f"{exp}{suffix}" / "accuracy.csv", index=False)
    return out


def _met(c: pd.DataFrame) -> dict:
    """(claim, predictor) -> met; claims (e) and (f), per registration, both experiments' met (the H = 8192 row's
    predictor named by the profile's suffix, as (a)-(d) name it)."""
    names = {f"{e}{s}": n for e in J.EXPERIMENTS for s, n in J.PROFILES.items()}
    out: dict = {}
    for r in c.itertuples():
        key = (r.claim, names.get(r.predictor, r.predictor))
        out[key] = out.get(key, True) and bool(r.met)
    return out


def test_where_the_per_variant_fits_are_right_they_alone_meet_their_claims(tmp_path):
    c = _met(J.claims(J.rows(_reports(tmp_path, "-calibrated"))))
    assert c[("d", "per-variant")] and c[("e", "per-variant")] and c[("f", "per-variant")]
    assert not c[("a", "mechanism")]  # the mechanism profile is 4-20% over the fits on the one-CTA-per-tile grids
    assert c[("b", "survival")] and c[("c", "survival-gap")]  # each step toward the fits is nearer


def test_where_the_survival_law_is_right_the_fits_miss(tmp_path):
    c = _met(J.claims(J.rows(_reports(tmp_path, "-survival", scale=1.0))))
    assert c[("b", "survival")] and not c[("c", "survival-gap")] and not c[("d", "per-variant")]
    assert c[("e", "survival")] and c[("a", "mechanism")]  # within 3% / 6% of a law 0-4% away


def test_the_judge_writes_claims_and_refuses_a_missing_or_foreign_report(tmp_path, capsys):
    reports = _reports(tmp_path, "")
    assert J.main(["--reports", str(reports), "--out", str(tmp_path / "out")]) == 0
    claims = pd.read_csv(tmp_path / "out" / "claims.csv")
    assert set(claims["claim"]) == {"a", "a worst", "b", "c", "d", "e", "f"}
    assert set(claims.loc[claims["claim"] == "f", "predictor"]) == set(J.REGISTRATIONS)
    assert len(pd.read_csv(tmp_path / "out" / "rows.csv")) == 4 * (3 + 2) * 7
    (reports / "reg82-ctapipe-h10240-survival" / "accuracy.csv").unlink()
    assert J.main(["--reports", str(reports), "--out", str(tmp_path / "o2")]) == 2
    assert "reg82-ctapipe-h10240-survival" in capsys.readouterr().err and not (tmp_path / "o2").exists()
    acc = pd.read_csv(reports / "reg82-ctapipe-h8192" / "accuracy.csv")
    acc.loc[0, "registered"] = False
    acc.to_csv(reports / "reg82-ctapipe-h8192" / "accuracy.csv", index=False)
    assert J.main(["--reports", str(reports), "--out", str(tmp_path / "o3")]) == 2
    assert "not labelled registered" in capsys.readouterr().err


def test_a_report_of_other_rows_or_times_or_without_the_naive_line_is_refused(tmp_path):
    reports = _reports(tmp_path, "")
    f = reports / "reg82-ctapipe-h8192-calibrated" / "accuracy.csv"
    good = pd.read_csv(f)
    good[good["strategy"] != "tp"].to_csv(f, index=False)
    with pytest.raises(ValueError, match="judges other rows or times"):
        J.rows(reports)
    other = good.copy()
    other.loc[other.index[0], "measured_ms"] *= 1.1
    other.to_csv(f, index=False)
    with pytest.raises(ValueError, match="judges other rows or times"):
        J.rows(reports)
    good[~((good["source"] == "naive") & (good["strategy"] == "tp"))].to_csv(f, index=False)
    with pytest.raises(ValueError, match="without the naive line"):
        J.rows(reports)


def test_the_fastest_strategy_counts_a_predicted_tie_as_either_pick():
    """Claim (e): measured fastest predicted within 0.5% of the predicted fastest agrees, 0.6% behind does not."""
    def df(pred_b):
        rows = [("a", 1.00, 1.00), ("b", 0.99, pred_b)]  # b measured fastest
        return pd.DataFrame([dict(experiment=e, predictor=n, case="m=1", strategy=s, measured_ms=m, predicted_ms=p,
                                  error=p / m - 1, naive_error=0.5, pipelined=True, one_cta=True)
                             for e in J.EXPERIMENTS for n in J.PROFILES.values() for s, m, p in rows])
    e = J.claims(df(1.004)).query("claim == 'e'")
    assert len(e) == 8 and e["met"].all()
    assert not J.claims(df(1.006)).query("claim == 'e'")["met"].any()


@pytest.mark.parametrize("suffix", ["-survival-gap", "-calibrated"])
def test_a_registration_is_what_its_profile_gives(suffix, tmp_path):
    """The committed H = 10240 registrations re-predicted (no schedules): the same table, the profile they name."""
    import json

    from ctasim.cli import main as ctasim

    reg = ROOT / "bench/predictions" / f"reg82-ctapipe-h10240{suffix}"
    hw = json.loads((reg / "registration.json").read_text())["hardware"]
    assert hw == {"-survival-gap": "h200-x2-mechanism-survival-gap", "-calibrated": "h200-x2-calibrated"}[suffix]
    assert ctasim(["predict", "reg82-ctapipe-h10240", "--hardware", hw, "--out", str(tmp_path / "r"), "--no-schedules",
                   "--naive-from", str(ROOT / "bench/results/hw/2026-11-29-run2/baselines.csv")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "r" / "predictions.csv"), pd.read_csv(reg / "predictions.csv"))
