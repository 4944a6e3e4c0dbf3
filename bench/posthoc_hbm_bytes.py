"""Post-hoc: the chain kernel's DRAM bytes as counted on H100s against the model's, and the time the counted bytes
imply under the model's wave rule (no GPU)

    python bench/posthoc_hbm_bytes.py [--out bench/results/posthoc-hbm-bytes]

Registered plan 78 counted the DRAM bytes of the 2-layer chain kernel's launches with Nsight Compute (``ctahw.counters``)
on two H100s (:data:`CALLS`: the registered call, its repeat on the same machine, a second machine) and, not registered,
at five more H on the first machine (:data:`MORE`). Per call and launch this writes ``bytes.csv``: the counted bytes
read, the model's (``h100-x1-datasheet``, ``ctasim.strategies.ctapipe.chain_traffic``) and their ratio, the launch's
duration under ncu (one cold launch, clocks free), and two times from the model's wave rule (``ctasim.l2.wave_ns``:
each wave ``max(compute + exposed x t_exp, t_hbm)``, summed): ``model_ms`` with the model's bytes, ``counted_bytes_ms``
with every wave's panel bytes scaled by the case's counted-over-model ratio (stores as modelled). ``summary.csv``: per
order, the median and range of counted over model bytes, and the mean |error| of both times against ncu's duration.
``variants.csv``: the mean |error| of the bytes read per order under the ticket-law settings of :data:`VARIANTS`
(the first call and the five more H), a what-if of which setting the counts favour. ``drift-laws.csv``: registered
plan 79's 16 plain-GEMM launches (:data:`GEMM_CALL`), the counted bytes read beside the H100 profile's (the drift the
same time a round at every K), the profile before registered plan 73's adoption (``h100-x1-datasheet-tile``: the same
share of a tile) and no drift, each with its error (%). ``drift-fit.csv``: per H100 that ran plan 79 (:data:`GEMM_CALLS`),
the ``cta_drift`` whose bytes come nearest the counted at K = 8192 (:data:`DRIFT_GRID`, the mean |error| over those 8
launches), and the long-K launches' mean |error| under either K law with that drift: do a machine's bytes say its own
drift, and which law carries it to long K?
What it asks: do the orders the model prices fast on an H100 (pairs, row order) read more than it says, and would the
wave rule time them right with the bytes counted? Every launch here had been counted before this was written; nothing
is put into a profile. ~35 s on 2 cores.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import plan78_hbm_bytes as p78  # noqa: E402

from ctasim import costs, l2  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from ctasim.strategies.ctapipe import chain_memory, chain_traffic  # noqa: E402

H100 = ROOT / "bench/results/hw-h100"
CALLS = {"GPU-29bc57d4": H100 / "2026-12-06-registered78-1gpu",
         "GPU-29bc57d4 (repeat)": H100 / "2026-12-06-registered78-1gpu-run2",
         "GPU-30ec2a13": H100 / "2026-12-06-registered78-1gpu-run3"}
MORE = {"GPU-29bc57d4 (five more H)": H100 / "2026-12-06-hbm-bytes-more-1gpu"}
PROFILE = "h100-x1-datasheet"
GEMM_CALL = H100 / "2026-12-06-registered79-1gpu"
GEMM_CALLS = {"GPU-f2c0c08f": GEMM_CALL, "GPU-22ebf557": H100 / "2026-12-06-registered79-1gpu-run2"}
DRIFT_GRID = tuple(round(0.002 + 0.0005 * i, 4) for i in range(21))
"""``cta_drift`` values :func:`drift_fit` tries (0.002-0.012 tile times a round; the traces of registered plans 45 and
46 read 0.0041-0.0097 on H200s)."""
DRIFT_LAWS = {"absolute": "h100-x1-datasheet", "tile": "h100-x1-datasheet-tile"}
"""The drift's K laws :func:`drift_laws` prices plan 79's launches under, by profile."""
ORDER_NAMES = {8: "groups of 8", 4: "groups of 4", 2: "pairs", 1: "row order"}
VARIANTS = {
    "profile": lambda hw: hw,
    "partition law": lambda hw: hw.with_ticket_law("partition"),
    "threshold law": lambda hw: hw.with_ticket_law("threshold"),
    "spread x2": lambda hw: hw.with_tickets(ticket_spread=2 * hw.config(128, 256).ticket_spread),
    "spread x4": lambda hw: hw.with_tickets(ticket_spread=4 * hw.config(128, 256).ticket_spread),
    "touched 2.0": lambda hw: hw.with_tickets(ticket_touched=2.0),
    "plan 66's twin (gap cv 1.222, spread x2)": lambda hw: hw.with_tickets(
        ticket_gap_cv=1.222, ticket_spread=2 * hw.config(128, 256).ticket_spread),
}
"""Ticket-law settings :func:`variants` prices the counted launches under: the profile's, the other two laws, the
spread twice and four times the profile's for every order (the H100s' traced pairs and row order spread 3-6 times as
fast as groups of 8, ``bench/posthoc_h100_tickets.py``), a line pushed out by twice the bytes taken in, and registered
plan 66's H100 twin (the gap spread ``ctahw calibrate`` read on two H100s)."""


