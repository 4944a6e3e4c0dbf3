"""Registered plan 13: the one-CTA-per-tile producer alone on one GPU at H = 12288, predicted before it runs.

    python bench/percta_predict.py [--out bench/predictions/reg13-percta]            # the registration
    python bench/percta_predict.py --judge RUN_FOLDER [--out REPORT_FOLDER]           # against a measurement

The probe (``ctahw.percta``, ``python -m ctahw.percta OUT --h 12288 --ms 12288,16384 --variants ...``) runs the
producer kernel of a 2-GPU CTA-pipelining plan alone on one H200 (output, counters and queue in its memory, no
consumer). On the committed H = 8192 runs (``bench/results/hw/2026-12-02-percta-probe``) the row-order producer kept
the weights' L2 reuse, which the lockstep memory hierarchy says and the mechanism profile's ticket-spread rule and the
per-variant wave slowdown do not (post-hoc there: ``bench/ctapipe_mechanism.py``, ``probe-waves.csv``). This plan asks
the same at a new H, where a W panel is 6 MiB and a row-block's 48 panels are 288 MiB, with three predictors of the
mean over full waves >= 2 of each wave's median tile time (acquire to compute end):

* ``lockstep``: ``h200-x2-mechanism``'s memory hierarchy over the probe's order without the spread;
* ``mechanism``: the same with the family config's ``ticket_spread`` (``ctasim.l2.ticket_rereads``);
* ``per_variant``: ``h200-x2-calibrated``'s config of the variant's producer (its ``sm_tflops``, ``tile_fixed_ns`` and
  fitted wave slowdown).

Judging rules (fixed with the registration): per case, each predictor's relative error of that mean; the claim under
test is that ``lockstep`` is within 5% in every case and ``mechanism`` more than 20% too slow on the row-order cases
(``cutlass_ctapipe``); reported whatever they are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctasim import costs  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.plan import named_order, raster_order  # noqa: E402
from ctasim.predict import git_commit  # noqa: E402
from ctasim.spec import Layer, load_hardware  # noqa: E402
from ctasim.variants import VARIANTS  # noqa: E402

H = 12288
MS = (12288, 16384)
CASES = ("cutlass_ctapipe", "cutlass_ctapipe_c21")
SLOTS = 132
OUT = ROOT / "bench/predictions/reg13-percta"
CLAIM_LOCKSTEP, CLAIM_MECHANISM = 0.05, 0.20


def order_of(variant: str, tiles_m: int, tiles_n: int) -> np.ndarray:
    """The producer's tile order: the plan's row order, or the variant's named order."""
    o = VARIANTS[variant].order
    return raster_order(tiles_m, tiles_n, "row") if o == "plan" else named_order(o, tiles_m, tiles_n)


