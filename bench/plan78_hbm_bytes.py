"""Registered plan 78: the chain kernel's DRAM bytes per tile order, counted by the hardware, against the model's

    python bench/plan78_hbm_bytes.py --register [--out bench/predictions/reg78-hbm-bytes]
    python bench/plan78_hbm_bytes.py --judge RUN_DIR [--registered bench/predictions/reg78-hbm-bytes]
                                     [--out bench/results/validation-registered78]
    # the measurement (one GPU, Nsight Compute): python -m ctahw.counters RUN_DIR bench/predictions/reg78-hbm-bytes/predicted.csv

Every test of the memory hierarchy so far judged a time: the bytes the model says an order reads from HBM
(``ctasim.l2``) were never counted. Plan 78 counts them: the 2-layer chain kernel (tickets) at H = 4096, 6144, 8704
and M = 8192, 16384 in groups of 8, 4 and 2 row-blocks and in row order (:data:`CASES`, 24 launches), each launched
once under ncu (``ctahw.counters``: a cold L2 before the launch, clocks free), its DRAM bytes read and written and
its L2 read sectors counted. Per case the registration holds, for each GPU's profile (:data:`PROFILES`: the call's
GPU picks its rows), ``model`` (the bytes ``ctasim.strategies.ctapipe.chain_traffic`` gives: panel misses, the
ticket grid's re-reads, stores), ``compulsory`` (the naive predictor: each layer's A and W read once) and the
tiles' load bytes (every tile's A and W panels over K, what passes through L2). Claims (:data:`CLAIMS`): (a), (b)
the model's read bytes against the counted and against the compulsory; (c) the order effect in bytes; (d) the
H100's pairs at H = 8704 (the case the model prices 26-32% fast, ``bench/results/posthoc-h100-pairs``): more bytes
than the model's (its sharers part), or the same bytes at a lower rate; (e) the writes; (f) a check of the counters
themselves (the L2 reads are the tiles' loads). No adoption rule: nothing here changes a profile.
Left out: the sequential GEMMs, the kernel's time (ncu's one cold launch is not the harness's median), the static
design.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "hw"))

import pandas as pd  # noqa: E402

import registered_plan  # noqa: E402

HS = (4096, 6144, 8704)
MS = (8192, 16384)
GROUPS = (8, 4, 2, 1)
"""Chain groups: 8, 4, 2 row-blocks column by column (groups of 8 the chain kernel's default), 1 row order."""
CASES = tuple((h, m, g) for h in HS for m in MS for g in GROUPS)
PROFILES = {"H100": "h100-x1-datasheet", "H200": "h200-x1-calibrated"}
ELEM = 2  # bf16
REGISTERED = ROOT / "bench/predictions/reg78-hbm-bytes"
JudgeError = registered_plan.JudgeError
MAPE = 15.0
RATIO_TOL, RATIO_SHARE = 0.15, 0.75
PARTED, KEPT = 1.25, 0.10
PAIRS_H = 8704
WRITE_OVER = 1.05
LOADS = (0.95, 1.15)
SECTOR = 32
WHY = "plan 78's call runs `python -m ctahw.counters RUN_DIR predicted.csv` on one GPU"
CLAIMS = {
    "a": f"model: MAPE of the DRAM bytes read <= {MAPE:g}% over the 24 cases (the call's GPU's profile)",
    "b": "model: that MAPE at most half the compulsory predictor's (each layer's A and W read once)",
    "c": f"the order effect: of the 18 ratios of an order's bytes read to groups of 8's at the same (H, M), the "
         f"model's within {RATIO_TOL:.0%} of the counted in at least {RATIO_SHARE:.0%}",
    "d": f"H100: the pairs at H = {PAIRS_H}, M = 8192 and 16384 read at least {PARTED:g} times the model's bytes (the "
         f"sharers part; the other reading, the same bytes at a lower rate, within {1 + KEPT:g}); H200: within "
         f"{KEPT:.0%} of the model's (its pairs keep the reuse)",
    "e": f"every case's DRAM bytes written between the model's stores less the L2's bytes and {WRITE_OVER:g} times "
         "the stores (dirty lines may stay in L2 at the end)",
    "f": f"the counters: every case's L2 sectors read, times {SECTOR} bytes, {LOADS[0]:g}-{LOADS[1]:g} times the "
         "tiles' load bytes (each tile's A and W panels over K once through L2)",
}


def _chain(h: int, m: int, g: int):
    """The case's chain kernel and its layer, as ``hbm_bytes_probe.plan`` builds it (the order and the grid are the
    same under either profile: 132 SMs, one CTA each)."""
    import hbm_bytes_probe as probe  # noqa: PLC0415

    from ctasim.spec import load_workload  # noqa: PLC0415

    plan = probe.plan(h, m, g)
    layer = dataclasses.replace(load_workload("chain2-16384").layers[0], m=m, k=h, n=h)
    return plan.ops[0], layer


def read_gb(traffic) -> float:
    """The GB a :class:`ctasim.l2.WaveTraffic` reads from HBM over all its waves (what a DRAM read counter counts)."""
    return float(traffic.read.sum()) / 1e9


def register() -> pd.DataFrame:
    """Per GPU profile and case: the model's DRAM bytes read and written, the compulsory bytes read, the tiles'
    load bytes, and the profile's L2 bytes."""
    from ctasim.spec import load_hardware  # noqa: PLC0415
    from ctasim.strategies.ctapipe import chain_traffic  # noqa: PLC0415

    rows = []
    for gpu, name in PROFILES.items():
        hw = load_hardware(name)
        for h, m, g in CASES:
            k, layer = _chain(h, m, g)
            t = chain_traffic(k, layer, hw, ELEM, g)
            rows.append(dict(gpu=gpu, profile=name, h=h, m=m, group=g, tiles=int(k.tiles),
                             model_read_gb=read_gb(t), model_write_gb=t.store.sum() / 1e9,
                             compulsory_read_gb=2 * (m * h + h * h) * ELEM / 1e9,
                             loads_gb=k.tiles * (layer.tile_m + layer.tile_n) * h * ELEM / 1e9,
                             l2_gb=hw.l2_bytes / 1e9))
    return pd.DataFrame(rows)


def gpu_of(run_dir: Path) -> str:
    """H100 or H200, from the call's ``env.txt`` (:class:`JudgeError` where neither)."""
    env = run_dir / "env.txt"
    if not env.is_file():
        raise JudgeError(f"no {env} ({WHY})")
    text = env.read_text(errors="replace")
    found = [g for g in PROFILES if re.search(rf"\b{g}\b", text)]
    if len(found) != 1:
        raise JudgeError(f"{env}: names {'none' if not found else ' and '.join(found)} of {', '.join(PROFILES)}")
    return found[0]


KEYS = ["h", "m", "group"]


def counted(run_dir: Path, keys: list[str], extra: tuple[str, ...] = (), why: str = WHY) -> pd.DataFrame:
    """A byte-counting call's ``counters.csv`` (``ctahw.counters``) with the call's GPU (``gpu``, :func:`gpu_of`) and
    the DRAM bytes read and written in GB (``read_gb``, ``write_gb``). :class:`JudgeError` where the file or one of
    ``keys``, the counters or ``extra`` is missing (``why`` says what should have written it)."""
    f = run_dir / "counters.csv"
    if not f.is_file():
        raise JudgeError(f"no {f} ({why})")
    d = pd.read_csv(f)
    need = {*keys, "dram_read_bytes", "dram_write_bytes", "duration_ns", *extra}
    if not need <= set(d.columns):
        raise JudgeError(f"{f}: lacks {', '.join(sorted(need - set(d.columns)))}")
    return d.assign(gpu=gpu_of(run_dir), read_gb=d["dram_read_bytes"] / 1e9, write_gb=d["dram_write_bytes"] / 1e9)


def measured(run_dir: Path) -> pd.DataFrame:
    """Per case the counted bytes (GB), sectors and duration, and the call's GPU (``gpu``)."""
    d = counted(run_dir, KEYS, ("l2_read_sectors",))
    out = d.assign(l2_read_gb=d["l2_read_sectors"] * SECTOR / 1e9)
    return out[["gpu", *KEYS, "read_gb", "write_gb", "l2_read_gb", "duration_ns"]]


def gpu_rows(pred: pd.DataFrame, meas: pd.DataFrame, keys: list[str], name) -> pd.DataFrame:
    """The registration's rows of the call's GPU beside the call's counts, by ``keys``. :class:`JudgeError` where the
    registration has no rows of that GPU or a registered row was not counted (``name(row)`` names it)."""
    gpu = meas["gpu"].iloc[0]
    p = pred[pred["gpu"] == gpu]
    if p.empty:
        raise JudgeError(f"the registration has no rows for {gpu}")
    c = p.merge(meas.drop(columns="gpu").drop_duplicates(keys, keep="last"), on=keys, how="left")
    lost = c[c["read_gb"].isna()]
    if len(lost):
        raise JudgeError(f"no counted launch of {name(lost.iloc[0])} ({len(lost)} missing)")
    return c


def cases(pred: pd.DataFrame, meas: pd.DataFrame) -> pd.DataFrame:
    """Per registered case of the call's GPU: counted and predicted bytes, errors (%), and the rate the counted bytes
    moved at. :class:`JudgeError` where the registration lacks the GPU's rows or a case has no counted launch."""
    c = gpu_rows(pred, meas, KEYS, lambda r: f"H={r.h} M={r.m} group={r.group}")
    c["model_err_pct"] = (c["model_read_gb"] / c["read_gb"] - 1) * 100
    c["compulsory_err_pct"] = (c["compulsory_read_gb"] / c["read_gb"] - 1) * 100
    c["read_over_model"] = c["read_gb"] / c["model_read_gb"]
    c["gbps"] = (c["read_gb"] + c["write_gb"]) / (c["duration_ns"] / 1e9)
    c["loads_ratio"] = c["l2_read_gb"] / c["loads_gb"]
    return c


def ratios_to(c: pd.DataFrame, is_reference: pd.Series, shape: list[str], keys: list[str]) -> pd.DataFrame:
    """Per row of ``c`` not marked by ``is_reference``: its bytes read over the reference row's of the same ``shape``,
    counted and modelled, and how far the model's ratio is off the counted (``off``)."""
    base = c[is_reference].set_index(shape)
    o = c[~is_reference].copy()
    base = base.loc[list(zip(*(o[k] for k in shape)))]
    o["counted"] = o["read_gb"].to_numpy() / base["read_gb"].to_numpy()
    o["model"] = o["model_read_gb"].to_numpy() / base["model_read_gb"].to_numpy()
    o["off"] = o["model"] / o["counted"] - 1
    return o[[*keys, "counted", "model", "off"]].reset_index(drop=True)


def order_ratios(c: pd.DataFrame) -> pd.DataFrame:
    """Per (H, M) and order other than groups of 8: its bytes read over groups of 8's, counted and modelled."""
    return ratios_to(c, c["group"] == 8, ["h", "m"], KEYS)


def bytes_claims(c: pd.DataFrame, n: int, mape_max: float, noun: str) -> dict:
    """The claims the byte-counting plans share, as ``claims_table`` rows by claim: (a) the model's MAPE of the bytes
    read at most ``mape_max`` over all ``n`` registered ``noun``, (b) at most half the compulsory predictor's, and
    (e) every launch's bytes written between the model's stores less the L2's bytes and :data:`WRITE_OVER` times
    them."""
    gpu = c["gpu"].iloc[0]
    mape = float(c["model_err_pct"].abs().mean())
    naive = float(c["compulsory_err_pct"].abs().mean())
    lo = c["model_write_gb"] - c["l2_gb"]
    wr = bool(((c["write_gb"] >= lo) & (c["write_gb"] <= WRITE_OVER * c["model_write_gb"])).all())
    written = c["write_gb"] / c["model_write_gb"]
    return {
        "a": ("a", f"{mape:.2f}% over {len(c)} {noun} ({gpu}; worst {c['model_err_pct'].abs().max():.1f}%)",
              len(c) == n and mape <= mape_max),
        "b": ("b", f"{mape:.2f} against the compulsory's {naive:.2f}%", mape <= naive / 2),
        "e": ("e", f"written over the model's stores {written.min():.3f}-{written.max():.3f}", wr),
    }


def claims(c: pd.DataFrame, provenance: str) -> pd.DataFrame:
    gpu = c["gpu"].iloc[0]
    shared = bytes_claims(c, len(CASES), MAPE, "cases")
    r = order_ratios(c)
    near = int((r["off"].abs() <= RATIO_TOL).sum())
    pairs = c[(c["h"] == PAIRS_H) & (c["group"] == 2)]
    over = pairs["read_over_model"]
    d_met = (len(pairs) == 2 and bool((over >= PARTED).all())) if gpu == "H100" else \
        (len(pairs) == 2 and bool(((over - 1).abs() <= KEPT).all()))
    lr = c["loads_ratio"]
    rows = [
        shared["a"], shared["b"],
        ("c", f"{near} of {len(r)} within {RATIO_TOL:.0%}", len(r) == 18 and near >= RATIO_SHARE * len(r)),
        ("d", f"{gpu}: counted over model {', '.join(f'{v:.3f}' for v in over)} (M = "
              f"{', '.join(str(int(m)) for m in pairs['m'])})", d_met),
        shared["e"],
        ("f", f"{lr.min():.3f}-{lr.max():.3f}", bool(((lr >= LOADS[0]) & (lr <= LOADS[1])).all())),
    ]
    return registered_plan.claims_table(rows, CLAIMS, provenance)


PLAN = registered_plan.Plan(
    name="plan78_hbm_bytes", description=__doc__.splitlines()[0], registered=REGISTERED,
    results=ROOT / "bench/results/validation-registered78", register=register, measured=measured, cases=cases,
    claims=claims, first_file=lambda run_dir: run_dir / "counters.csv",
    tables=lambda c: {"orders": order_ratios(c)})


def main(argv: list[str] | None = None) -> int:
    return registered_plan.main(PLAN, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
