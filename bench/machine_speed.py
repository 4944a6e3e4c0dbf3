"""What tells a fast lent H200 from a slow one, from the committed measurements only (no GPU).

    python bench/machine_speed.py [--out bench/results/machine-speed]

bench/machine_spread.py shows that the sixteen machines that timed a registered plan's reference GEMM
(``regN-reference``, M x 8192 x 8192 at M = 4096 and 16384) differ by about 4%. This asks whether that difference is
one number per machine that a predictor could carry, and whether anything recorded beside the timing foretells it.
Everything is read from the repository's ``bench/results/hw`` as committed; it writes into ``--out``:

* ``probe_shapes.csv``: the tile-order probe machines, the folders whose ``gemm_shapes.csv`` or
  ``probes/tile_orders.csv`` time every M of 2048-32768 at N = K = 8192 (the CUTLASS backend; per machine and M the
  best of the swizzle-8 orders). Per machine and M: the time, its ratio to the shape's median machine and its rank;
  per M: the spread across machines (max/min - 1), sd/median, the Spearman of the machines' times against M = 16384;
  and Kendall's W of the machines' rankings over the six shapes (1: the same ranking in every shape).
* ``trajectories.csv``: per committed clock trajectory (``*/trajectory.csv``, ``*/probe/launches.csv.gz`` of the power
  probe and ``calibration.json``'s
  ``measured.clock_trajectory``), its square-16384 rounds through ``ctahw.calibrate.clock_regime``: the rested launch
  (launches 1-3), the sustained launch (the round's second half; as a ratio and in ms) and the onset, medians over the
  rounds; with the folder's reference GEMM where it has one. Per context (``calibration``: a calibration or clock
  call, or ``ctahw calibrate`` at the start of a plan's call; ``after-experiments``: ``trajectory.csv`` run after a
  registered plan's experiments in the same call), the spread across machines
  of the rested and of the sustained launch, and the Spearman of rested time against sustained ratio.
* ``blocks.csv``: the block cases of plans run on two or three of these machines (the same registration, a folder and
  its ``-run2``/``-run3``). Each case's log deviation from the mean over its machines, against the same for the
  reference GEMM at M = 16384. ``scope = machine``: per plan and machine the reference's deviation and the cases' mean,
  min, max and mean |deviation| raw and after dividing by the reference (M = 16384 and 4096); ``pooled``: all cases,
  Spearman and least-squares slope of case against reference deviation (slope 1: machine speed is one number) and the
  mean |deviation| before and after; ``machine means``: the same over the per-machine means.
* ``machines.csv``: per machine (one reference call each) the reference GEMM times, their tile orders and sample cv,
  the idle temperature and power of ``env.txt``'s first nvidia-smi table (345 MHz, at the call's start), the idle power
  less its linear fit on the idle temperature, ``env.txt``'s later temperature, the serial number, and the nvidia-smi
  samples (``smi.csv[.gz]``) in the reference experiment's window (between its ``== HH:MM:SS`` line in ``log.txt`` and
  the next): temperature, power, SM clock, the fractions below 1980 MHz and under the software power cap.
* ``correlations.csv``: the Spearman (rho, two-sided p of the t approximation, n) of the M = 16384 and the M = 4096
  reference time against every other column of ``machines.csv``; ``constant`` where the column does not vary.

What it cannot show: why the machines differ. nvidia-smi samples every 50 ms, against a 2.8 ms GEMM, and reads
the SM clock as 1980 MHz in every machine's reference window; its power is a 1 s average, and the window's bounds are
log lines to the second. A clock or power difference shorter or smaller than that, or a difference in the chip itself
(leakage, memory), is invisible here; the correlations are over 16 machines, so |rho| below about 0.5 is not told
from none. The trajectories need not time the same tile order as the tuned reference, and two ran after a plan's
experiments, not on a rested GPU.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import machine_spread  # noqa: E402
from ctahw.calibrate import clock_regime  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.validation import traces  # noqa: E402

HW = ROOT / "bench/results/hw"
PROBE_M = (2048, 4096, 8192, 12288, 16384, 32768)
"""The tile-order probe's M (N = K = 8192); a machine is a probe machine if it timed all of them."""
TRAJ_KERNEL = "square-16384"
TRAJ_SHAPE = (16384, 8192, 8192)
"""Its shape: a trajectory that names the same GEMM otherwise (dense operands, no epilogue) is read as it."""
SW_POWER = 0x4
"""nvidia-smi clocks_event_reasons bit: software power cap."""
IDLE_SM_MHZ_MAX = 400
"""The highest SM clock (MHz) at which ``env.txt``'s first nvidia-smi table counts as the GPU at idle: every committed
call's table reads 345 MHz there, and a table taken after work began reads 1980 (a call's later part, not its start)."""


