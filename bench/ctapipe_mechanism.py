"""The committed 2xH200 CTA-pipelining traces judged again under the mechanism profile, nothing refitted on them.

    python bench/ctapipe_mechanism.py [--out bench/results/validation-mechanism]

Every kept traced run of the six committed ctapipe runs (``ctasim.validation.pipeline``: the main run, -range,
-trace3, -run1, -rerun3, -clean; variant (a): one CTA per tile, clusters 1x1, 1x2, 2x1 + 1x2) is simulated by
``ctasim.validation.ctapipe.judge`` on:

* ``mechanism``: ``specs/hardware/h200-x2-mechanism.toml``, one config for every variant of the kernel (no
  per-variant figure; the tiles' times from the memory hierarchy of the order each grid walks and the
  one-CTA-per-tile grid's start-time spread);
* ``hold state``: the same with the threshold law in its least-missing consistent state (``ticket_state = "hold"``,
  ``ctasim.l2.TICKET_STATES``; the profile takes the most-missing, "thrash"). Added on 2026-12-06;
* ``partition law``: the same with the family config under the ticket law ``"partition"``
  (``Hardware.with_ticket_law``; ``ctasim.l2.TICKET_LAWS``: the one-H200 profile's and the chain config's here since
  registered plan 49, tested on the chain kernel's tickets only; this profile keeps ``"threshold"`` for the family
  config because of this row);
* ``survival law``, ``survival law, gap spread`` and ``survival law as adopted``: the same with every ticket-scheduled
  config under the one H200's ticket law of today (``h200-x1-calibrated``: the measured L2 survival curve, registered
  plan 53; as adopted after registered plan 58 with the sharers' gap spread 0.74 and the touched bytes 1.3,
  ``ctasim.l2.gap_survival``), and with the gap spread alone (touched 1.0) between the two: :func:`one_h200_law`.
  Added on 2026-12-06, after the mechanism profile's family config had kept the threshold law on this table;
* ``lockstep``: the same with the spread off (``ctasim.predict.without_drift``);
* ``kept level``: the same with the one-CTA-per-tile grids' ticket spread at 0 (``ctasim.advise.kept_reuse``: the
  low end of the range ``ctasim advise`` gives a ``ctapipe`` figure, the profile's level its high end). Added on
  2026-12-06; ``kept-range.csv`` places each measured makespan in that range (:func:`kept_range`);
* ``flat``: the same with the memory hierarchy off (every tile at the family config's ``sm_tflops``);
* ``per-variant``: the committed ``h200-x2-calibrated`` (4 kernel configs fitted per variant on the traces at
  M = 2048, 8192, 32768 of three of these runs: in-sample there);
* ``naive``: the slower layer plus one wave, ``(ceil(tiles / 132) + 1)`` tile times of ``h200-x2-calibrated``'s
  default 128x256 config (no events, nothing fitted on the traces).

Traces with a first-wave store stall (``ctasim.validation.ctapipe.STALL_NS``, judged on the per-variant profile) are
listed but left out of the summaries. Writes ``traces.csv`` (one row per trace and predictor), ``summary.csv`` (per
predictor: MAPE, worst, median start error), ``waves.csv`` (per trace and layer, the median tile time of selected
waves measured and simulated by the mechanism profile, its two refined survival laws and the per-variant fits) and ``family-fit.csv`` (what ``ctasim.validation.ctapipe.fit_family`` takes from the
traces for the mechanism profile's family config), and ``probe-waves.csv``: the producer alone on one H200
(``bench/results/hw/2026-12-02-percta-probe``, measured after the mechanism profile was committed), per wave,
measured against the profiles' tile times.
Every figure here is post-hoc: all of these traces were seen before the mechanism profile was written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctasim import costs  # noqa: E402
from ctasim.advise import kept_reuse  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import Waves, without_drift, without_memory  # noqa: E402
from ctasim.spec import Layer, load_hardware  # noqa: E402
from ctasim.validation import ctapipe as VC  # noqa: E402
from ctasim.validation.pipeline import CTAPIPE_ALSO, CTAPIPE_FIT_ALSO, CTAPIPE_RUN  # noqa: E402

RUNS = (CTAPIPE_RUN, *CTAPIPE_FIT_ALSO, *CTAPIPE_ALSO)
HW_DIR = ROOT / "bench/results/hw"
OUT = ROOT / "bench/results/validation-mechanism"
MECHANISM = "h200-x2-mechanism"
PER_VARIANT = "h200-x2-calibrated"
WAVES = (0, 1, 2, 4, 8, 12, 16, 24, 40, 60)


SURVIVAL_LAWS = {"survival law": ("h200-x2-mechanism-survival-gap", {"ticket_gap_cv": 0.0}),
                 "survival law, gap spread": ("h200-x2-mechanism-survival-gap", {}),
                 "survival law as adopted": ("h200-x2-mechanism-survival", {})}
"""The one H200's survival ticket law on the mechanism profile: plain (gap spread 0, touched 1), with the one H200's
gap spread alone (touched 1), and as that profile has it (its gap spread and touched bytes): the derived profiles of
registered plan 82 (``ctasim.profiles.MECHANISM_SURVIVAL``, which read them from ``h200-x1-calibrated``), the plain
form the gap-spread one without its spread."""


def one_h200_law(name: str):
    """The mechanism profile under the survival ticket law in the form ``name`` of :data:`SURVIVAL_LAWS`."""
    profile, changes = SURVIVAL_LAWS[name]
    hw = load_hardware(profile)
    return hw.with_tickets(**changes) if changes else hw


def load_runs(runs=RUNS) -> list[VC.MeasuredTrace]:
    out = []
    for r in runs:
        out += VC.load_folder(HW_DIR / r)
    return out


def naive_ms(mt: VC.MeasuredTrace, hw) -> float:
    """``ctasim.predict.Waves``' rule for CTA-pipelining, the slower layer plus one wave of the other (both layers
    M x 8192 x 8192), less the kernel's fixed time: a trace's clock starts at its first CTA."""
    layer = Layer(mt.m, VC.H, VC.H, *VC.TILE)
    waves = Waves()
    return waves.gemm_ms(layer, hw, 2) - hw.config(*VC.TILE).kernel_fixed_ns / 1e6 + waves.wave_ms(layer, hw, 2)


def _wave_medians(tiles: pd.DataFrame, slots: int) -> dict:
    """Per layer: median tile time (compute end - acquire) of the waves in WAVES, waves by grid position."""
    out = {}
    for layer, t in tiles.groupby("layer"):
        pos = np.where(t["slot"] < 0, t["cta"], t["slot"])
        wave = pos // slots
        d = (t["t_compute_end"] - t["t_acquire"]).to_numpy(float)
        for w in WAVES:
            sel = wave == w
            if sel.sum() == slots:
                out[(int(layer), w)] = float(np.median(d[sel]))
    return out


def judge_all(traces, profiles: dict, naive_hw) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows, waves = [], []
    slots = naive_hw.sm_count
    for name, hw in profiles.items():
        df, sims = VC.judge(traces, hw, fit_ms=())
        df["predictor"] = name
        rows.append(df)
        if name in ("mechanism", "survival law, gap spread", "survival law as adopted", "per-variant"):
            for mt in traces:
                meas = _wave_medians(mt.trace.tiles, slots)
                sim = _wave_medians(sims[(mt.run, mt.m, mt.variant)][1].tiles, slots)
                for (layer, w), v in meas.items():
                    if (layer, w) in sim:
                        waves.append({"run": mt.run, "m": mt.m, "variant": mt.variant, "layer": layer, "wave": w,
                                      "predictor": name, "measured_us": v / 1e3, "simulated_us": sim[(layer, w)] / 1e3})
    df = pd.concat(rows, ignore_index=True)
    stalled = df[df["predictor"] == "per-variant"].set_index(["run", "m", "variant"])["stalled"]
    df["stalled"] = [bool(stalled.get((r, m, v), False)) for r, m, v in zip(df["run"], df["m"], df["variant"])]
    nv = []
    for mt in traces:
        ms = naive_ms(mt, naive_hw)
        meas = float(df[(df["run"] == mt.run) & (df["m"] == mt.m) & (df["variant"] == mt.variant)]
                     ["makespan_meas_us"].iloc[0]) / 1e3
        nv.append({"run": mt.run, "m": mt.m, "variant": mt.variant, "predictor": "naive", "makespan_meas_us": meas * 1e3,
                   "makespan_sim_us": ms * 1e3, "makespan_error": ms / meas - 1.0,
                   "stalled": bool(stalled.get((mt.run, mt.m, mt.variant), False))})
    df = pd.concat([df, pd.DataFrame(nv)], ignore_index=True)
    df["fit_m"] = df["m"].isin(VC.FIT_MS) & df["run"].isin((CTAPIPE_RUN, *CTAPIPE_FIT_ALSO))
    return df, pd.DataFrame(waves)


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    out = []
    for (pred, subset), g in [((p, s), g) for p, g0 in df[~df["stalled"]].groupby("predictor", sort=False)
                              for s, g in (("all", g0), ("held-out M", g0[~g0["fit_m"]]))]:
        worst = g.loc[g["makespan_error"].abs().idxmax()]
        row = {"predictor": pred, "traces": subset, "n": len(g),
               "mape_pct": round(100 * g["makespan_error"].abs().mean(), 2),
               "worst_pct": round(100 * worst["makespan_error"], 2),
               "worst": f"{worst['run']} {worst['variant']} M={worst['m']}"}
        if "start_median_frac" in g and g["start_median_frac"].notna().any():
            row["start_median_pct_max"] = round(100 * g["start_median_frac"].max(), 2)
        for v, gv in g.groupby("variant"):
            row[f"mape_{v.removeprefix('cutlass_')}"] = round(100 * gv["makespan_error"].abs().mean(), 2)
        out.append(row)
    return pd.DataFrame(out)


def kept_range(df: pd.DataFrame) -> pd.DataFrame:
    """Per kept trace (no first-wave stall): the makespan at the kept level and at the profile's (``mechanism``), the
    measured one, its place in that range (``place``: 0 at the kept level, 1 at the profile's; NaN where the two
    agree to 0.1%) and whether it lies inside (``inside``: between the two ends, both included)."""
    t = df[~df["stalled"].astype(bool)]
    keys = ["run", "m", "variant"]
    w = t.pivot_table(index=keys, columns="predictor", values="makespan_sim_us")[["kept level", "mechanism"]]
    w.columns = ["kept_us", "profile_us"]
    w["measured_us"] = t.drop_duplicates(keys).set_index(keys)["makespan_meas_us"]
    width = w["profile_us"] - w["kept_us"]
    w["place"] = ((w["measured_us"] - w["kept_us"]) / width).where(width.abs() > 1e-3 * w["kept_us"])
    lo, hi = w[["kept_us", "profile_us"]].min(axis=1), w[["kept_us", "profile_us"]].max(axis=1)
    w["inside"] = (w["measured_us"] >= lo) & (w["measured_us"] <= hi)
    w["off_pct"] = 100 * (w["measured_us"].clip(lo, hi) - w["measured_us"]) / w["measured_us"]
    return w.reset_index().round(5)


PROBE = HW_DIR / "2026-12-02-percta-probe"
"""The one-CTA-per-tile producer alone on one H200 (``ctahw.percta``): its traced runs' tile tables."""


