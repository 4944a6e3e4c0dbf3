"""bench/plan42_judge.py: registered plan 42's claims (shared-device rings, the L2/HBM/clock shared among the
computing kernels, judged beside plan 40's even split) -- the committed judgement is what the judge writes from the
committed reports, a missing or foreign report is refused before anything is written, and claim (j) (the model fast
at the gap case) turns unmet when the model's errors there are made positive."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import load_bench

ROOT = Path(__file__).resolve().parent.parent
J = load_bench("plan42_judge")
COMMITTED = ROOT / "bench/results/validation-registered42"


def _model_met(c: pd.DataFrame) -> dict[str, bool]:
    """The model's claims by their letter (every row of a letter met)."""
    m = c[c["predictor"] == "model"]
    return {letter: bool(g["met"].all()) for letter, g in m.groupby(m["claim"].str[:2])}


def _row(c: pd.DataFrame, prefix: str, predictor: str = "model") -> pd.Series:
    (i,) = c.index[c["claim"].str.startswith(prefix) & (c["predictor"] == predictor)]
    return c.loc[i]


@pytest.fixture(scope="module")
def committed():
    return J.read_reports(COMMITTED)


@pytest.mark.parametrize("folder", [COMMITTED, COMMITTED.with_name(COMMITTED.name + "-run2")], ids=["run1", "run2"])
def test_the_committed_judgement_is_what_the_judge_writes(folder, tmp_path, capsys):
    assert J.main([str(folder), "--out", str(tmp_path)]) == 0
    for name in ("claims.csv", "groups.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / name), pd.read_csv(folder / name))
    assert "j: mean signed error" in capsys.readouterr().out


def test_on_the_second_machine_h_misses_on_its_mape_and_the_even_split_leads_on_groups_2_to_8():
    c = pd.read_csv(COMMITTED.with_name(COMMITTED.name + "-run2") / "claims.csv")
    assert not _row(c, "h: MAPE")["met"] and _row(c, "h: worst")["met"] and _row(c, "j:")["met"]
    assert _row(c, "i:")["value"] > 1.0  # the model's MAPE over groups 2-8 above the even split's


def test_as_committed_h_and_j_are_met_and_g_and_i_missed():
    c = pd.read_csv(COMMITTED / "claims.csv")
    model = _model_met(c)
    # what the commit judging plan 42 reports: (a), (c), (e), (f), (h), (j) met; (b), (d), (g), (i) missed
    assert model["h:"] and model["j:"] and model["a:"] and model["c:"] and model["e:"] and model["f:"]
    assert not (model["g:"] or model["i:"] or model["b:"] or model["d:"])
    assert _row(c, "j:")["value"] < 0 and _row(c, "g:")["value"] > 0
    assert abs(_row(c, "h: worst")["value"]) <= 6.0 and _row(c, "h: MAPE")["value"] <= 3.0
    assert "even split" in set(c["predictor"])  # plan 40's claims (a)-(d) for the even split, reported beside


def test_the_claims_from_the_reports_in_memory_match_the_committed_file(committed):
    active, even = committed
    got = J.claims(active, even)
    want = pd.read_csv(COMMITTED / "claims.csv")
    assert list(got["claim"] + got["predictor"]) == list(want["claim"] + want["predictor"])
    assert (got["met"].to_numpy() == want["met"].to_numpy()).all()
    assert got["value"].to_numpy() == pytest.approx(want["value"].to_numpy(), rel=1e-5)


def _copy(tmp_path) -> Path:
    folder = tmp_path / "reports"
    shutil.copytree(COMMITTED, folder, ignore=shutil.ignore_patterns("*.png"))
    return folder


def _refused(capsys, argv, out: Path) -> str:
    with pytest.raises(SystemExit) as ex:
        J.main(argv)
    assert ex.value.code == 2 and not out.exists()  # nothing written
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) <= 2  # one line (and the usage line)
    return err


def test_a_missing_even_report_is_refused_and_nothing_is_written(tmp_path, capsys):
    folder = _copy(tmp_path)
    (folder / "reg42-ring-shared-l3-even" / "accuracy.csv").unlink()
    out = tmp_path / "out"
    err = _refused(capsys, [str(folder), "--out", str(out)], out)
    assert "reg42-ring-shared-l3-even" in err and "no such file" in err


def test_a_foreign_report_is_refused_and_nothing_is_written(tmp_path, capsys):
    folder = _copy(tmp_path)
    shutil.copy(folder / "reg42-ring-shared-l2-even" / "accuracy.csv", folder / "reg42-ring-shared-l4-even")
    out = tmp_path / "out"
    err = _refused(capsys, [str(folder), "--out", str(out)], out)
    assert "holds ['reg42-ring-shared-l2'], not reg42-ring-shared-l4" in err


def test_an_unregistered_report_is_refused(tmp_path, capsys):
    folder = _copy(tmp_path)
    path = folder / "reg42-ring-shared-l3" / "accuracy.csv"
    pd.read_csv(path).assign(registered=False).to_csv(path, index=False)
    out = tmp_path / "out"
    assert "not labelled registered" in _refused(capsys, [str(folder), "--out", str(out)], out)


def test_an_even_split_judging_other_rows_is_refused(committed):
    active, even = committed
    with pytest.raises(ValueError, match="do not judge the same rows"):
        J.claims(active, even.iloc[1:])


def _shift_gap(active, points: float):
    """The ``-active`` reports with the model's error at the gap case's groups 2, 4, 8 moved by ``points``."""
    out = []
    for acc, per in active:
        acc = acc.copy()
        gap = ((acc["experiment"] == J.GAP_CASE[0]) & (acc["case"] == J.GAP_CASE[1]) & (acc["source"] == "model")
               & acc["strategy"].isin(J.GROUPS))
        acc.loc[gap, "error"] += points / 100
        out.append((acc, per))
    return out