@functools.lru_cache(maxsize=None)
def _chain(h: int, m: int, group: int, hw):
    """The case's chain kernel under ``hw``: its waves' traffic (``chain_traffic``) and one tile's compute (ns, the
    tickets' mainloop factor in); cached, as every call, variant and time below asks for the same cases."""
    k, layer = p78._chain(h, m, group)
    _, slow = chain_memory(layer, hw, False, group, k.chain_layers)
    cfg = hw.config(layer.tile_m, layer.tile_n)
    compute = costs.tile_ns(layer, layer.k, hw, p78.ELEM, rate_tflops=cfg.l2_sm_tflops) * slow
    return chain_traffic(k, layer, hw, p78.ELEM, group), compute


def modelled(h: int, m: int, group: int, ratio: float, hw) -> tuple[float, float, float]:
    """(model bytes read in GB, the wave rule's time in ms with the model's bytes, the same with the panel bytes
    scaled by ``ratio``) for the case's chain kernel."""
    t, compute = _chain(h, m, group, hw)

    def ms(traffic):
        return float(l2.wave_ns(traffic, compute, hw.hbm_gbps, hw.l2_hbm_exposed, hw.l2_hbm_exposed_gbps).sum()) / 1e6

    scaled = dataclasses.replace(t, a_hbm=t.a_hbm * ratio, w_hbm=t.w_hbm * ratio, ticket_hbm=t.ticket_hbm * ratio)
    return p78.read_gb(t), ms(t), ms(scaled)


def launches(calls: dict) -> pd.DataFrame:
    rows = []
    hw = load_hardware(PROFILE)
    for name, run in calls.items():
        c = pd.read_csv(run / "counters.csv")
        for r in c.itertuples(index=False):
            counted = r.dram_read_bytes / 1e9
            model, _, _ = modelled(r.h, r.m, r.group, 1.0, hw)
            _, model_ms, counted_ms = modelled(r.h, r.m, r.group, counted / model, hw)
            rows.append(dict(call=name, h=r.h, m=r.m, order=ORDER_NAMES[r.group], counted_gb=counted, model_gb=model,
                             counted_over_model=counted / model, ncu_ms=r.duration_ns / 1e6, model_ms=model_ms,
                             counted_bytes_ms=counted_ms))
    d = pd.DataFrame(rows)
    d["model_ms_err_pct"] = (d["model_ms"] / d["ncu_ms"] - 1) * 100
    d["counted_bytes_ms_err_pct"] = (d["counted_bytes_ms"] / d["ncu_ms"] - 1) * 100
    return d


def variants(calls: dict, settings: dict = VARIANTS) -> pd.DataFrame:
    """Per setting of ``settings`` and order: the mean |error| (%) of the model's bytes read against the counted, over
    the launches of ``calls``."""
    base = load_hardware(PROFILE)
    rows = []
    for name, run in calls.items():
        c = pd.read_csv(run / "counters.csv")
        for setting, change in settings.items():
            hw = change(base)
            for r in c.itertuples(index=False):
                model, _, _ = modelled(r.h, r.m, r.group, 1.0, hw)
                rows.append(dict(setting=setting, order=ORDER_NAMES[r.group],
                                 abs_err=abs(model / (r.dram_read_bytes / 1e9) - 1) * 100))
    d = pd.DataFrame(rows)
    t = d.pivot_table(index="setting", columns="order", values="abs_err", aggfunc="mean", sort=False)
    t["all"] = d.groupby("setting", sort=False)["abs_err"].mean()
    return t[[*ORDER_NAMES.values(), "all"]].round(2).reset_index().rename_axis(columns=None)