def probe_waves(mech, per_variant, folder: Path = PROBE) -> pd.DataFrame:
    """Per probe tile table and wave: the measured median tile time (acquire to compute end) against the mechanism
    profile's (its memory hierarchy over the probe's own order with the family config's ``ticket_spread``), the same
    without the spread (lockstep), under the partition ticket law (``Hardware.with_ticket_law``; the chain config
    has it already), under the one H200's survival law as adopted (:func:`one_h200_law`), in the threshold law's
    "hold" state (``hold_state``), the threshold law and
    that survival law again at the probe's own spread (``own_spread``, ``ctasim.calibration.span_rate`` of its
    windows; ``_own_spread`` columns), and the per-variant profile's (the variant's producer config: ``sm_tflops``,
    ``tile_fixed_ns`` and its wave slowdown). The producer alone: no remote store, no consumer."""
    from ctasim.variants import VARIANTS  # noqa: PLC0415

    fam = mech.config(*VC.TILE, kernel="ctapipe").ticket_spread
    partition, hold = mech.with_ticket_law("partition"), mech.with_tickets(ticket_state="hold")
    adopted = one_h200_law("survival law as adopted")
    rows = []
    for f in sorted(folder.glob("percta-tiles-*.csv.gz")):
        m, variant = f.name.removeprefix("percta-tiles-").removesuffix(".csv.gz").split("-", 1)
        m = int(m)
        t = pd.read_csv(f).sort_values("cta")
        layer = Layer(m, VC.H, VC.H, *VC.TILE)
        order = (t["tile_m"] * layer.tiles_n + t["tile_n"]).to_numpy(np.int64)
        slots = mech.sm_count
        wave = np.arange(len(t)) // slots
        meas = (t["t_compute_end"] - t["t_acquire"]).groupby(wave).median().to_numpy() / 1e3
        spans = VC.window_spans(t, slots)
        own = VC.span_rate(spans)  # the probe's own spread a wave (the family config's was fitted on the 2-GPU runs)
        model = {}
        for name, hw, spread in (("mechanism", mech, fam), ("lockstep", mech, 0.0), ("partition_law", partition, fam),
                                 ("survival_adopted", adopted, fam), ("mechanism_own_spread", mech, own),
                                 ("hold_state", hold, fam), ("survival_adopted_own_spread", adopted, own)):
            times = costs.order_tile_times(layer, hw, 2, order, slots, kernel="ctapipe", drift=0.0,
                                           ticket_spread=spread)
            model[name] = times[::slots][:len(meas)] / 1e3
        pv = per_variant.config(*VC.TILE, kernel=VARIANTS[variant].kernels[0]) if VARIANTS[variant].kernels else None
        if pv is not None:
            base = costs.gemm_tile_ns(layer, per_variant, 2, pv.kernel) / 1e3
            model["per_variant"] = base * np.array([pv.wave_factor(w) for w in range(len(meas))])
        for w in range(len(meas)):
            rows.append({"m": m, "variant": variant, "wave": w, "measured_us": meas[w], "own_spread": own,
                         "span": spans[w] if w < len(spans) else np.nan,
                         **{f"{k}_us": v[w] for k, v in model.items()}})
    return pd.DataFrame(rows)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/ctapipe_mechanism.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT))
    args = parse_outputs(ap, argv, folders=("--out",))
    mech = load_hardware(MECHANISM)
    per_variant = load_hardware(PER_VARIANT)
    profiles = {"mechanism": mech, "hold state": mech.with_tickets(ticket_state="hold"),
                "partition law": mech.with_ticket_law("partition"),
                **{name: one_h200_law(name) for name in SURVIVAL_LAWS}, "lockstep": without_drift(mech),
                "kept level": kept_reuse(mech), "flat": without_memory(mech), "per-variant": per_variant}
    traces = load_runs()
    df, waves = judge_all(traces, profiles, per_variant)
    fam_traces = [mt for mt in traces if mt.run in (CTAPIPE_RUN, *CTAPIPE_FIT_ALSO)]
    _, fam_ev = VC.fit_family(fam_traces, per_variant)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cols = ["predictor", "run", "m", "variant", "fit_m", "stalled", "makespan_meas_us", "makespan_sim_us",
            "makespan_error", "start_median_frac", "start_p95_frac"]
    df[cols].round(5).to_csv(out / "traces.csv", index=False)
    s = summarize(df)
    s.to_csv(out / "summary.csv", index=False)
    waves.round(2).to_csv(out / "waves.csv", index=False)
    kept_range(df[cols].round(5)).to_csv(out / "kept-range.csv", index=False)
    fam_ev.to_csv(out / "family-fit.csv", index=False)
    pw = probe_waves(mech, per_variant)
    pw.round(3).to_csv(out / "probe-waves.csv", index=False)
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(s.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
