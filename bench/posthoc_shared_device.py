"""Post-hoc: what sets a shared-device ring kernel's tile time (registered plans 40-42's per-tile traces; no GPU).

    python bench/posthoc_shared_device.py [--out bench/results/posthoc-shared-device]

Every traced run of a ring whose 2, 3 or 4 chain kernels shared one H200 (:data:`RUNS`: plans 40 and 42 on two
machines each, plan 41 on one). A tile's time is ``t_compute_end - t_acquire`` (the MMA start, after its inputs);
a kernel *computes* at time t while one of its CTAs is between those two stamps; a tile's *active count* is the number
of the ring's kernels computing at its acquire. Writes:

* ``active.csv``: per (plan, machine, kernels N, M, group, active count) the tiles and their median time, us: the
  table the rule of ``ctasim.costs.active_share`` was read from (plans 40 and 41; plan 42's rows came after it);
* ``spread.csv``: per N = 2 run, the window-span growth per round of the pair's first kernel
  (``ctasim.calibration.window_spans`` over 66 consecutive tickets, ``span_rate``; the second kernel waits, which
  breaks the measure), beside the chain kernel's own 0.0189 (one kernel on the whole device);
* ``sensitivity.csv``: the ``-active`` profiles re-run over the measured rows of plans 40-42 (88) with one
  ``ticket_spread`` for every config (0.0189, 0.05, 0.1, 0.2): MAPE over all rows, over groups 2-8, and the mean
  signed error of row order and of groups 2-8; and the even split (``h200-x1-sharedN``) and the ``-active`` rule at
  0.0189 over plans 40 and 41's 44 rows (the re-prediction that came before plan 42's registration).

POST-HOC: every trace was seen before these tables were written; they say how the rule was found and where it fails,
not how it predicts (registered plan 42 is the test).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ctasim.calibration import span_rate, window_spans  # noqa: E402
from ctasim.cases import load_experiment  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.run import run_experiment  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from ctasim.trace import TRACES_FILE, load_traces  # noqa: E402

HW = ROOT / "bench/results/hw"
RUNS = {  # registration -> the call folders that measured it (machine order)
    "reg40-ring-shared-l3": ("2026-12-03-registered40-1gpu", "2026-12-03-registered38-40-1gpu"),
    "reg40-ring-shared-l4": ("2026-12-03-registered40-1gpu", "2026-12-03-registered38-40-1gpu"),
    "reg41-ring-shared-l2": ("2026-12-03-registered41-1gpu",),
    "reg42-ring-shared-l2": ("2026-12-03-registered42-1gpu", "2026-12-03-registered42-1gpu-run2"),
    "reg42-ring-shared-l3": ("2026-12-03-registered42-1gpu", "2026-12-03-registered42-1gpu-run2"),
    "reg42-ring-shared-l4": ("2026-12-03-registered42-1gpu", "2026-12-03-registered42-1gpu-run2"),
}
KERNELS = {reg: int(reg[-1]) for reg in RUNS}
"""Registration -> the kernels of its ring sharing the device (its name's last digit)."""
EARLY = tuple(r for r in RUNS if r.startswith(("reg40", "reg41")))
"""Plans 40 and 41's registrations (predicted with the even split, before plan 42's ``-active`` rule)."""
SPREADS = (0.0189, 0.05, 0.1, 0.2)
CHAIN_SPREAD = 0.0189
"""``KernelConfig.ticket_spread`` of h200-x1-calibrated (the chain kernel alone on a device, registered plan 3)."""


def active_counts(tiles: pd.DataFrame) -> np.ndarray:
    """Per tile: how many of the trace's kernels compute at its acquire (itself included)."""
    t0, t1 = tiles["t_acquire"].to_numpy(float), tiles["t_compute_end"].to_numpy(float)
    count = np.zeros(len(tiles), dtype=int)
    for k in tiles["kernel"].unique():
        mine = (tiles["kernel"] == k).to_numpy()
        a, e = np.sort(t0[mine]), np.sort(t1[mine])
        count += (np.searchsorted(a, t0, "right") - np.searchsorted(e, t0, "right") > 0).astype(int)
    return count


def traces():
    """(registration, machine index, case meta, tiles) of every traced run of :data:`RUNS`."""
    for reg, folders in RUNS.items():
        for i, folder in enumerate(folders):
            for _, tr in load_traces(HW / folder / reg / TRACES_FILE).items():
                yield reg, i, tr.meta, tr.tiles


def active_table() -> pd.DataFrame:
    rows = []
    for reg, machine, meta, tiles in traces():
        if not reg.startswith(("reg40", "reg41")):
            continue
        t = tiles.assign(active=active_counts(tiles), us=(tiles["t_compute_end"] - tiles["t_acquire"]) / 1e3)
        m = int(meta["case"].split(",")[0].split("=")[1])
        for a, g in t.groupby("active"):
            rows.append({"registration": reg, "machine": machine, "kernels": int(t["kernel"].nunique()), "m": m,
                         "group": int(meta["strategy"].split("-g")[1]), "active": int(a), "tiles": len(g),
                         "median_us": round(float(g["us"].median()), 2)})
    return pd.DataFrame(rows)


def spread_table() -> pd.DataFrame:
    rows = []
    for reg, machine, meta, tiles in traces():
        if tiles["kernel"].nunique() != 2:
            continue
        first = tiles[tiles["kernel"] == tiles["kernel"].min()]
        s = window_spans(first, 132 // 2)
        rate = span_rate(s)
        rows.append({"registration": reg, "machine": machine, "case": meta["case"], "strategy": meta["strategy"],
                     "windows": len(s), "rate": None if rate is None else round(rate, 4),
                     "chain_kernel_alone": CHAIN_SPREAD})
    return pd.DataFrame(rows)


def errors(profile_of, regs) -> pd.DataFrame:
    """Every measured row of ``regs`` against the model on ``profile_of(registration)`` (a Hardware)."""
    rows = []
    for reg in regs:
        exp = load_experiment(reg)
        exp = dataclasses.replace(exp, hardware=profile_of(reg))
        pred = run_experiment(exp)[0].set_index(["case", "strategy"])["latency_us"] / 1e3
        for folder in RUNS[reg]:
            m = pd.read_csv(HW / folder / reg / "results.csv").query("status == 'ok'")
            for r in m.itertuples():
                rows.append({"registration": reg, "folder": folder, "case": r.case, "strategy": r.strategy,
                             "error_pct": 100 * (pred[(r.case, r.strategy)] / r.makespan_ms - 1)})
    return pd.DataFrame(rows)


def _profile(kernels: int, spread: float | None = None, active: bool = True, law: str = "threshold",
             factor: float = 1.0):
    """The shared-device profile of ``kernels`` kernels under ticket law ``law`` (default: the law of plans 40-42's
    registrations, "threshold"; the profiles' law was "partition" from registered plan 49 and is "survival" since plan
    53: bench/ticket_law_record.py's rings.csv has all three) and the tickets mainloop factor ``factor`` (default 1,
    the registrations'; the profiles' 1.019 since plan 53), with ``ticket_spread`` at ``spread`` where given. The
    survival law is the one plan 53 adopted (``posthoc_order_mainloop.as_plan_53``: without plan 58's refinements,
    which the profiles carry since 2026-12-05), the law of these dated records."""
    import posthoc_order_mainloop as pom  # noqa: PLC0415

    hw = pom.as_plan_53(load_hardware(f"h200-x1-shared{kernels}" + ("-active" if active else ""))).with_ticket_law(
        law, mainloop_factor=factor)
    if spread is None:
        return hw
    return dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, ticket_spread=spread)
                                                         for c in hw.kernel_configs))


