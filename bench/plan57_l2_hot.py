"""Registered plan 57: what pushes a line out of the L2 -- the bytes taken in, or every line touched since? (no GPU here)

    python bench/plan57_l2_hot.py --register [--out bench/predictions/reg57-l2-hot]
    python bench/plan57_l2_hot.py --judge RUN_DIR [--registered bench/predictions/reg57-l2-hot]
                                  [--out bench/results/validation-registered57]

The ticket laws (``ctasim.l2.ticket_rereads``) charge a panel's later sharer by the bytes the L2 *takes in* between its
two reads. Between them, the other tiles of the wave also *hit* lines they share (the other panels); an LRU cache counts
those too when they are older than the panel (a stack distance), so the laws may price as kept what the hardware has
already pushed out -- one reading of why the measured loss of reuse begins before the model's (plan 56). The L2
survival probe's hot set (``ctahw.l2probe``, ``bench/hw/l2_survival_probe.py --hot-mib``) asks it with no GEMM: a
:data:`HOT_MIB` MiB set read before the target and again after each of the stream's :data:`HOT_ROUNDS` chunks.

``--register`` writes ``predicted.csv``: per streamed ``b_l2`` (bytes / ``l2_bytes``) the two hypotheses' survival
from the adopted profile's measured curve ``S`` (``h200-x1-calibrated``'s ``l2_survival_*``, the probe without a hot
set): **taken-in** ``S(b)`` (the hot set's re-reads are hits and take nothing in) and **touched** ``S(b + P)``,
``P = HOT_MIB MiB / l2_bytes`` (the hot set's lines count as streamed ones do). A registration is never overwritten.

``--judge`` reads RUN_DIR/plain and RUN_DIR/hot (the probe's folders, the same call: ``--reps 5 --touches 1``, and the
same with ``--hot-mib 15 --hot-rounds 8``), sets per ``b_l2`` the measured survival with and without the hot set and
the hypotheses again from the same call's plain curve, and writes ``cases.csv`` and ``claims.csv`` (:data:`CLAIMS`;
registered or post-hoc by ``ctasim.accuracy.provenance_order`` of predicted.csv against the hot curve). A missing
registration or probe folder, or a probe run with another hot set, is refused in one line, exit 2, nothing written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402
from ctasim.l2 import survival_share  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402

PROFILE = "h200-x1-calibrated"
HOT_MIB = 15
"""The hot set: a quarter of the H200's 60 MiB L2, so that the two hypotheses part over the curve's edge (0.4-0.75)."""
HOT_ROUNDS = 8
REGISTERED = ROOT / "bench/predictions/reg57-l2-hot"
JudgeError = registered_plan.JudgeError
PART = 0.2
"""The points judged: where the two hypotheses' survival differ by this or more."""
FIT = 0.1
"""A hypothesis that explains the hot curve: its mean |error| over the judged points is this or less."""
ALIKE = 0.1
CLAIMS = {
    "a": f"over the points where the registered hypotheses part by {PART} or more, touched (S(b + P)) is nearer the "
         f"measured hot-set survival than taken-in (S(b)), in mean |error|",
    "b": f"the nearer registered hypothesis explains it: mean |error| {FIT} or less over those points",
    "c": "(a) again with S the same call's plain curve instead of the profile's",
    "d": f"the control: the same call's plain curve is within {ALIKE} of the profile's at every point (the machine's "
         f"L2 as the profile's)",
}