# ---------------------------------------------------------------- statistics (numpy only)
def spread_pct(values) -> float:
    """Spread of positive values: max / min - 1, in %."""
    v = np.asarray(values, dtype=float)
    return float(100 * (v.max() / v.min() - 1))


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for aa in (m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (continued fraction)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def spearman(x, y) -> tuple[float, float, int]:
    """Spearman's rho of the pairs where both are present (:func:`ctasim.validation.traces.spearman`: average ranks
    for ties), its two-sided p from Student's t with n - 2 degrees of freedom (as scipy.stats.spearmanr; scipy is not
    a dependency), and n. NaN rho and p where either side is constant or n < 3."""
    d = pd.DataFrame({"x": np.asarray(x, dtype=float), "y": np.asarray(y, dtype=float)}).dropna()
    n = len(d)
    if n < 3 or d.x.nunique() < 2 or d.y.nunique() < 2:
        return math.nan, math.nan, n
    r = max(-1.0, min(1.0, traces.spearman(d.x, d.y)))
    p = 0.0 if abs(r) == 1 else betainc((n - 2) / 2, 0.5, 1 - r * r)
    return r, p, n


def slope(x, y) -> float:
    """Least-squares slope of y on x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return float(((x - x.mean()) * (y - y.mean())).sum() / ((x - x.mean()) ** 2).sum())


def kendall_w(mat) -> float:
    """Kendall's coefficient of concordance of ``mat``: raters (rows) x objects (columns), no NaN; average ranks, no
    tie correction. 1: every rater ranks the objects alike; 0: no agreement."""
    ranks = pd.DataFrame(np.asarray(mat, dtype=float)).rank(axis=1).to_numpy()
    m, n = ranks.shape
    r = ranks.sum(axis=0)
    return float(12 * ((r - r.mean()) ** 2).sum() / (m ** 2 * (n ** 3 - n)))


# ---------------------------------------------------------------- readers
def short(folder: str) -> str:
    """2026-12-02-registered20-1gpu-run2 -> 2-r20-run2."""
    return (folder.replace("2026-12-0", "").replace("registered", "r").replace("-1gpu", "")
            .replace("calibrate-", "cal-"))


def read_env(path: Path) -> dict:
    """``env.txt``: the GPU, serial, driver and the first nvidia-smi table's idle state (at the call's start; NaN where
    its SM clock is over :data:`IDLE_SM_MHZ_MAX`, a table taken after work began); the second table's temperature
    (later, uuid-less) as ``later_temp_c``."""
    if not path.is_file():
        return {}
    text = path.read_text(errors="replace")
    lines = text.splitlines()
    tables = []
    for i, ln in enumerate(lines[:-1]):
        if ln.startswith("index,"):
            hdr = [h.strip() for h in ln.split(",")]
            val = [v.strip() for v in lines[i + 1].split(",")]
            if len(val) == len(hdr):
                tables.append(dict(zip(hdr, val)))

    def num(s: str) -> float:
        m = re.search(r"[0-9.]+", s or "")
        return float(m.group(0)) if m else math.nan

    gpu = re.search(r"GPU-[0-9a-f]{8}", text)
    out = {"gpu": gpu.group(0) if gpu else ""}
    if tables:
        t = tables[0]
        idle = num(t.get("clocks.current.sm [MHz]")) <= IDLE_SM_MHZ_MAX  # else not the call's start: no idle state
        out.update(serial=t.get("serial", ""), driver=t.get("driver_version", ""),
                   power_limit_w=num(t.get("power.limit [W]")), max_sm_mhz=num(t.get("clocks.max.sm [MHz]")),
                   idle_temp_c=num(t.get("temperature.gpu")) if idle else math.nan,
                   idle_w=num(t.get("power.draw [W]")) if idle else math.nan)
    if len(tables) > 1:
        out["later_temp_c"] = num(tables[1].get("temperature.gpu"))
    return out


def read_smi(path: Path) -> pd.DataFrame:
    """nvidia-smi csv (every 50 ms): t, sm (MHz), w, temp, reasons (int)."""
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt") as f:
        d = pd.read_csv(f, skipinitialspace=True)
    d.columns = [c.strip() for c in d.columns]
    strip = lambda s: pd.to_numeric(s.astype(str).str.extract(r"([0-9.]+)")[0], errors="coerce")  # noqa: E731
    return pd.DataFrame({
        "t": pd.to_datetime(d["timestamp"], format="%Y/%m/%d %H:%M:%S.%f"),
        "sm": strip(d["clocks.current.sm [MHz]"]), "w": strip(d["power.draw [W]"]),
        "temp": pd.to_numeric(d["temperature.gpu"], errors="coerce"),
        "reasons": d["clocks_event_reasons.active"].astype(str).map(lambda s: int(s, 16) if s.startswith("0x") else 0)})


def log_windows(log: Path, day: pd.Timestamp) -> list[tuple[str, pd.Timestamp]]:
    """``log.txt``'s ``== HH:MM:SS name`` lines as (name, time) on the smi's first day (past midnight: the next)."""
    out: list[tuple[str, pd.Timestamp]] = []
    if not log.is_file():
        return out
    for ln in log.read_text(errors="replace").splitlines():
        m = re.match(r"== (\d\d:\d\d:\d\d) (.*)", ln)
        if m:
            t = pd.Timestamp(f"{day.date()} {m.group(1)}")
            if out and t < out[-1][1]:
                t += pd.Timedelta(days=1)
            out.append((m.group(2).strip(), t))
    return out


def reference_window(folder: Path) -> dict:
    """nvidia-smi over the reference experiment's window (non-idle samples: SM clock > 400 MHz) and the whole call."""
    smi = next((p for p in (folder / "smi.csv.gz", folder / "smi.csv") if p.is_file()), None)
    if smi is None:
        return {}
    s = read_smi(smi)
    out: dict = {"smi_start": s.t.iloc[0]}
    a = s[s.sm > 400]
    out["call_f_swpower"] = float(((a.reasons & SW_POWER) > 0).mean()) if len(a) else math.nan
    wins = log_windows(folder / "log.txt", s.t.iloc[0].normalize())
    names = [w[0] for w in wins]
    i = next((k for k, n in enumerate(names) if n.endswith("-reference")), None)
    if i is None:
        return out
    t0 = wins[i][1]
    t1 = wins[i + 1][1] if i + 1 < len(wins) else s.t.iloc[-1]
    w = s[(s.t >= t0) & (s.t < t1)]
    a = w[w.sm > 400]
    pre = s[s.t < t0]
    out.update({
        "ref_after_probe": int(not (i == 0 or (i == 1 and names[0] == "GPU tests"))),
        "temp_at_ref_start": float(pre.temp.iloc[-1] if len(pre) else w.temp.iloc[0]),
        "refw_temp_max": float(w.temp.max()), "refw_w_med": float(a.w.median()), "refw_w_max": float(w.w.max()),
        "refw_sm_med": float(a.sm.median()), "refw_sm_mean": float(a.sm.mean()),
        "refw_f_below1980": float((a.sm < 1980).mean()), "refw_f_swpower": float(((a.reasons & SW_POWER) > 0).mean())})
    return out


