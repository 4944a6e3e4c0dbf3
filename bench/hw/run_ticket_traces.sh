#!/usr/bin/env bash
# One call on a single H200: the chain kernel's ticket traces alone (ctahw.tile_orders.trace_tickets, what `ctahw
# calibrate` runs for ticket_spread) and the spread they give (ctasim.calibration.ticket_spread); then its gap traces,
# the same design in pairs of row-blocks (tile_orders.GAP_SHAPES, what `ctahw calibrate` runs for ticket_gap_cv since
# 2026-12-05), and the sharers' gap spread they give at that ticket spread (ctasim.calibration.gap_cv).
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_ticket_traces.sh
# Writes $OUT/run.tar.gz: env.txt, log.txt, smi.csv, tickets.log, probes/ (tickets.csv, ticket-gaps.csv,
# tiles-*-tickets.csv.gz, tiles-*-tickets-g2.csv.gz).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100
say "ticket traces"
R="$R" timeout 400 python3 - <<'PY' 2>&1 | tee "$R/tickets.log"
import os
from pathlib import Path
import pandas as pd
from ctahw import tile_orders
from ctasim.calibration import gap_cv, ticket_spread
out = Path(os.environ["R"]) / "probes"
out.mkdir(parents=True, exist_ok=True)
rows, traces = tile_orders.trace_tickets()
value, rates = ticket_spread(traces.values(), 132)
for name, t in traces.items():
    t.to_csv(out / f"tiles-{name}.csv.gz", index=False, float_format="%.0f")
pd.DataFrame([dict(r, spread_per_window=x) for r, x in zip(rows, rates)]).to_csv(out / "tickets.csv", index=False)
print("ticket_spread", round(value, 4), [None if x is None else round(x, 4) for x in rates], flush=True)
gap_rows, gaps = tile_orders.trace_tickets(tile_orders.GAP_SHAPES, chain_group=tile_orders.GAP_GROUP)
cv, cvs = gap_cv(gaps.values(), value, [int(r["grid"]) for r in gap_rows])
for name, t in gaps.items():
    t.to_csv(out / f"tiles-{name}.csv.gz", index=False, float_format="%.0f")
pd.DataFrame([dict(r, gap_cv=x) for r, x in zip(gap_rows, cvs)]).to_csv(out / "ticket-gaps.csv", index=False)
print("ticket_gap_cv", round(cv, 4), [None if x is None else round(x, 4) for x in cvs])
PY
run_end