def wave_predictions(m: int, variant: str) -> pd.DataFrame:
    mech = load_hardware("h200-x2-mechanism")
    per_variant = load_hardware("h200-x2-calibrated")
    layer = Layer(m, H, H, 128, 256)
    order = order_of(variant, layer.tiles_m, layer.tiles_n)
    spread = mech.config(128, 256, kernel="ctapipe").ticket_spread
    waves = -(-layer.tiles // SLOTS)
    out = {"wave": np.arange(waves)}
    for name, s in (("lockstep", 0.0), ("mechanism", spread)):
        t = costs.order_tile_times(layer, mech, 2, order, SLOTS, kernel="ctapipe", drift=0.0, ticket_spread=s)
        out[name] = t[::SLOTS][:waves] / 1e3
    cfg = per_variant.config(128, 256, kernel=VARIANTS[variant].kernels[0])
    base = costs.gemm_tile_ns(layer, per_variant, 2, cfg.kernel) / 1e3
    out["per_variant"] = base * np.array([cfg.wave_factor(w) for w in range(waves)])
    d = pd.DataFrame(out)
    d.insert(0, "variant", variant)
    d.insert(0, "m", m)
    return d


def full_waves(waves: pd.DataFrame, tiles: int) -> pd.DataFrame:
    """Waves >= 2 that are full (the last, partial wave left out)."""
    last_full = tiles // SLOTS - 1
    return waves[(waves["wave"] >= 2) & (waves["wave"] <= last_full)]


def register(out: Path) -> None:
    rows, waves = [], []
    for m in MS:
        for v in CASES:
            w = wave_predictions(m, v)
            waves.append(w)
            tiles = (m // 128) * (H // 256)
            f = full_waves(w, tiles)
            rows.append({"m": m, "h": H, "variant": v, "waves": int(w["wave"].max()) + 1,
                         **{f"{p}_us": round(float(f[p].mean()), 3) for p in ("lockstep", "mechanism", "per_variant")}})
    out.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(out / "predictions.csv", index=False)
    pd.concat(waves).round(3).to_csv(out / "waves.csv", index=False)
    commit, dirty = git_commit(ROOT)
    (out / "registration.json").write_text(json.dumps({
        "plan": "reg13-percta", "code_commit": commit, "code_dirty": dirty, "h": H, "ms": list(MS), "variants": list(CASES),
        "measure": "python -m ctahw.percta OUT --h 12288 --ms 12288,16384 --variants " + ",".join(CASES),
        "judged": "per case, the mean over full waves >= 2 of each wave's median tile time (t_compute_end - t_acquire, "
                  "tiles of a wave by CTA index, 132 a wave) in the kept traced run (percta-tiles-<M>-<variant>.csv.gz)",
        "claim": f"lockstep within {CLAIM_LOCKSTEP:.0%} in every case; mechanism more than {CLAIM_MECHANISM:.0%} too slow "
                 "on cutlass_ctapipe"}, indent=1) + "\n")
    print(pd.DataFrame(rows).to_string(index=False))


def wave_medians(tiles: pd.DataFrame) -> pd.DataFrame:
    """A probe's tile table as (wave, measured): each wave's median tile time (acquire to compute end, us), the
    tiles of a wave by CTA index, :data:`SLOTS` to a wave."""
    t = tiles.sort_values("cta")
    med = (t["t_compute_end"] - t["t_acquire"]).groupby(np.arange(len(t)) // SLOTS).median() / 1e3
    return pd.DataFrame({"wave": med.index.to_numpy(), "measured": med.to_numpy()})


def wave0_us(tiles: pd.DataFrame) -> float:
    """A probe's tile table's wave 0 median mainloop (us; ``t_mainloop_end - t_acquire`` of CTAs 0 .. :data:`SLOTS` -
    1: nothing read before it)."""
    t = tiles[tiles["cta"] < SLOTS]
    return float((t["t_mainloop_end"] - t["t_acquire"]).median() / 1e3)


def measured_mean(tiles: pd.DataFrame) -> float:
    return float(full_waves(wave_medians(tiles), len(tiles))["measured"].mean())


def judge(run: Path, out: Path) -> pd.DataFrame:
    pred = pd.read_csv(OUT / "predictions.csv")
    rows = []
    for _, p in pred.iterrows():
        f = run / f"percta-tiles-{p['m']}-{p['variant']}.csv.gz"
        if not f.is_file():
            raise SystemExit(f"{f}: no such measured tile table")
        meas = measured_mean(pd.read_csv(f))
        r = {"m": p["m"], "variant": p["variant"], "measured_us": round(meas, 3)}
        for name in ("lockstep", "mechanism", "per_variant"):
            r[f"{name}_us"] = p[f"{name}_us"]
            r[f"{name}_error"] = round(p[f"{name}_us"] / meas - 1.0, 4)
        rows.append(r)
    d = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    d.to_csv(out / "judged.csv", index=False)
    row = d["variant"] == "cutlass_ctapipe"
    print(d.to_string(index=False))
    print(f"lockstep within {CLAIM_LOCKSTEP:.0%} everywhere: {bool((d['lockstep_error'].abs() <= CLAIM_LOCKSTEP).all())}; "
          f"mechanism > {CLAIM_MECHANISM:.0%} too slow on row order: {bool((d.loc[row, 'mechanism_error'] > CLAIM_MECHANISM).all())}")
    return d


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/percta_predict.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--judge", default=None, help="a folder with the probe's percta-tiles-*.csv.gz")
    a = parse_outputs(ap, argv, folders=("--out",))
    if a.judge:
        judge(Path(a.judge), Path(a.out or ROOT / "bench/results/validation-registered13"))
    else:
        register(Path(a.out) if a.out else OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
