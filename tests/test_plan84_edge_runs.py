"""bench/plan84_edge_runs.py: registered plan 84's registration (the model's range per H), its judge on made-up
H100 calls whose runs keep or lose their reuse by known ratios, and calls it must refuse (no GPU)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import load_bench
from tests.test_plan83_alone_edge import ENV


@pytest.fixture(scope="module")
def p84():
    return load_bench("plan84_edge_runs")


@pytest.fixture(scope="module")
def registered(p84):
    return pd.read_csv(p84.REGISTERED / "predicted.csv")


def test_the_registration_is_plan_83s_lockstep_and_profile_levels(p84, registered):
    assert list(registered.h) == list(p84.HS) and (registered.runs == 15).all()
    # H = 9216 is in plan 83's registration too: the same two levels (its full waves >= 2)
    p83 = pd.read_csv(load_bench("plan83_alone_edge").REGISTERED / "predicted.csv")
    q = p83[(p83.gpu == "H100") & (p83.h == 9216) & (p83.variant == p84.VARIANT) & (p83.wave >= 2)
            & (p83.wave <= 16384 // 128 * 36 // 132 - 1)]
    row = registered.set_index("h").loc[9216]
    assert row.lockstep_us == pytest.approx(q[q.predictor == "lockstep"].us.mean(), abs=1e-3)
    assert row.profile_us == pytest.approx(q[q.predictor == "profile"].us.mean(), abs=1e-3)
    assert (registered.lost_ratio.between(1.9, 2.2)).all()


def _call(p84, run, ratios, gpu="H100", runs=15):
    """A made-up call: per H the traced runs' late mainloops ``ratios[h]`` (one per run) times an early one of 100 us,
    and each untraced run's time 4 ms times its ratio."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "env.txt").write_text("index, name, uuid\n" + ENV[gpu] + "\n")
    for h in p84.HS:
        r = np.resize(np.asarray(ratios[h], dtype=float), runs)
        (run / f"OUT_H{h}").mkdir()
        pd.DataFrame({"m": 16384, "variant": p84.VARIANT, "run": np.arange(runs), "plain_ms": 4.0 * r,
                      "trace_ms": 4.0 * r, "mainloop_early_ns": 100_000.0, "mainloop_late_ns": 100_000.0 * r}).to_csv(
            run / f"OUT_H{h}" / "percta-runs.csv", index=False)
    return run


def _judge(p84, run, tmp_path):
    out = tmp_path / "judged"
    assert p84.main(["--judge", str(run), "--out", str(out)]) == 0
    return pd.read_csv(out / "cases.csv"), pd.read_csv(out / "claims.csv").set_index("claim")


EDGE_RUNS = {8704: [1.2, 1.25, 1.3], 9216: [1.15, 1.3, 1.4, 1.95, 1.3], 9728: [1.9, 1.95, 2.0, 1.4]}
"""Partly lost at 8704, a coin toss at 9216, mostly lost at 9728: what plan 84's claims say."""


def test_a_call_with_an_edge_meets_every_claim(p84, tmp_path):
    c, cl = _judge(p84, _call(p84, tmp_path / "run", EDGE_RUNS), tmp_path)
    assert cl.met.all(), cl
    assert list(c.lost_share.round(3)) == [0.0, 0.2, 0.8]
    assert cl.loc["b", "value"] == "ratios 1.15-1.95, times 4.60-7.80 ms (70%)"


def test_a_call_without_an_edge_misses_them(p84, tmp_path):
    runs = {8704: [1.05], 9216: [1.3], 9728: [1.3, 2.5]}  # no spread at the edge, kept at 8704, a run past the range
    c, cl = _judge(p84, _call(p84, tmp_path / "run", runs), tmp_path)
    assert list(cl.met) == [False, False, False, False, False]
    assert c.set_index("h").loc[9728, "outside"] == 7  # runs 1, 3, ..., 13 at 2.5: over the full miss x 1.05