def _summary(d: pd.DataFrame, label: str) -> dict:
    g, r = d[d["strategy"] != "ring-g1"], d[d["strategy"] == "ring-g1"]
    return {"predictor": label, "rows": len(d), "mape_pct": round(d["error_pct"].abs().mean(), 2),
            "groups_2_8_mape_pct": round(g["error_pct"].abs().mean(), 2),
            "groups_2_8_mean_pct": round(g["error_pct"].mean(), 2), "row_order_mean_pct": round(r["error_pct"].mean(), 2)}


def sensitivity_table() -> pd.DataFrame:
    n = KERNELS
    rows = [_summary(errors(lambda r: _profile(n[r], active=False), EARLY), "even split, plans 40-41"),
            _summary(errors(lambda r: _profile(n[r]), EARLY), "active, plans 40-41")]
    for s in SPREADS:
        rows.append(_summary(errors(lambda r, s=s: _profile(n[r], s), list(RUNS)), f"active, ticket_spread {s}"))
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python bench/posthoc_shared_device.py", description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "bench/results/posthoc-shared-device"))
    args = parse_outputs(p, argv if argv is not None else [], folders=("--out",))
    out = Path(args.out)
    tables = {"active.csv": active_table(), "spread.csv": spread_table(), "sensitivity.csv": sensitivity_table()}
    out.mkdir(parents=True, exist_ok=True)
    for name, t in tables.items():
        t.to_csv(out / name, index=False)
    with pd.option_context("display.width", 200):
        print(tables["sensitivity.csv"].to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
