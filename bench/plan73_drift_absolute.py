"""Registered plan 73: the CTAs' drift as the same time a round at every K, on an H100 and an H200 (no GPU).

    python bench/plan73_drift_absolute.py --register [--out bench/predictions/reg73-drift-absolute]
    python bench/plan73_drift_absolute.py --judge RUN --out bench/results/validation-registered73[-h200]

The memory hierarchy charges a persistent grid's drift as ``cta_drift`` tile times a round at every K (the "tile"
law), so its re-reads grow with K. Registered plan 72 measured, on an H100, the committed profile 6.6% off eleven wide-N
and long-K GEMMs at their best orders (+21% at K = 53248) and no drift at all 5.3% (2-7% fast); read after it
(post-hoc, ``bench/posthoc_h100_drift.py``), the "absolute" law of registered plan 45 -- ``cta_drift * 8192 / K`` tile
times, the same drift time a round as at K = 8192 -- priced those runs at 3.1%. On the H200s plans 45 and 46 found the
drift's late-half loss not growing with K. The twins set ``drift_k_ref`` = 8192 (``KernelConfig.drift_k_ref``) on the
128x256 config of the GPU's committed profile, nothing else changed, nothing fitted: :data:`ARMS`.

``--register`` writes, per arm (``h100/``, ``h200/``), the twin's TOML, ``predicted.csv``
(``block_gemm_orders.predicted``: every CUTLASS order of :data:`SHAPES` under ``model`` and ``absolute``, each one's
pick, the naive FLOPs line) and ``pricing.txt``. ``--judge RUN`` picks the arm by the GPU ``RUN/env.txt`` names, reads
``RUN/gemm_shapes.csv`` and writes ``plan72_h100_drift.judge_twin``'s tables: ``orders.csv``, ``shapes.csv``,
``judged.csv`` and ``claims.csv`` (:data:`CLAIMS`, with the adoption rule's verdict for that GPU). Left out: the chain
kernels (tickets; their drift is not the plain GEMM's), why the CTAs drift.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pandas as pd  # noqa: E402

import block_gemm_orders as bgo  # noqa: E402
import reuse_pricing  # noqa: E402
from ctasim.cliargs import OneLineParser, parse_outputs  # noqa: E402
from ctasim.predict import Naive  # noqa: E402
from ctasim.profiles import before_h100_adoptions  # noqa: E402
from ctasim.spec import load_hardware  # noqa: E402
from long_k_drift import K_REF  # noqa: E402  (where the twin's drift equals the committed one's)
from plan72_h100_drift import derived_text, judge_twin, read_call, write_judged  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg73-drift-absolute"
ARMS = {"H100": ("h100", "h100-x1-datasheet"), "H200": ("h200", "h200-x1-calibrated")}
"""GPU (as ``env.txt`` names it) -> (the registration's folder, the committed profile its twin derives from)."""
SHAPES = ((16384, 8192, 8192),  # the reference GEMM
          (8192, 5120, 27648), (8192, 8192, 29568), (16384, 4096, 14336), (16384, 3584, 18944),
          (8192, 12288, 65536), (16384, 10240, 40960), (4096, 8192, 40960),  # long K: down GEMMs and longer
          (8192, 55296, 5120), (16384, 28672, 4096))  # wide N: gate-and-up GEMMs
"""Ten GEMMs none of the committed probes timed (Qwen2.5-32B's, -72B's, Llama-3.1-8B's and Qwen2-7B's down GEMMs, three
longer K, two gate-and-up GEMMs), and the reference."""
CLAIMS = {
    "a": "absolute: MAPE at the best measured orders below the committed profile's",
    "b": "absolute: MAPE over the unpadded runs (every order) below the committed profile's",
    "c": "absolute: MAPE at the best orders <= 3% and worst <= 6%",
    "d": "absolute: MAPE at the best orders at most half the naive line's",
    "e": "absolute: every pick measures within 2% of the best measured order",
}
"""Adoption rule, per GPU on its own call: where (a), (b) and (c) hold, that GPU's profile sets ``drift_k_ref`` = 8192
on its 128x256 config (``h200-x1-calibrated`` and the profiles derived from it; on an H100 ``h100-x1-datasheet``'s
derivation); otherwise it stays."""


def twin_name(base: str) -> str:
    return f"{base}-absolute"


def twin_text(base: str) -> str:
    """``base`` with ``drift_k_ref`` = :data:`K_REF` beside its 128x256 config's ``cta_drift`` and the twin's name."""
    text = derived_text(base, twin_name(base), "CTA_DRIFT")
    drift = next(line for line in (ROOT / "specs/hardware" / f"{base}.toml").read_text().splitlines()
                 if line.startswith("cta_drift = "))
    return text.replace("CTA_DRIFT", drift + f"\ndrift_k_ref = {float(K_REF)}  # registered plan 73's twin: the drift "
                        f"the same time a round at every K as at K = {K_REF} (cta_drift x {K_REF} / K tile times; "
                        "KernelConfig.drift_k_ref)", 1)


def profiles(folder: Path, base: str) -> dict:
    """The committed profile as registered (``h100-x1-datasheet`` before this plan's adoption on an H100 and plan 76's,
    2026-12-06: ``ctasim.profiles.before_h100_adoptions``) and its twin."""
    return {"model": before_h100_adoptions(base),
            "absolute": load_hardware(folder / f"{twin_name(base)}.toml")}


def register(out: Path) -> dict[str, pd.DataFrame]:
    naive, got = Naive.fit(bgo.NAIVE_FROM), {}
    for folder, base in ARMS.values():
        arm = out / folder
        arm.mkdir(parents=True, exist_ok=True)
        (arm / f"{twin_name(base)}.toml").write_text(twin_text(base))
        got[folder] = bgo.predicted(list(SHAPES), profiles(arm, base), naive)
        got[folder].round(4).to_csv(arm / "predicted.csv", index=False)
        reuse_pricing.write(arm, reuse_pricing.PROFILE)
    return got


def judge(runs: pd.DataFrame, gpu: str, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    """One call's tables for the arm of ``gpu`` (a key of :data:`ARMS`). ValueError (one line) where the twin file is
    not :func:`twin_text`, a shape was not timed, or the profiles no longer give the registered times."""
    folder, base = ARMS[gpu]
    arm = registration / folder
    if (arm / f"{twin_name(base)}.toml").read_text() != twin_text(base):
        raise ValueError(f"{arm / (twin_name(base) + '.toml')} is not {base} with drift_k_ref as committed")
    return judge_twin(runs, pd.read_csv(arm / "predicted.csv"), profiles(arm, base), SHAPES, "model", "absolute",
                      CLAIMS)


def main(argv=None) -> int:
    ap = OneLineParser(prog="python bench/plan73_drift_absolute.py", description=__doc__.splitlines()[0])
    ap.add_argument("--register", action="store_true", help="write the registration (both arms)")
    ap.add_argument("--judge", type=Path, metavar="RUN", help="the call's folder (gemm_shapes.csv, env.txt)")
    ap.add_argument("--out", type=Path, required=True)
    args = parse_outputs(ap, argv, folders=("--out",))
    try:
        if args.register == (args.judge is not None):
            raise ValueError("give --register or --judge RUN")
        if args.register:
            for folder, pred in register(args.out).items():
                print(folder)
                print(pred.round(3).to_string(index=False))
            return 0
        runs, gpu = read_call(args.judge, tuple(ARMS), "plan 73")
        tables = judge(runs, gpu)
    except ValueError as e:
        print(f"plan73_drift_absolute: {str(e).removeprefix('block_gemm_orders: ')}", file=sys.stderr)
        return 2
    write_judged(args.out, tables)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