def drift_laws(call: Path = GEMM_CALL) -> pd.DataFrame:
    """Per launch of registered plan 79's call: the counted bytes read and the model's under each law of
    :data:`DRIFT_LAWS` and with no drift (GB), and each one's error (%)."""
    import plan79_gemm_bytes as p79  # noqa: PLC0415

    c = pd.read_csv(call / "counters.csv")
    profiles = {law: load_hardware(name) for law, name in DRIFT_LAWS.items()}
    base = profiles["absolute"]
    profiles["none"] = dataclasses.replace(base, kernel_configs=tuple(dataclasses.replace(k, cta_drift=0.0)
                                                                      for k in base.kernel_configs))
    rows = []
    for r in c.itertuples(index=False):
        row = dict(m=r.m, n=r.n, k=r.k, raster=r.raster, swizzle=r.swizzle, counted_gb=r.dram_read_bytes / 1e9)
        lay = p79.layer(r.m, r.n, r.k)
        for law, hw in profiles.items():
            gb = p78.read_gb(costs.cutlass_traffic(lay, hw, p78.ELEM, r.raster, r.swizzle))
            row[f"{law}_gb"] = gb
            row[f"{law}_err_pct"] = (gb / row["counted_gb"] - 1) * 100
        rows.append(row)
    return pd.DataFrame(rows)


def _with_drift(hw, drift: float):
    return dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(k, cta_drift=drift)
                                                       for k in hw.kernel_configs))


def drift_fit(calls: dict = GEMM_CALLS, grid=DRIFT_GRID) -> pd.DataFrame:
    """Per call of plan 79: the drift of ``grid`` whose K = 8192 bytes are nearest the counted (mean |error|), and
    the long-K launches' mean |error| under each law of :data:`DRIFT_LAWS` with that drift."""
    import plan79_gemm_bytes as p79  # noqa: PLC0415

    laws = {law: load_hardware(name) for law, name in DRIFT_LAWS.items()}

    def mape(hw, launches) -> float:
        errs = [p78.read_gb(costs.cutlass_traffic(p79.layer(r.m, r.n, r.k), hw, p78.ELEM, r.raster, r.swizzle))
                / (r.dram_read_bytes / 1e9) - 1 for r in launches.itertuples(index=False)]
        return float(pd.Series(errs).abs().mean() * 100)

    rows = []
    for gpu, run in calls.items():
        c = pd.read_csv(run / "counters.csv")
        short, long_k = c[c["k"] == 8192], c[c["k"] >= p79.LONG_K]
        fits = {d: mape(_with_drift(laws["absolute"], d), short) for d in grid}  # at K = 8192 the two laws agree
        best = min(fits, key=fits.get)
        rows.append(dict(gpu=gpu, drift=best, k8192_mape=fits[best],
                         **{f"long_k_{law}_mape": mape(_with_drift(hw, best), long_k) for law, hw in laws.items()}))
    return pd.DataFrame(rows)


def summary(d: pd.DataFrame) -> pd.DataFrame:
    g = d.groupby("order", sort=False)
    return pd.DataFrame({
        "launches": g.size(),
        "counted_over_model_median": g["counted_over_model"].median(),
        "counted_over_model_min": g["counted_over_model"].min(),
        "counted_over_model_max": g["counted_over_model"].max(),
        "model_ms_mape": g["model_ms_err_pct"].apply(lambda s: s.abs().mean()),
        "counted_bytes_ms_mape": g["counted_bytes_ms_err_pct"].apply(lambda s: s.abs().mean()),
    }).round(3).reset_index()


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench/results/posthoc-hbm-bytes"))
    args = parse_outputs(ap, argv, folders=["--out"])
    out = Path(args.out)
    d = launches({**CALLS, **MORE})
    s = summary(d)
    v = variants({**dict(list(CALLS.items())[:1]), **MORE})
    laws = drift_laws()
    fit = drift_fit()
    out.mkdir(parents=True, exist_ok=True)
    d.round(4).to_csv(out / "bytes.csv", index=False)
    s.to_csv(out / "summary.csv", index=False)
    v.to_csv(out / "variants.csv", index=False)
    laws.round(4).to_csv(out / "drift-laws.csv", index=False)
    fit.round(4).to_csv(out / "drift-fit.csv", index=False)
    print(s.to_string(index=False))
    print()
    print(v.to_string(index=False))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
