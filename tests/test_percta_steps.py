"""ctasim.calibration's one-CTA-per-tile steps (percta_steps, percta_medians) on hand-built tile tables with known
answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ctasim import calibration as C

# A static grid of SLOTS concurrent CTAs; every figure differs between waves 0-1 and later waves, so a wrong wave
# boundary, a median over all waves or a turnover against the wrong exit gives another answer.
SLOTS, WAVES = 3, 4  # as many tiles in waves 0-1 as later: a median over all waves is neither
LAUNCH, ACQUIRE = 500, 64  # previous CTA's exit -> next CTA's start; start -> tile acquired
EARLY = dict(mainloop=1000, epilogue=900, store=700, signal=0)
LATE = dict(mainloop=1600, epilogue=200, store=40, signal=300)


def grid_tiles(slots: int = SLOTS, waves: int = WAVES, late_signal_first: bool = False) -> pd.DataFrame:
    """CTA i runs in wave i // slots on SM (i + wave) % slots (not i % slots), right after the CTA before it on that
    SM; rows shuffled."""
    exit_of = {}
    rows = []
    for cta in range(slots * waves):
        wave = cta // slots
        sm = (cta + wave) % slots
        st = EARLY if wave <= 1 else LATE
        t_start = exit_of[sm] + LAUNCH if sm in exit_of else 10 * sm
        t_acq = t_start + ACQUIRE
        t_ml = t_acq + st["mainloop"]
        t_ce = t_ml + st["epilogue"]
        t_se = t_ce + st["store"]
        t_sig = t_se + st["signal"]
        if late_signal_first and wave >= 2:  # a stamp order where the store ends last: exit is the later one
            t_se, t_sig = t_sig, t_se
        exit_of[sm] = max(t_se, t_sig)
        rows.append(dict(cta=cta, sm=sm, t_start=t_start, t_acquire=t_acq, t_mainloop_end=t_ml, t_compute_end=t_ce,
                         t_store_end=t_se, t_signal=t_sig))
    t = pd.DataFrame(rows).astype(float)
    return t.sample(frac=1.0, random_state=3).reset_index(drop=True)


def test_the_steps_of_a_known_grid():
    s = C.percta_steps(grid_tiles(), SLOTS)
    assert s["tiles"] == SLOTS * WAVES and s["waves"] == WAVES and s["late_tiles"] == SLOTS * (WAVES - 2)
    assert s["mainloop_early_ns"] == EARLY["mainloop"]
    assert s["mainloop_late_ns"] == LATE["mainloop"]
    assert s["epilogue_ns"] == LATE["epilogue"]
    assert s["store_ns"] == LATE["store"]
    assert s["signal_ns"] == LATE["signal"]
    assert s["held_ns"] == LATE["store"] + LATE["signal"]
    # turnover: acquire of a CTA after the exit (store end or signal, the later) of the CTA before it on its SM
    assert s["turnover_ns"] == LAUNCH + ACQUIRE
    assert s["turnover_pairs"] == SLOTS * (WAVES - 1)


def test_the_exit_is_the_later_of_store_end_and_signal():
    s = C.percta_steps(grid_tiles(late_signal_first=True), SLOTS)
    assert s["turnover_ns"] == LAUNCH + ACQUIRE
    assert s["held_ns"] == LATE["store"] + LATE["signal"]
    assert s["signal_ns"] == -LATE["signal"]  # signal - store end, as stamped


def test_the_turnover_pairs_ctas_of_one_sm_in_start_order():
    t = grid_tiles()
    exits = C.percta_table(t, SLOTS).sort_values("t_start")
    turn = C.percta_turnover(C.percta_table(t, SLOTS))
    assert len(turn) == SLOTS * (WAVES - 1) and (turn == LAUNCH + ACQUIRE).all()
    # one slow relaunch on one SM moves exactly one pair
    sm0 = exits[exits.sm == 0]
    later = sm0.index[2:]
    t.loc[later, ["t_start", "t_acquire", "t_mainloop_end", "t_compute_end", "t_store_end", "t_signal"]] += 10_000
    turn = np.sort(C.percta_turnover(C.percta_table(t, SLOTS)))
    assert turn[-1] == LAUNCH + ACQUIRE + 10_000 and (turn[:-1] == LAUNCH + ACQUIRE).all()


def test_the_waves_are_the_ctas_index_over_the_slots():
    # the same tiles read as a grid of 5 slots: waves 0-1 are CTAs 0-9, so the early mainloop takes in wave 2 and 3
    s = C.percta_steps(grid_tiles(), 5)
    assert s["waves"] == 3
    assert s["mainloop_early_ns"] == np.median([EARLY["mainloop"]] * 6 + [LATE["mainloop"]] * 4)


def test_too_few_waves_or_a_missing_column_is_one_line():
    with pytest.raises(ValueError, match="2 grid wave"):
        C.percta_steps(grid_tiles(waves=2), SLOTS, "short")
    with pytest.raises(ValueError, match="no column t_signal"):
        C.percta_steps(grid_tiles().drop(columns="t_signal"), SLOTS)
    with pytest.raises(ValueError, match="CTA slots"):
        C.percta_table(grid_tiles(), 0)


def test_the_medians_over_runs_and_their_range():
    runs = []
    for i, (ep, turn) in enumerate(((2000, 1100), (1800, 1300), (2200, 900))):
        runs.append(dict(m=4096, variant="a", run=i, epilogue_ns=ep, turnover_ns=turn,
                         **{c: 10.0 * (i + 1) for c in C.PERCTA_STEPS if c not in ("epilogue_ns", "turnover_ns")},
                         span_ns=1e6 + i))
    runs.append(dict(m=16384, variant="a", run=0, epilogue_ns=5.0, turnover_ns=6.0,
                     **{c: 7.0 for c in C.PERCTA_STEPS if c not in ("epilogue_ns", "turnover_ns")}, span_ns=8.0))
    med = C.percta_medians(pd.DataFrame(runs)).set_index("m")
    assert med.loc[4096, "runs"] == 3 and med.loc[16384, "runs"] == 1
    assert med.loc[4096, "epilogue_ns"] == 2000 and med.loc[4096, "turnover_ns"] == 1100
    assert med.loc[4096, "epilogue_min_ns"] == 1800 and med.loc[4096, "epilogue_max_ns"] == 2200
    assert med.loc[4096, "turnover_min_ns"] == 900 and med.loc[4096, "turnover_max_ns"] == 1300
    assert med.loc[4096, "store_ns"] == 20.0 and med.loc[4096, "span_ns"] == 1e6 + 1
    assert med.loc[16384, "epilogue_ns"] == 5.0
    with pytest.raises(ValueError, match="no column span_ns"):
        C.percta_medians(pd.DataFrame(runs).drop(columns="span_ns"))
    with pytest.raises(ValueError, match="no traced runs"):
        C.percta_medians(pd.DataFrame(runs).iloc[:0])


PROBE = Path(__file__).resolve().parent.parent / "bench/results/hw/2026-12-02-percta-probe"


def test_the_committed_probe_tables_give_their_runs_steps_and_the_medians_their_runs():
    runs, cases = pd.read_csv(PROBE / "percta-runs.csv"), pd.read_csv(PROBE / "percta.csv")
    assert len(cases) == 8 and set(cases.m) == {4096, 16384}
    for c in cases.itertuples():
        kept = runs[(runs.m == c.m) & (runs.variant == c.variant) & (runs.run == c.kept_run)].iloc[0]
        got = C.percta_steps(pd.read_csv(PROBE / f"percta-tiles-{c.m}-{c.variant}.csv.gz"), int(c.slots))
        for k, v in got.items():
            assert v == pytest.approx(kept[k], abs=1e-6), (c.m, c.variant, k)
    med = C.percta_medians(runs).set_index(["m", "variant"])
    for c in cases.itertuples():
        for step in C.PERCTA_STEPS:
            assert med.loc[(c.m, c.variant), step] == getattr(c, step)
