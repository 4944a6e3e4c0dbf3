"""Registered plan 103: an H100's own memory-pass rates, read from three committed calls, on passes never timed (no GPU)

    python bench/plan103_pass_rates.py --register [--out bench/predictions/reg103-pass-rates]
    python bench/plan103_pass_rates.py --judge RUN [--out bench/results/validation-registered103]

``h100-x1-datasheet`` prices the memory passes at the H200's measured rates scaled by the datasheets' HBM ratio
(``epilogue_pass_gbps`` 2,724 GB/s, ``rowwise_gbps`` 2,822). Three committed calls on two H100s timed 46 passes alone
(registered plan 101 on GPU-22f650c3, its repeat and plan 102 on GPU-b35f0217): the profile priced them 4.4-16.8% slow
every time, and plan 102's twin, with the rates read from plan 101's call alone, priced plan 102's 18 passes at 2.27%
against 10.59% -- but plan 102's rule also asked for its fused GeLU cost, which missed, so nothing was adopted. Plan
103 asks the two rates alone, read from all three calls (:func:`pass_constants`: each the profile's rate times the
median, over every pass of that kind the three calls timed, of the modelled over the measured time past the harness's
``run_ns``), for the passes of four blocks never timed op by op (:data:`MODELS`: Llama-3.1-8B, Qwen2.5-7B and
InternLM2-20B, SwiGLU with RMSNorm; GPT-NeoX-20B, GeLU fused with LayerNorm), at M = 16384 and 32768, timed as plans
101 and 102 timed theirs (``bench/hw/mlp_block_breakdown.py --model NAME --no-repeats``). The twin ``passes``
(:func:`plan102_own_ops.ops_profile` with the two fields) against the profile (``model``); each source's split of a
block is :func:`plan101_block_ops.split`'s, under the harness, naive line and seed of plan 99's registrations.

``--register`` writes ``constants.csv`` and ``predicted.csv``; ``--judge RUN`` reads the call's ``breakdown-NAME.csv``
files and ``env.txt`` (an H100) and writes ``items.csv`` and ``claims.csv`` (:data:`CLAIMS`, the rule's verdict in
``adopt``). Refusals as plan 102's. **Adoption rule**: (a) and (b) met, and ``h100-x1-datasheet`` takes the two rates
of ``constants.csv`` with their sources. Left out: the fused epilogues (GeLU, residual) and the GEMMs, which the twin
leaves as they are (their errors are read in ``items.csv``, not judged).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import plan101_block_ops as p101  # noqa: E402
import plan102_own_ops as p102  # noqa: E402

REGISTRATION = ROOT / "bench/predictions/reg103-pass-rates"
RESULTS = ROOT / "bench/results/validation-registered103"
CALLS = ("validation-registered101", "validation-registered101-run2", "validation-registered102")
"""The committed judged calls (bench/results/) whose passes the twin's rates are read from."""
MODELS = ("llama3.1-8b", "qwen2.5-7b", "internlm2-20b", "gpt-neox-20b")
FIELDS = {"epilogue_pass_gbps": ("pass", "SwiGLU passes"), "rowwise_gbps": ("norm", "norms")}
SOURCES = ("model", "passes")
PASS_MAPE = 3.0
CLAIMS = {
    "a": f"passes: MAPE over the four blocks' memory passes alone (the SwiGLU pass of three, the norm of four, both M; "
         f"14 items) <= {PASS_MAPE:g}%",
    "b": "passes: that MAPE below model's",
    "c": "read, not judged: passes' MAPE over the whole blocks against model's",
}


def experiment(name: str):
    """Plan 103's experiment of block ``name`` (:func:`plan101_block_ops.registered_experiment`)."""
    return p101.registered_experiment(103, name)


def pass_constants(results: Path = ROOT / "bench/results") -> pd.DataFrame:
    """The two rates read from :data:`CALLS`' passes: per field the profile's value, the calls' (``own``), the ratio and
    what it was read from."""
    from ctasim.profiles import before_h100_passes
    from ctasim.spec import load_hardware

    hw = before_h100_passes(load_hardware("h100-x1-datasheet"))  # the profile as registered
    run_ms = p101.harness_of(p101._registration(p102.RECORD)).run_ns / 1e6
    t = pd.concat([pd.read_csv(results / c / "items.csv") for c in CALLS], ignore_index=True)
    rows = []
    for field, (role, what) in FIELDS.items():
        g = t[t.role == role]
        ratio = float(np.median((g.model_ms - run_ms) / (g.measured_ms - run_ms)))
        base = getattr(hw, field)
        rows.append(dict(field=field, profile=base, own=round(base * ratio, 4), ratio=ratio,
                         source=f"measured: three committed calls on two H100s (registered plans 101 and 102 and "
                                f"plan 101's repeat, GPU-22f650c3 and GPU-b35f0217; bench/results/{', '.join(CALLS)}): "
                                f"the profile's value times the median of {len(g)} {what}' modelled over measured "
                                "times (the harness's run_ns taken out)"))
    return pd.DataFrame(rows)


def predicted(constants: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per block, M and item: ``model`` (the experiment's profile), ``passes`` (its twin) and the naive line."""
    return p102.twin_predicted(MODELS, experiment, pass_constants() if constants is None else constants, "passes")


def register(out: Path) -> pd.DataFrame:
    return p102.register_twin(out, pass_constants(), predicted)


def judge(runs: pd.DataFrame, registration: Path = REGISTRATION) -> dict[str, pd.DataFrame]:
    t = p102.registered_items(runs, registration, predicted, pass_constants, SOURCES)
    passes = t[t.role.isin(("pass", "norm"))]
    mape = {s: passes[f"{s}_pct"].abs().mean() for s in SOURCES}
    worst = passes.loc[passes.passes_pct.abs().idxmax(), "passes_pct"]
    blocks = t[t.role == "block"]
    block_mape = {s: blocks[f"{s}_pct"].abs().mean() for s in SOURCES}
    rows = [
        ("a", f"{mape['passes']:.2f}%, worst {worst:+.2f}% over {len(passes)} passes (model {mape['model']:.2f}%)",
         mape["passes"] <= PASS_MAPE),
        ("b", f"{mape['passes']:.2f} against model's {mape['model']:.2f}%", mape["passes"] < mape["model"]),
        ("c", f"{block_mape['passes']:.2f} against model's {block_mape['model']:.2f}% over {len(blocks)} blocks",
         block_mape["passes"] < block_mape["model"]),
    ]
    claims = pd.DataFrame([dict(claim=c, rule=CLAIMS[c], value=v, met=bool(m)) for c, v, m in rows])
    claims["adopt"] = bool(claims.met.iloc[:2].all())
    return {"items": t, "claims": claims}


def main(argv=None) -> int:
    return p101.breakdown_main(argv, "plan103_pass_rates", __doc__.splitlines()[0], REGISTRATION, RESULTS, register,
                               judge, lambda run: p101.read_call(run, MODELS, "plan 103"))


if __name__ == "__main__":
    raise SystemExit(main())