@pytest.mark.parametrize("damage, message", [
    (lambda run: (run / "env.txt").unlink(), "run/env.txt (plan 84's call"),
    (lambda run: (run / "env.txt").write_text(ENV["H200"] + "\n"), "names an H200; plan 84 is an H100's"),
    (lambda run: (run / "OUT_H9728" / "percta-runs.csv").unlink(), "OUT_H9728/percta-runs.csv (plan 84's call"),
    (lambda run: pd.read_csv(run / "OUT_H8704" / "percta-runs.csv").iloc[:-1].to_csv(
        run / "OUT_H8704" / "percta-runs.csv", index=False), "14 runs of cutlass_ctapipe, not the 15"),
    (lambda run: pd.read_csv(run / "OUT_H8704" / "percta-runs.csv").assign(mainloop_late_ns=-1).to_csv(
        run / "OUT_H8704" / "percta-runs.csv", index=False), "mainloop_late_ns of H = 8704 run 0 is -1"),
])
def test_a_call_it_cannot_judge_is_refused_in_one_line(p84, tmp_path, capsys, damage, message):
    run = _call(p84, tmp_path / "run", EDGE_RUNS)
    damage(run)
    out = tmp_path / "judged"
    assert p84.main(["--judge", str(run), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("plan84_edge_runs: ") and message in err and "\n" not in err, err
    assert not out.exists()


def test_the_edge_needs_both_the_ratios_and_the_times_to_spread(p84, tmp_path):
    c, _ = _judge(p84, _call(p84, tmp_path / "run", EDGE_RUNS), tmp_path)
    for ratio_span, times in ((0.8, (4.0, 4.2)), (0.1, (4.0, 6.0)), (0.8, (4.0, 6.0))):
        d = c.copy()
        edge = d.h == p84.EDGE
        d.loc[edge, "ratio_max"] = d.loc[edge, "ratio_min"] + ratio_span
        d.loc[edge, ["plain_ms_min", "plain_ms_max"]] = times
        met = p84.claims(d, "post-hoc").set_index("claim").loc["b", "met"]
        assert met == (ratio_span >= 0.3 and times[1] / times[0] >= 1.15)


@pytest.mark.parametrize("claim, column, h, value, met", [
    ("c", "ratio_median", 8704, 1.09, False), ("c", "ratio_median", 8704, 1.11, True),
    ("c", "ratio_median", 8704, 1.59, True), ("c", "ratio_median", 8704, 1.61, False),
    ("d", "lost_share", 8704, 0.9, False),  # more lost at 8704 than at 9216: the share falls as H grows
    ("d", "lost_share", 9728, 0.5, False), ("d", "lost_share", 9728, 0.55, True),
    ("e", "ratio_median", 9728, 2.0265 * 0.89, False), ("e", "ratio_median", 9728, 2.0265 * 0.91, True),
    ("e", "ratio_median", 9728, 2.0265 * 1.09, True), ("e", "ratio_median", 9728, 2.0265 * 1.11, False),
])
def test_each_claim_turns_at_its_edge(p84, tmp_path, claim, column, h, value, met):
    c, _ = _judge(p84, _call(p84, tmp_path / "run", EDGE_RUNS), tmp_path)
    c.loc[c.h == h, column] = value
    assert p84.claims(c, "post-hoc").set_index("claim").loc[claim, "met"] == met


def test_a_run_under_the_no_miss_level_is_outside_the_range(p84, tmp_path):
    runs = {**EDGE_RUNS, 8704: [1.2, 0.9, 1.3]}
    c, cl = _judge(p84, _call(p84, tmp_path / "run", runs), tmp_path)
    assert c.set_index("h").loc[8704, "outside"] == 5 and not cl.loc["a", "met"]


def test_the_committed_h100_call_judges_as_committed(p84, tmp_path):
    """The call (bench/results/hw-h100/2026-12-06-registered84-1gpu) judged again gives the committed tables, and what
    docs/validation.md reads off them: (a), (b) and (e) met, (c) and (d) missed, as registered."""
    root = p84.ROOT
    run = root / "bench/results/hw-h100/2026-12-06-registered84-1gpu"
    c, cl = _judge(p84, run, tmp_path)
    assert (tmp_path / "judged" / "cases.csv").read_text() == (
        root / "bench/results/validation-registered84/cases.csv").read_text()
    assert list(cl.met) == [True, True, False, False, True]
    assert cl.provenance.str.startswith("registered: predictions added in 5d7e36e9").all()
    committed = pd.read_csv(root / "bench/results/validation-registered84/claims.csv").set_index("claim")
    assert cl.drop(columns="provenance").equals(committed.drop(columns="provenance"))


def test_docs_quote_the_committed_runs(p84):
    """docs/validation.md's plan 84 table is the committed cases.csv: each H's ratios, lost runs, range and times."""
    doc = (p84.ROOT / "docs/validation.md").read_text().split("### Registered plan 84")[1].split("\n### ")[0]
    c = pd.read_csv(p84.ROOT / "bench/results/validation-registered84/cases.csv")
    for r in c.itertuples():
        line = next(x for x in doc.splitlines() if x.startswith(f"| {r.h} | "))
        want = (f"| {r.h} | {r.ratio_min:.2f} / {r.ratio_median:.2f} / {r.ratio_max:.2f} | "
                f"{round(r.lost_share * r.runs)} of {r.runs} | {r.range_lo:.2f}-{r.range_hi:.2f} | "
                f"{r.plain_ms_min:.2f} / {r.plain_ms_median:.2f} / {r.plain_ms_max:.2f} |")
        assert line == want, (line, want)
