"""Device probe (one GPU): what each kernel draws, and where the power limit holds it when it runs back to back.

    python bench/hw/power_probe.py OUT_DIR --kernels NAME=MxNxK[+OP],... [--periods 3,4.5,6] [--window-s 1.5]
        [--rest-s 1.0] [--run-ms 400] [--rounds 2]

Per kernel (``--kernels`` as ``clock_trajectory.py``'s, operands as ``ctahw.calibrate.kernel_operands``): ``--rounds``
back-to-back rounds of about ``--run-ms`` after a rest of twice ``--rest-s``, NVML's energy counter and SM clock
sampled every ~5 ms meanwhile; then one duty window per period (a multiple of the kernel's launch time: launched
once a period, host-paced) of ``--window-s``, each after ``--rest-s``. The measurement is ``ctahw.power.power_probe``.

Writes, all or nothing, into OUT_DIR (which must not exist): ``duty.csv`` (kernel, m, n, k, epilogue, period_ms,
launches, window_s, energy_j, launch_ms, sm_mhz), ``launches.csv`` (the back-to-back launches: kernel, m, n, k,
epilogue, round, i, t_start_ms, dur_ms), ``samples.csv`` (kernel, round, t_s, energy_mj, sm_mhz) and ``device.csv``
(limit_w, max_sm_mhz, idle_w, idle_window_s). ``bench/power_model.py`` judges them. Bad values, an OUT_DIR that
exists or cannot be made, no GPU (or no CuPy) and an NVML that cannot be read are one line and exit 2.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # this checkout's ctasim and ctahw, not an installed copy

from clock_trajectory import parse_kernels  # noqa: E402


def parse_periods(text: str) -> tuple[float, ...]:
    """``"3,4.5,6"`` -> (3.0, 4.5, 6.0); ValueError unless two or more distinct numbers, each at least 1.5."""
    try:
        out = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"--periods: {text!r} is not numbers separated by commas") from None
    if len(set(out)) < 2 or min(out) < 1.5:
        raise ValueError(f"--periods: {text!r}: need two or more distinct multiples of the launch time, each >= 1.5")
    return out


def main(argv=None) -> int:
    from ctasim.cliargs import OneLineParser, parse_outputs

    ap = OneLineParser(prog="python bench/hw/power_probe.py", description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--kernels", required=True, help="NAME=MxNxK[+OP],...")
    ap.add_argument("--periods", default="3,4.5,6")
    ap.add_argument("--window-s", type=float, default=1.5)
    ap.add_argument("--rest-s", type=float, default=1.0)
    ap.add_argument("--run-ms", type=float, default=400.0)
    ap.add_argument("--rounds", type=int, default=2)
    args = parse_outputs(ap, argv, folders=("out",))
    try:
        kernels = parse_kernels(args.kernels)
        periods = parse_periods(args.periods)
        if args.rounds < 1 or not args.rest_s >= 0 or not args.run_ms > 0 or not args.window_s >= 0.2:
            raise ValueError("--rounds must be >= 1, --rest-s >= 0, --run-ms > 0 and --window-s >= 0.2")
        if args.out.exists():
            raise ValueError(f"{args.out} exists; give a new folder")
        if not args.out.parent.is_dir():
            raise ValueError(f"{args.out.parent} is not a folder")
    except ValueError as e:
        print(f"power_probe: {e}", file=sys.stderr)
        return 2

    import pandas as pd

    from ctahw.device import DeviceError, require_gpus
    from ctahw.gemm import CutlassGemm
    from ctahw.power import Nvml, power_probe

    try:
        require_gpus(1)
        import cupy as cp

        nv = Nvml(0)
        s = cp.cuda.Stream(non_blocking=True)
        tables = power_probe(CutlassGemm(0), s, kernels, nv, periods=periods, window_s=args.window_s,
                             rest_s=args.rest_s, run_ms=args.run_ms, rounds=args.rounds,
                             log=lambda x: print(x, flush=True))
    except DeviceError as e:
        print(f"power_probe: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001  an NVML error (pynvml.NVMLError: no energy counter, no permission)
        if type(e).__module__ != "pynvml":
            raise
        print(f"power_probe: NVML: {e}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix=".power_probe.", dir=args.out.parent))
    try:
        for name, rows in tables.items():
            pd.DataFrame(rows).to_csv(tmp / f"{name}.csv", index=False)
        tmp.rename(args.out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