def hypotheses(taken: np.ndarray, curve: tuple, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(taken-in, touched) survival at the streamed ``taken`` (L2 sizes) from ``curve`` = (points, shares) and the hot
    set ``p`` (L2 sizes)."""
    return survival_share(taken, curve), survival_share(np.asarray(taken, dtype=np.float64) + p, curve)


def register() -> pd.DataFrame:
    hw = load_hardware(PROFILE)
    b = np.asarray(hw.l2_survival_taken, dtype=np.float64)
    curve = (hw.l2_survival_taken, hw.l2_survival_share)
    p = HOT_MIB * (1 << 20) / hw.l2_bytes
    taken_in, touched = hypotheses(b, curve, p)
    return pd.DataFrame({"b_l2": b, "hot_l2": p, "taken_in": taken_in, "touched": touched})


def _probe(run_dir: Path, name: str, hot_bytes: int) -> pd.Series:
    folder = run_dir / name
    curve, meta = folder / "l2-survival-curve.csv", folder / "l2-survival.json"
    if not curve.is_file() or not meta.is_file():
        raise JudgeError(f"no {curve} or {meta.name} (plan 57's call runs the probe into {name}/)")
    try:
        m = json.loads(meta.read_text())
        c = pd.read_csv(curve)
        c = c[c["touches"] == 1].set_index("b_l2")["survival"]
    except (ValueError, KeyError, OSError) as e:
        raise JudgeError(f"{folder}: not a probe run ({e})") from None
    if int(m.get("hot_bytes", 0)) != hot_bytes:
        raise JudgeError(f"{meta}: hot set of {int(m.get('hot_bytes', 0))} bytes, plan 57's {name} run has {hot_bytes}")
    if c.empty:
        raise JudgeError(f"{curve}: no touches-1 curve")
    return c.rename(name).to_frame().assign(l2_bytes=float(m["l2_bytes"]))[name]


def measured(run_dir: Path) -> pd.DataFrame:
    plain = _probe(run_dir, "plain", 0)
    hot = _probe(run_dir, "hot", HOT_MIB * (1 << 20) // 16 * 16)
    l2 = float(json.loads((run_dir / "hot" / "l2-survival.json").read_text())["l2_bytes"])
    d = pd.concat([plain, hot], axis=1, join="inner").reset_index()
    own = (d["b_l2"].to_numpy(), d["plain"].to_numpy())
    d["hot_l2"] = HOT_MIB * (1 << 20) / l2
    d["taken_in_own"], d["touched_own"] = hypotheses(d["b_l2"].to_numpy(), own, float(d["hot_l2"].iloc[0]))
    return d


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per ``b_l2``: measured with and without the hot set, the registered hypotheses and the same call's, and
    whether the point is judged (the registered hypotheses part by :data:`PART` or more)."""
    c = pred.drop(columns="hot_l2").merge(meas.drop(columns="hot_l2"), on="b_l2", how="inner")
    c["judged"] = (c["taken_in"] - c["touched"]).abs() >= PART
    return c[["b_l2", "plain", "hot", "taken_in", "touched", "taken_in_own", "touched_own", "judged"]]


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    j = c[c["judged"]]
    err = {h: float((j[h] - j["hot"]).abs().mean()) for h in ("taken_in", "touched", "taken_in_own", "touched_own")}
    own = c[(c["taken_in_own"] - c["touched_own"]).abs() >= PART]
    err_own = {h: float((own[h] - own["hot"]).abs().mean()) for h in ("taken_in_own", "touched_own")}
    alike = float((c["plain"] - c["taken_in"]).abs().max())
    nearer = min(err["taken_in"], err["touched"])
    rows = [
        ("a", f"touched {err['touched']:.3f}, taken-in {err['taken_in']:.3f} over {len(j)} points",
         len(j) > 0 and err["touched"] < err["taken_in"]),
        ("b", f"{nearer:.3f}", len(j) > 0 and nearer <= FIT),
        ("c", f"touched {err_own['touched_own']:.3f}, taken-in {err_own['taken_in_own']:.3f} over {len(own)} points",
         len(own) > 0 and err_own["touched_own"] < err_own["taken_in_own"]),
        ("d", f"largest difference {alike:.3f}", alike <= ALIKE),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan57_l2_hot", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered57", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "hot" / "l2-survival-curve.csv")


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