def test_j_turns_unmet_when_the_model_is_slow_at_the_gap_case(committed):
    active, even = committed
    base = _row(J.claims(active, even), "j:")
    assert base["met"] and base["value"] == pytest.approx(-2.92157, abs=1e-4)
    assert _row(J.claims(_shift_gap(active, 2.0), even), "j:")["met"]  # still below 0: -0.92
    for points in (3.0, 5.0):  # the mean error moves by the shift: +0.08, +2.08
        j = _row(J.claims(_shift_gap(active, points), even), "j:")
        assert j["value"] == pytest.approx(base["value"] + points, abs=1e-6)
        assert not j["met"]


def test_j_is_not_met_when_a_group_of_the_gap_case_is_missing(committed):
    active, even = committed
    cut = []
    for acc, per in active:
        drop = ((acc["experiment"] == J.GAP_CASE[0]) & (acc["case"] == J.GAP_CASE[1]) & (acc["strategy"] == "ring-g4"))
        cut.append((acc[~drop], per))
    keep = ~((even["case"] == J.GAP_CASE[1]) & (even["experiment"] == J.GAP_CASE[0]) & (even["strategy"] == "ring-g4"))
    j = _row(J.claims(cut, even[keep]), "j:")
    assert pd.isna(j["value"]) and not j["met"]


def _independent_g_to_i(acc_files: list[Path], even_files: list[Path]) -> dict[str, float]:
    """Claims (g)-(i)'s values recomputed from the reports' accuracy tables by hand (not through the judge)."""
    m = pd.concat([pd.read_csv(f) for f in acc_files]).query("source == 'model'")
    e = pd.concat([pd.read_csv(f) for f in even_files]).query("source == 'model'")
    groups = ["ring-g2", "ring-g4", "ring-g8"]
    mg, eg = m[m.strategy.isin(groups)], e[e.strategy.isin(groups)]
    return {"g": 100 * (m.error.abs().mean() - e.error.abs().mean()), "h": 100 * mg.error.abs().mean(),
            "h_worst": 100 * mg.error.abs().max(), "i": mg.error.abs().mean() / eg.error.abs().mean(),
            "rows": len(m), "group_rows": len(mg)}


@pytest.mark.parametrize("folder", [COMMITTED, COMMITTED.with_name(COMMITTED.name + "-run2")], ids=["run1", "run2"])
def test_g_to_i_are_what_the_accuracy_tables_give(folder):
    names = [f"reg42-ring-shared-{t}" for t in ("l2", "l3", "l4")]
    v = _independent_g_to_i([folder / n / "accuracy.csv" for n in names],
                            [folder / f"{n}-even" / "accuracy.csv" for n in names])
    assert (v["rows"], v["group_rows"]) == (16, 12)  # the registered rows, every one measured
    c = J.claims(*J.read_reports(folder))
    assert _row(c, "g:")["value"] == pytest.approx(v["g"], abs=1e-9)
    assert _row(c, "h: MAPE")["value"] == pytest.approx(v["h"], abs=1e-9)
    assert abs(_row(c, "h: worst")["value"]) == pytest.approx(v["h_worst"], abs=1e-9)
    assert _row(c, "i:")["value"] == pytest.approx(v["i"], abs=1e-12)
    assert _row(c, "h: MAPE")["met"] == (v["h"] <= 3.0) and _row(c, "i:")["met"] == (v["i"] <= 0.5)


def _scaled(active, even, model_factor: float):
    """The reports with every model error of the groups 2-8 scaled so that their MAPE is ``model_factor`` x the even
    split's over those rows (a boundary case for (i))."""
    acc = pd.concat([a for a, _ in active], ignore_index=True)
    rows = (acc["source"] == "model") & acc["strategy"].isin(J.GROUPS)
    target = model_factor * even[even["strategy"].isin(J.GROUPS)]["error"].abs().mean()
    out = []
    for a, per in active:
        a = a.copy()
        r = (a["source"] == "model") & a["strategy"].isin(J.GROUPS)
        a.loc[r, "error"] *= target / acc.loc[rows, "error"].abs().mean()
        out.append((a, per))
    return out


def test_i_is_met_at_exactly_half_and_not_above(committed):
    active, even = committed
    assert _row(J.claims(_scaled(active, even, 0.5), even), "i:")["met"]
    assert not _row(J.claims(_scaled(active, even, 0.5001), even), "i:")["met"]


def test_a_missing_row_leaves_g_to_i_unmet(committed):
    """A registered row that did not come back (a failed run) is not dropped from the averages: (g)-(i) miss."""
    active, even = committed
    better = _scaled(active, even, 0.1)  # would meet (h) and (i)
    c = J.claims(better, even)
    assert _row(c, "h: MAPE")["met"] and _row(c, "i:")["met"]
    cut = []
    for acc, per in better:
        drop = (acc["case"] == "m=3072,layers=2") & (acc["strategy"] == "ring-g8")
        cut.append((acc[~drop], per))
    keep = ~((even["case"] == "m=3072,layers=2") & (even["strategy"] == "ring-g8"))
    c = J.claims(cut, even[keep])
    assert not (_row(c, "h: MAPE")["met"] or _row(c, "i:")["met"] or _row(c, "h: worst")["met"])


def test_a_report_without_its_error_column_is_refused(tmp_path, capsys):
    folder = _copy(tmp_path)
    path = folder / "reg42-ring-shared-l3-even" / "accuracy.csv"
    pd.read_csv(path).drop(columns="error").to_csv(path, index=False)
    out = tmp_path / "out"
    assert "no column error" in _refused(capsys, [str(folder), "--out", str(out)], out)