# ---------------------------------------------------------------- 4. machines and correlations
def machines() -> pd.DataFrame:
    """One row per machine, its first reference call (``machine_spread.reference_calls``: a later call on a machine
    already counted is a repeat, left out here): see the module docstring."""
    rows = []
    for res in machine_spread.reference_calls()[0]:
        folder = res.parent.parent
        env = read_env(folder / "env.txt")
        r: dict = {"folder": folder.name, "call": short(folder.name), "gpu": env.get("gpu", "")}
        d = pd.read_csv(res).query("status == 'ok'")
        for m in (16384, 4096):
            x = d[d.m == m].iloc[0]
            samples = np.array([float(v) for v in str(x.samples_ms).split(";")])
            r[f"ref{m}_ms"] = float(x.makespan_ms)
            r[f"ref{m}_order"] = next(p.split(":")[1] for p in str(x.schedules).split(";")
                                      if p.startswith(f"{m}x8192x8192:"))
            r[f"ref{m}_cv_pct"] = float(100 * samples.std(ddof=1) / np.median(samples))
        r.update({k: env.get(k, math.nan) for k in ("idle_temp_c", "idle_w", "later_temp_c", "power_limit_w",
                                                   "max_sm_mhz")})
        r["serial"] = env.get("serial", "")
        r["driver"] = env.get("driver", "")
        r.update(reference_window(folder))
        rows.append(r)
    d = pd.DataFrame(rows)
    d["to_median_16384"] = d.ref16384_ms / d.ref16384_ms.median()
    fit = np.polyfit(d.idle_temp_c, d.idle_w, 1)
    d["idle_w_less_temp"] = d.idle_w - np.polyval(fit, d.idle_temp_c)
    d["ref16384_raster"] = d.ref16384_order.str[0].astype(int)
    d["serial_prefix5"] = d.serial.str[:5].astype(int)
    d["start_order"] = d.smi_start.rank()
    d["smi_start"] = d.smi_start.astype(str)
    d["driver_code"] = d.driver.astype("category").cat.codes
    cols = ["folder", "call", "gpu", "serial", "driver", "ref16384_ms", "to_median_16384", "ref16384_order",
            "ref16384_cv_pct", "ref4096_ms", "ref4096_order", "ref4096_cv_pct", "idle_temp_c", "idle_w",
            "idle_w_less_temp", "later_temp_c", "power_limit_w", "max_sm_mhz", "smi_start", "start_order",
            "ref_after_probe", "temp_at_ref_start", "refw_temp_max", "refw_w_med", "refw_w_max", "refw_sm_med",
            "refw_sm_mean", "refw_f_below1980", "refw_f_swpower", "call_f_swpower", "ref16384_raster",
            "serial_prefix5", "driver_code"]
    return d[cols]


