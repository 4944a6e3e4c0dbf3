#!/usr/bin/env bash
# One call on a single H200: the chain kernel's ticket traces alone (ctahw.tile_orders.trace_tickets, what `ctahw
# calibrate` runs for ticket_spread) and the spread they give (ctasim.calibration.ticket_spread).
#
#   CTAHW_COMMIT=<commit> bash bench/hw/run_ticket_traces.sh
# Writes $OUT/run.tar.gz: env.txt, log.txt, smi.csv, tickets.log, probes/ (tickets.csv, tiles-*-tickets.csv.gz).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
run_begin 100
say "ticket traces"
R="$R" timeout 300 python3 - <<'PY' 2>&1 | tee "$R/tickets.log"
import os
from pathlib import Path
import pandas as pd
from ctahw import tile_orders
from ctasim.calibration import ticket_spread
out = Path(os.environ["R"]) / "probes"
out.mkdir(parents=True, exist_ok=True)
rows, traces = tile_orders.trace_tickets()
value, rates = ticket_spread(traces.values(), 132)
for name, t in traces.items():
    t.to_csv(out / f"tiles-{name}.csv.gz", index=False, float_format="%.0f")
pd.DataFrame([dict(r, spread_per_window=x) for r, x in zip(rows, rates)]).to_csv(out / "tickets.csv", index=False)
print("ticket_spread", round(value, 4), [None if x is None else round(x, 4) for x in rates])
PY
run_end
