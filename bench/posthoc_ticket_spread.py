"""Registered plan 9 re-predicted with the ticket-spread mechanism (post-hoc: the form was chosen after plan 9's traces).

    python bench/posthoc_ticket_spread.py

Predicts reg9-chain-order and reg9-chain-order-h12288 with this checkout's model (`ctasim predict`, the
registrations' own experiment specs, their profile under the threshold ticket law (:data:`PROFILE`), into a temporary
folder) and judges them against the committed measurement
(bench/results/hw/2026-12-02-registered9-1gpu) with `ctasim.accuracy.judge`; writes
bench/results/validation-registered9/posthoc-ticket-spread.csv (one row per case: measured, registered model, this
model) and prints MAPE per strategy. ~1 minute.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctasim.cliargs import OneLineParser  # noqa: E402
from ctasim import accuracy, results  # noqa: E402
from ctasim.cli import main as ctasim_main  # noqa: E402

REGS = ("reg9-chain-order", "reg9-chain-order-h12288")
MEASURED = ROOT / "bench/results/hw/2026-12-02-registered9-1gpu"
OUT = ROOT / "bench/results/validation-registered9/posthoc-ticket-spread.csv"
PROFILE = "h200-x1-calibrated-threshold"
"""The registrations' profile under the ticket law the spread mechanism came with ("threshold"; the profile's law is
"partition" since registered plan 49, and bench/posthoc_ticket_law.py compares the two on these runs)."""


def main(argv: list[str] | None = None) -> int:
    OneLineParser(prog="python bench/posthoc_ticket_spread.py", description=__doc__.splitlines()[0]).parse_args(argv or [])  # --help only
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="posthoc-ticket-spread-"))
    for reg in REGS:
        meas = results.read(MEASURED / reg / "results.csv")
        registered = accuracy.judge(results.read(ROOT / "bench/predictions" / reg / "predictions.csv"), meas)
        if ctasim_main(["predict", reg, "--out", str(tmp / reg), "--hardware", PROFILE, "--naive-from",
                        str(ROOT / "bench/results/hw/2026-11-29-run2/baselines.csv")]) != 0:
            return 1
        now = accuracy.judge(results.read(tmp / reg / "predictions.csv"), meas)
        key = ["experiment", "case", "strategy"]
        r = registered[registered["source"] == "model"][key + ["measured_ms", "predicted_ms", "error"]]
        n = now[now["source"] == "model"][key + ["predicted_ms", "error"]]
        rows.append(r.merge(n, on=key, suffixes=("_registered", "_posthoc")))
    d = pd.concat(rows, ignore_index=True)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    d.to_csv(OUT, index=False, float_format="%.5f")
    mape = d.groupby("strategy")[["error_registered", "error_posthoc"]].apply(lambda g: 100 * g.abs().mean())
    print(mape.round(2).to_string())
    print(f"all {len(d)} cases: registered {100 * d['error_registered'].abs().mean():.2f}%, "
          f"post-hoc {100 * d['error_posthoc'].abs().mean():.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