CORR_X = ["ref4096_ms", "idle_temp_c", "idle_w", "idle_w_less_temp", "later_temp_c", "temp_at_ref_start",
          "refw_temp_max", "refw_w_med", "refw_w_max", "refw_sm_med", "refw_sm_mean", "refw_f_below1980",
          "refw_f_swpower", "call_f_swpower", "ref16384_raster", "ref16384_cv_pct", "ref_after_probe", "start_order",
          "serial", "serial_prefix5", "power_limit_w", "max_sm_mhz", "driver_code"]


def correlations(d: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for y in ("ref16384_ms", "ref4096_ms"):
        for x in CORR_X:
            if x == y:
                continue
            xs = pd.to_numeric(d[x], errors="coerce")
            rho, p, n = spearman(d[y], xs)
            rows.append({"y": y, "x": x, "n": n, "rho": rho, "p": p,
                         "note": "constant" if xs.dropna().nunique() < 2 else ""})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- 3. blocks on several machines
def plan_cases(d: pd.DataFrame) -> pd.DataFrame:
    """Every ok case of a registered plan (not its reference) that ran on two or more of the machines ``d``, with its
    log deviation from the case's mean over those machines (``case_rel``) and the same for the machine's reference
    GEMM at M = 16384 (``ref_rel``) and 4096 (``ref4k_rel``) over the same machines."""
    rows = []
    for folder in d.folder:
        for res in sorted((HW / folder).glob("reg*/results.csv")):
            for r in pd.read_csv(res).query("status == 'ok'").itertuples():
                rows.append({"folder": folder, "experiment": r.experiment, "case": r.case, "strategy": r.strategy,
                             "variant": "" if pd.isna(r.variant) else r.variant, "ms": float(r.makespan_ms)})
    c = pd.DataFrame(rows)
    c["plan"] = c.experiment.str.extract(r"^(reg\d+)")[0]
    c = c.merge(d[["folder", "call", "ref16384_ms", "ref4096_ms"]], on="folder")
    key = ["plan", "experiment", "case", "strategy", "variant"]
    c = c[(c.groupby(key).folder.transform("nunique") >= 2) & ~c.experiment.str.endswith("-reference")].copy()
    g = c.groupby(key)
    for col, src in (("case_rel", "ms"), ("ref_rel", "ref16384_ms"), ("ref4k_rel", "ref4096_ms")):
        c[col] = np.log(c[src]) - g[src].transform(lambda s: np.log(s).mean())
    return c


def blocks(c: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (plan, call), g in c.groupby(["plan", "call"]):
        rows.append({"scope": "machine", "plan": plan, "call": call, "cases": len(g),
                     "ref16384_dev_pct": 100 * g.ref_rel.iloc[0], "ref4096_dev_pct": 100 * g.ref4k_rel.iloc[0],
                     "cases_mean_pct": 100 * g.case_rel.mean(), "cases_min_pct": 100 * g.case_rel.min(),
                     "cases_max_pct": 100 * g.case_rel.max(), "abs_dev_pct": 100 * g.case_rel.abs().mean(),
                     "abs_dev_less_ref16384_pct": 100 * (g.case_rel - g.ref_rel).abs().mean(),
                     "abs_dev_less_ref4096_pct": 100 * (g.case_rel - g.ref4k_rel).abs().mean()})
    s = pd.DataFrame(rows)
    rows.append({"scope": "pooled", "plan": "all", "call": "all", "cases": len(c),
                 "abs_dev_pct": 100 * c.case_rel.abs().mean(),
                 "abs_dev_less_ref16384_pct": 100 * (c.case_rel - c.ref_rel).abs().mean(),
                 "abs_dev_less_ref4096_pct": 100 * (c.case_rel - c.ref4k_rel).abs().mean(),
                 "spearman": spearman(c.ref_rel, c.case_rel)[0], "slope": slope(c.ref_rel, c.case_rel)})
    rows.append({"scope": "machine means", "plan": "all", "call": "all", "cases": len(s),
                 "spearman": spearman(s.ref16384_dev_pct, s.cases_mean_pct)[0],
                 "slope": slope(s.ref16384_dev_pct, s.cases_mean_pct)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- 1. the tile-order probe's shapes
def probe_shapes() -> pd.DataFrame:
    rows = []
    files = sorted([*HW.glob("*/gemm_shapes.csv"), *HW.glob("*/*/gemm_shapes.csv"),
                    *HW.glob("*/probes/tile_orders.csv")])
    for f in files:
        x = pd.read_csv(f)
        if not {"backend", "m", "n", "k", "order", "median_ms"} <= set(x.columns):
            continue
        x = x[(x.backend == "cutlass") & (x.n == 8192) & (x.k == 8192) & x.order.astype(str).str.endswith("swizzle8")]
        if not set(PROBE_M) <= set(x.m):
            continue
        folder = f.parent.parent if f.parent.name == "probes" else f.parent
        name = str(folder.relative_to(HW))
        gpu = read_env(folder / "env.txt").get("gpu") or "(not recorded)"
        for m in PROBE_M:
            rows.append({"folder": name, "machine": short(name), "gpu": gpu, "m": m,
                         "best_s8_ms": float(x[x.m == m].median_ms.min())})
    p = pd.DataFrame(rows)
    wide = p.pivot(index="m", columns="folder", values="best_s8_ms")
    g = p.groupby("m").best_s8_ms
    p["to_median"] = p.best_s8_ms / g.transform("median")
    p["rank"] = g.rank().astype(int)
    shape = pd.DataFrame({"machines": wide.notna().sum(axis=1),
                          "spread_pct": [spread_pct(wide.loc[m]) for m in wide.index],
                          "sd_pct": 100 * wide.std(axis=1) / wide.median(axis=1),
                          "rho_vs_16384": [spearman(wide.loc[m], wide.loc[16384])[0] for m in wide.index]},
                         index=wide.index)
    p = p.merge(shape, left_on="m", right_index=True)
    p["kendall_w"] = kendall_w(wide.values)
    return p.sort_values(["m", "folder"]).reset_index(drop=True)


# ---------------------------------------------------------------- 2. clock trajectories
def trajectory_sources() -> list[tuple[Path, str, list[dict]]]:
    """(folder, source file, rows) of every committed clock trajectory."""
    out = []
    for f in sorted([*HW.glob("*/trajectory.csv"), *HW.glob("*/*/trajectory.csv")]):
        out.append((f.parent, f.name, pd.read_csv(f).to_dict("records")))
    for f in sorted(HW.glob("*/probe/launches.csv.gz")):  # bench/hw/power_probe.py's back-to-back rounds
        out.append((f.parent.parent, "probe/" + f.name, pd.read_csv(f).to_dict("records")))
    for f in sorted([*HW.glob("*/calibration.json"), *HW.glob("*/*/calibration.json")]):
        tr = json.loads(f.read_text()).get("measured", {}).get("clock_trajectory")
        if tr:
            out.append((f.parent, f.name + ":clock_trajectory", tr))
    return sorted(out, key=lambda s: str(s[0]))


def trajectories() -> pd.DataFrame:
    rows = []
    for folder, source, tr in trajectory_sources():
        rows_of = [r for r in tr if r["kernel"] == TRAJ_KERNEL]
        if not rows_of:  # the same GEMM under another name (the power probe's k8192), dense operands, no epilogue
            rows_of = [{**r, "kernel": TRAJ_KERNEL} for r in tr if (r.get("m"), r.get("n"), r.get("k")) == TRAJ_SHAPE
                       and not (isinstance(r.get("epilogue"), str) and r["epilogue"])]
        if not rows_of:
            continue
        _, per_round = clock_regime(rows_of, kernels=(TRAJ_KERNEL,))
        ref = sorted(folder.glob("reg*-reference/results.csv"))
        ref_ms = math.nan
        if ref:
            d = pd.read_csv(ref[0]).query("status == 'ok' and m == 16384")
            ref_ms = float(d.makespan_ms.iloc[0])
        rested = statistics.median(r["rested_ms"] for r in per_round)
        sustained = statistics.median(r["sustained_slowdown"] for r in per_round)
        rows.append({"folder": str(folder.relative_to(HW)), "machine": short(str(folder.relative_to(HW))),
                     "source": source, "gpu": read_env(folder / "env.txt").get("gpu") or "(not recorded)",
                     # calibrate's trajectory opens its call (registered plan 48's came before its experiments);
                     # clock_trajectory.py's closes the plans that ran it after their experiments
                     "context": "after-experiments" if source == "trajectory.csv" and any(folder.glob("reg*/results.csv"))
                     else "calibration",
                     "rounds": len(per_round), "rested_ms": rested, "sustained": sustained,
                     "sustained_ms": rested * sustained,
                     "onset_ms": statistics.median(r["onset_ms"] for r in per_round), "ref16384_ms": ref_ms})
    t = pd.DataFrame(rows)
    for ctx, g in t.groupby("context"):
        i = t.context == ctx
        t.loc[i, "context_machines"] = len(g)
        t.loc[i, "context_rested_spread_pct"] = spread_pct(g.rested_ms)
        t.loc[i, "context_sustained_ms_spread_pct"] = spread_pct(g.sustained_ms)
        t.loc[i, "context_rho_rested_sustained"] = spearman(g.rested_ms, g.sustained)[0]
    t["context_machines"] = t.context_machines.astype(int)
    return t


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/machine_speed.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/machine-speed")
    args = parse_outputs(ap, argv, folders=("--out",))
    m = machines()
    if m.empty or (m.gpu == "").any() or m.gpu.duplicated().any():
        print("machine_speed: every reference call needs its own machine's env.txt", file=sys.stderr)
        return 2
    corr = correlations(m)
    cases = plan_cases(m)
    b = blocks(cases)
    p = probe_shapes()
    t = trajectories()
    args.out.mkdir(parents=True, exist_ok=True)
    m.round(4).to_csv(args.out / "machines.csv", index=False)
    corr.round(4).to_csv(args.out / "correlations.csv", index=False)
    b.round(4).to_csv(args.out / "blocks.csv", index=False)
    p.round(4).to_csv(args.out / "probe_shapes.csv", index=False)
    t.round(4).to_csv(args.out / "trajectories.csv", index=False)

    pd.set_option("display.width", 220, "display.max_columns", 40)
    shapes = p.drop_duplicates("m").set_index("m")
    print(f"1. probe machines ({shapes.machines.iloc[0]}) x M x 8192 x 8192, best swizzle-8 order: spread per M (%)",
          shapes.spread_pct.round(2).to_dict(), f"Kendall W {p.kendall_w.iloc[0]:.3f}")
    print(p.pivot(index="machine", columns="m", values="to_median").round(4).to_string())
    print("\n2. clock trajectories, square-16384 (medians over rounds)")
    print(t.drop(columns=["folder", "source"]).round(4).to_string(index=False))
    print("\n3. block cases on several machines (log deviation from the machines' mean, %)")
    print(b.round(3).to_string(index=False))
    print("\n4. machines: M = 16384 reference", f"spread {spread_pct(m.ref16384_ms):.2f}%;",
          "Spearman with the reference time (|rho| >= 0.3 or constant):")
    show = corr[(corr.rho.abs() >= 0.3) | (corr.note != "")]
    print(show.round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
