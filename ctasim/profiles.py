"""Profiles derived from a measured one, for machines nobody has measured yet.

A derived profile is the text of a measured profile (its base) with a few fields set to estimates, each with its
reason; every other field, kernel config and comment is the base's, so what was measured stays traceable to its
measurement. :data:`DERIVED` holds each derivation (the one source of truth); ``python -m ctasim.profiles`` writes
the files under ``specs/hardware/`` and ``--check`` fails when a committed file is not what its derivation gives
(the test suite runs it).

``h200-x1-shared2`` to ``-shared4``: one H200 shared by the 2, 3 or 4 chain kernels of a ring (``ctahw``'s
one-GPU test of a ring, an experiment with ``shared_device = true``), one kernel's share as a GPU: its share of the
SMs, of the L2 and of the HBM rate, no link (the next kernel's buffers are local), the L2 and HBM split evenly for the
whole run (registered plans 40, 41). ``h200-x1-shared2-active`` to ``-shared4-active``: the same shares, the L2, HBM
and clock shared among the kernels computing at each tile's start (``Hardware.device_shares``, a field the base does
not write: :attr:`Derivation.added`; registered plan 42). Either split is the estimate that matters: the kernels share
them as they come, and what grows over the run with every kernel computing is in neither (docs/validation.md).

``h200-x8-mechanism``: the 8xH200 machine as the 2xH200 mechanism profile sees it. The lent 2xH200, 4xH200 and
8xH200 machines are GPUs of one HGX H200 host kind (``nvidia-smi topo -m`` shows NV18 between the two lent GPUs:
every H200 SXM reaches its peers through the NVSwitch fabric), so the per-GPU figures, the link's rate and
latency, the fence and the remote atomic are the ones measured on two of its GPUs; what changes is the GPU count,
the topology (a switch: one egress and one ingress port per GPU, :mod:`ctasim.machine`) and the all-reduce, whose
bus bandwidth and per-step latency were fitted at two GPUs only.

``h100-x1-datasheet``: one H100 SXM5 from its datasheet. H100 and H200 SXM are the same GH100 die (132 SMs, 1980 MHz
boost, the same L2 design) with other memory: a 50 MB L2 (the H200's measures 60 MiB) and HBM3 at 3.35 TB/s (HBM3e at
4.8). So every field is the measured H200's but the L2 size and the HBM-bound rates, scaled by the datasheets' ratio
(registered plan 64), and, since registered plan 67's adoption on an H100 (2026-12-05), a panel's reuse across waves
priced by the measured L2 survival curve (``l2_reuse_law``, :data:`H100_REUSE_ADOPTED`), as the H200 profile
does since its own adoption (2026-12-06), and, since registered plan 76's adoption (2026-12-06), the exposed share
of a wave's HBM bytes charged at the H200's measured rate (``l2_hbm_exposed_gbps``, :data:`H100_EXPOSED_ADOPTED`).
Left out: anything else the two parts differ in (the H100's HBM3 latency, its L2's partition behaviour at 50 MB, its
SMs' paces where an order misses, power and clock under load), which the derived profile prices as the H200's.

``h100-x1-datasheet-exposed``: ``h100-x1-datasheet-hbm3`` with the exposed HBM share charged at the H200's measured rate
(registered plan 75's twin, the fields plan 76 adopted; ``-latency`` is plan 65's, the same change on the profile of
that day).

``h100-x1-datasheet-hbm3``: ``h100-x1-datasheet`` as it was before registered plan 76's adoption (the exposed HBM share
at the datasheet-scaled HBM3 rate), by name for the records made with it (:func:`before_h100_exposed` pins a profile).

``h100-x1-datasheet-tile``: ``h100-x1-datasheet`` as it was before registered plan 73's adoption (a plain GEMM's drift
``cta_drift`` tile times a round at every K), by name for the records made with it and for plan 74's twin.

``h200-x2-mechanism-survival`` and ``-survival-gap``: the 2xH200 mechanism profile with the one H200's measured L2
survival curve and its survival ticket law on every ticket-scheduled config (:data:`MECHANISM_SURVIVAL`): as
``h200-x1-calibrated`` adopted it (the sharers' gap spread and the touched bytes), or with the gap spread alone (the
form ``bench/ctapipe_mechanism.py`` found nearest on the committed 2xH200 traces, post-hoc). Registered plan 82's
twins; the chain kernel's config keeps the base's mainloop factor (1.0; the one H200's 1.019 was measured under its
own law on one GPU).

``h100-x8-mechanism``: the 8xH100 HGX host as ``h200-x8-mechanism`` sees it, with ``h100-x1-datasheet``'s L2 size
and HBM scaling; its reuse law stays the base's LRU (the base has no survival curve), it does not take plan 73's drift
law (judged on the one-GPU profile), and since registered plan 87's adoption (2026-12-07) it charges the exposed HBM
share at the H200's measured rate, as ``h100-x1-datasheet`` since plan 76 (:func:`before_h100_x8_exposed`: as before).

``h100-x8-mechanism-exposed``: ``h100-x8-mechanism`` with plan 76's exposed rate (the exposed HBM share charged at the
H200's measured rate): registered plan 86's twin, chosen after plan 85's H100 runs of the producers alone; since plan
87's adoption the profile itself but for its name and source.

Left out: anything that depends on more than two GPUs being busy at once (the switch's aggregate rate under eight
concurrent streams, NCCL's choice of algorithm and channel count at eight, host-side launch contention across
eight streams) is not in the base and not estimated here: the derived profile predicts it as two GPUs' figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from ctasim.spec import SPECS_DIR, load_hardware

__all__ = ["Derivation", "DERIVED", "SHARED", "H200_BEFORE_REUSE", "H100_BEFORE_DRIFT", "H100_BEFORE_EXPOSED",
           "before_h200_reuse", "before_h100_drift", "before_h100_drift_text", "before_h100_exposed",
           "before_h100_adoptions", "derive", "main"]


@dataclass(frozen=True)
class Derivation:
    """A profile from ``base`` (a hardware profile's name) with ``fields`` (name -> (TOML value text, reason))
    set, and ``header`` lines of comment first."""

    base: str
    fields: Mapping[str, tuple[str, str]]
    header: tuple[str, ...]
    added: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    """Fields the base does not write (they take their default there), appended to its ``[hardware]`` table."""
    drift_added: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    """Kernel config fields (name -> (TOML value text, reason)) added after the ``cta_drift`` line of each
    ``[[hardware.kernel_config]]`` table of the base whose ``cta_drift`` is above 0 (the plain persistent GEMM's
    drift), where the base does not write them."""
    tickets: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    """Ticket fields of a kernel config (``ticket_*`` names -> (TOML value text, reason)), set on the one-line
    assignment of each ticket-scheduled ``[[hardware.kernel_config]]`` table of the base (its ``ticket_spread`` > 0):
    the configs :meth:`ctasim.spec.Hardware.with_tickets` changes, where the base writes the field."""
    tickets_added: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    """Ticket fields (``ticket_*`` names -> (TOML value text, reason)) added after the ``ticket_law`` line of each
    ticket-scheduled kernel config of the base, where the base does not write them."""


_X8_NOTE = ("estimate (8 GPUs): not measured on eight GPUs; ")

DERIVED: dict[str, Derivation] = {
    "h200-x8-mechanism": Derivation(
        base="h200-x2-mechanism",
        fields={
            "gpus": ("8", "the HGX H200 host's eight GPUs (the lent nvidia-h200-x8 kind)"),
            "topology": ('"switch"', _X8_NOTE + "every H200 SXM of an HGX host has 18 NVLink4 links into the "
                         "NVSwitch fabric; the two-GPU figures below were measured through it"),
            "measured": ("false", "derived by ctasim.profiles, not measured as a whole"),
            "source": ('"derived by ctasim.profiles from h200-x2-mechanism: its fields, measured on two GPUs of an '
                       'HGX H200 host, with the GPU count and topology of the whole host"', ""),
            "allreduce_bus_gbps": ("307.1058", _X8_NOTE + "h200-x2-mechanism's NCCL ring bus bandwidth, fitted on "
                                   "two GPUs; the bus bandwidth is the G-independent figure of a ring all-reduce"),
            "allreduce_latency_ns": ("19284.6533", _X8_NOTE + "h200-x2-mechanism's per-ring-step latency (its fit "
                                     "intercept 38.6 us over 2(G-1) = 2 steps), charged on 2(G-1) steps at G GPUs"),
        },
        header=(
            "# DERIVED, NOT MEASURED AS A WHOLE: written by `python -m ctasim.profiles` (ctasim.profiles.DERIVED).",
            "# The 8xH200 HGX host as the 2xH200 mechanism profile sees it: every field, kernel config and comment "
            "below is",
            "# h200-x2-mechanism's (measured on two GPUs of such a host) except those marked 'estimate (8 GPUs)'.",
            "# Registered plan 38 predicts the paper's 4- and 8-GPU experiments with it.",
        ),
    ),
}



def _h100_rate(base, field: str, whose: str) -> tuple[str, str]:
    """``base``'s (a measured H200 profile's) HBM-bound rate ``field`` scaled by the datasheets' HBM ratio, as a
    derivation's (TOML value text, reason); ``whose`` names the measurement in the reason."""
    v = getattr(base, field)
    return (repr(round(v * H100_HBM_TBPS / H200_HBM_TBPS, 4)), f"estimate (H100 datasheet): {whose} measured {v} times "
            f"the datasheets' HBM ratio {H100_HBM_TBPS} / {H200_HBM_TBPS} TB/s (HBM3 against HBM3e; the same share of "
            "the datasheet rate)")


def _h100_datasheet() -> Derivation:
    """One H100 SXM as the measured H200 profile sees it: the GH100 compute and clocks are the H200's, the memory
    the H100 datasheet's (registered plan 64)."""
    why = "estimate (H100 datasheet): "
    base = load_hardware("h200-x1-calibrated")

    def rate(field: str) -> tuple[str, str]:
        return _h100_rate(base, field, "the H200's")

    return Derivation(
        base="h200-x1-calibrated",
        fields={
            "gpu": ('"H100"', "NVIDIA H100 80GB HBM3 (SXM5), the lent nvidia-h100-x1 kind"),
            "hbm_gbps": rate("hbm_gbps"),
            "epilogue_pass_gbps": rate("epilogue_pass_gbps"),
            "rowwise_gbps": rate("rowwise_gbps"),
            "l2_bytes": (repr(float(H100_L2_BYTES)), why + "the H100 whitepaper's 50 MB L2 in MiB, as the H200's "
                         "measured cudaDeviceProp.l2CacheSize is 60 MiB (62914560); the survival curve's points are "
                         "in L2 sizes, so it scales with it"),
            "measured": ("false", "derived by ctasim.profiles, not measured on an H100"),
            "source": ('"derived by ctasim.profiles from h200-x1-calibrated: the H200\'s measured fields (the same '
                       'GH100 die: 132 SMs, 1980 MHz, the same L2 and tile rates per byte) with the H100 datasheet\'s '
                       'L2 size and HBM rate"', ""),
            "l2_reuse_law": ('"survival"', H100_REUSE_ADOPTED),
        },
        header=(
            "# DERIVED, NOT MEASURED: written by `python -m ctasim.profiles` (ctasim.profiles.DERIVED).",
            "# One H100 SXM5 (80 GB HBM3) from its datasheet: every field, kernel config and comment below is "
            "h200-x1-calibrated's",
            "# (the same GH100 die: SMs, clocks, tile rates, the L2's behaviour per L2 size) except those marked "
            "'estimate (H100",
            "# datasheet)': the L2 size and the HBM rates. Registered plan 64 predicts an H100 with it before any "
            "H100 ran its shapes.",
        ),
    )


H100_REUSE_ADOPTED = (
    "adopted 2026-12-05 by registered plan 67's rule on one H100 (GPU-f90076c0, bench/results/validation-registered67: "
    "the twin nearer on raw errors 1.85 against 3.20%, on the order effect 0.91 against 1.98 points and "
    "control-normalised 2.83 against 5.50%; plan 68's hold on its order-over-sequential claim not met, 5.73 against "
    "6.43 points, bench/results/validation-registered68): a panel's reuse across waves priced by the measured L2 "
    "survival curve, not an LRU of the whole L2 (ctasim.l2.REUSE_LAWS); the H200 profile took it on "
    "2026-12-06 by the same rule on its own call (bench/results/validation-registered67-h200); nothing fitted")
"""Why ``h100-x1-datasheet`` prices reuse across waves by the survival curve: registered plan 67's adoption."""
H100_L2_BYTES = 50 * 2**20
"""The H100 SXM5's L2: 50 MB in NVIDIA's H100 Tensor Core GPU Architecture whitepaper (taken in MiB as the H200's
measured 60 MiB)."""
H100_HBM_TBPS = 3.35
"""The H100 SXM5's HBM3 rate (NVIDIA H100 datasheet, TB/s)."""
H200_HBM_TBPS = 4.8
"""The H200's HBM3e rate (NVIDIA H200 datasheet, TB/s), the base profile's measured rates' datasheet figure."""
H100_DRIFT_ADOPTED = (
    "adopted 2026-12-06 by registered plan 73's rule on one H100 (GPU-45dfedd7, bench/results/validation-registered73: "
    "ten GEMMs never timed before at their best orders 1.79% against 5.64%, over every unpadded order 3.17 against "
    "7.69%, worst +5.03%): a plain persistent GEMM's drift the same time a round at every K as at K = 8192 "
    "(cta_drift x 8192 / K tile times, KernelConfig.drift_k_ref), not cta_drift tile times at every K; after "
    "registered plan 72 found the tile law +21% slow at K = 53248 on an H100; nothing fitted")
"""Why ``h100-x1-datasheet`` sets ``drift_k_ref`` (registered plan 73's H100 arm); its twins of earlier plans
(``-latency``, ``-tickets``, ``-reuse``) keep the tile law they were registered with."""
H100_BEFORE_EXPOSED = "h100-x1-datasheet-hbm3"
"""The H100 datasheet profile as it was from registered plan 73's adoption to plan 76's (2026-12-06): the exposed HBM
share charged at the datasheet-scaled HBM3 rate, by name."""


def _h100_drift() -> Derivation:
    """The datasheet derivation with registered plan 73's adoption: the drift the same time a round at every K
    (``drift_k_ref``), the exposed HBM share at ``hbm_gbps``."""
    return dataclasses.replace(_h100_datasheet(), drift_added={"drift_k_ref": ("8192.0", H100_DRIFT_ADOPTED)})


def _before_h100_exposed() -> Derivation:
    """``h100-x1-datasheet`` as it was from registered plan 73's adoption to plan 76's (:func:`_h100_drift`), named
    apart."""
    d = _h100_drift()
    return dataclasses.replace(
        d, fields={**d.fields,
                   "source": ('"derived by ctasim.profiles from h200-x1-calibrated: h100-x1-datasheet as it was '
                              'before registered plan 76\'s adoption (2026-12-06): the exposed HBM share charged at '
                              'the datasheet-scaled HBM3 rate"', "")},
        header=d.header + (
            "# The exposed HBM share as before registered plan 76's adoption (2026-12-06): charged at hbm_gbps, the",
            "# datasheet-scaled HBM3 rate (h100-x1-datasheet takes l2_hbm_exposed_gbps, the H200's measured rate).",
        ))


DERIVED[H100_BEFORE_EXPOSED] = _before_h100_exposed()


def _before_h100_drift() -> Derivation:
    """``h100-x1-datasheet`` as it was before registered plan 73's adoption on an H100 (2026-12-06): a plain GEMM's
    drift ``cta_drift`` tile times a round at every K (no ``drift_k_ref``). Registered plans 71-73's commands priced
    the H100 with it, and plan 74 registers it beside the adopted profile."""
    d = _h100_datasheet()
    return dataclasses.replace(
        d,
        fields={**d.fields,
                "source": ('"derived by ctasim.profiles from h200-x1-calibrated: h100-x1-datasheet as it was before '
                           'registered plan 73\'s adoption on an H100 (2026-12-06): a plain GEMM\'s drift cta_drift '
                           'tile times a round at every K"', "")},
        header=d.header + (
            "# The drift as before registered plan 73's adoption on an H100 (2026-12-06): cta_drift tile times a round "
            "at every K",
            "# (no drift_k_ref), kept for the records made with it (h100-x1-datasheet takes drift_k_ref = 8192).",
        ),
    )


H100_BEFORE_DRIFT = "h100-x1-datasheet-tile"
"""The H100 datasheet profile as it was before registered plan 73's adoption (2026-12-06), by name."""
DERIVED[H100_BEFORE_DRIFT] = _before_h100_drift()


def before_h100_drift(hw):
    """``hw`` (a :class:`ctasim.spec.Hardware`) with every kernel config's drift ``cta_drift`` tile times a round at
    every K (``drift_k_ref`` = 0), as ``h100-x1-datasheet`` priced it before registered plan 73's adoption on an H100
    (2026-12-06): the pin of the registrations and records made with it before then."""
    return dataclasses.replace(hw, kernel_configs=tuple(dataclasses.replace(c, drift_k_ref=0.0)
                                                         for c in hw.kernel_configs))


def before_h100_drift_text() -> str:
    """The text ``specs/hardware/h100-x1-datasheet.toml`` had before registered plan 73's adoption (2026-12-06), with
    neither plan 73's drift law nor plan 76's exposed rate: what plans 72 and 73 derived their twins' files from."""
    return derive("h100-x1-datasheet", _h100_datasheet())


def _exposed_at_h200(d: Derivation, source: str, after: str, header: tuple[str, ...]) -> Derivation:
    """Derivation ``d`` with the exposed share of a wave's HBM bytes charged at the H200's measured rate
    (``l2_hbm_exposed_gbps`` added, the roofline's HBM time still at ``hbm_gbps``), its ``source`` text, ``after``: what
    the change was chosen after (the added field's reason), and ``header``: its comment lines."""
    base = load_hardware("h200-x1-calibrated")
    return dataclasses.replace(
        d,
        fields={**d.fields, "source": (source, "")},
        added={**d.added,
               "l2_hbm_exposed_gbps": (repr(base.hbm_gbps), "estimate (post-hoc, H100): the H200's measured "
                                       "hbm_gbps; the exposed share of a wave's HBM bytes (l2_hbm_exposed) charged at "
                                       "it, the roofline's HBM time at hbm_gbps (ctasim.l2.wave_ns): chosen after "
                                       + after)},
        header=header,
    )


def _h100_latency() -> Derivation:
    """``h100-x1-datasheet`` (as registered plan 65 took it, before plan 73's drift law) with the exposed share of a
    wave's HBM bytes charged at the H200's measured rate: the exposed part taken as the loads' latency, which the
    H100's HBM3 does not lengthen (post-hoc, after plan 64's H100s priced the compute-bound GEMMs 1.2-6.0% slow)."""
    d = _h100_datasheet()
    return _exposed_at_h200(
        d, '"derived by ctasim.profiles from h200-x1-calibrated: h100-x1-datasheet with the exposed HBM share charged '
           'at the H200\'s measured rate (the exposed part as latency, not bandwidth)"',
        "registered plan 64's three H100s priced compute-bound GEMMs 1.2-6.0% slow",
        d.header[:-1] + (
            "# datasheet)': the L2 size and the HBM rates. The exposed HBM share is charged at the H200's measured "
            "rate",
            "# (l2_hbm_exposed_gbps, added): a twin chosen after registered plan 64's H100 runs (post-hoc).",
        ))


DERIVED["h100-x1-datasheet-latency"] = _h100_latency()


def _h100_exposed() -> Derivation:
    """``h100-x1-datasheet`` as it was before registered plan 76's adoption (plan 73's drift law included) with the
    exposed HBM share charged at the H200's measured rate: registered plan 75's twin, after plan 74's two H100s priced
    blocks 1-7% slow and, post-hoc, this one change priced them at 0.76 and 1.68% (``bench/posthoc_h100_blocks.py``)."""
    d = _h100_drift()
    return _exposed_at_h200(
        d, '"derived by ctasim.profiles from h200-x1-calibrated: h100-x1-datasheet with the exposed HBM share charged '
           'at the H200\'s measured rate (registered plan 75\'s twin)"',
        "registered plan 74's two H100s priced MLP blocks 1-7% slow",
        d.header + (
            "# The exposed HBM share is charged at the H200's measured rate (l2_hbm_exposed_gbps, added): registered "
            "plan 75's twin,",
            "# chosen after registered plan 74's H100 runs (post-hoc); h100-x1-datasheet-latency is the same change on "
            "the profile before plan 73.",
        ))


DERIVED["h100-x1-datasheet-exposed"] = _h100_exposed()

H100_EXPOSED_ADOPTED = (
    "adopted 2026-12-06 by registered plan 76's rule on one H100 (GPU-f63d1ff4, bench/results/validation-registered76: "
    "four models' blocks never run on an H100 0.91% against 3.88%, worst 1.68%; a chain's sequential and groups of 8 "
    "and 4 at H = 8704 1.16 against 2.14%; its pairs 26.41 against 23.55%, which the rule leaves out): the exposed "
    "share of a wave's HBM bytes (l2_hbm_exposed) charged at the H200's measured hbm_gbps, the roofline's HBM time at "
    "hbm_gbps (ctasim.l2.wave_ns); registered plan 75's twin, chosen after plan 74's H100 runs; nothing fitted")
"""Why ``h100-x1-datasheet`` writes ``l2_hbm_exposed_gbps`` (registered plan 76's adoption)."""


def _exposed_adopted(d: Derivation, reason: str, header: tuple[str, ...]) -> Derivation:
    """Derivation ``d`` with the exposed HBM share charged at the H200's measured rate by a registered plan's adoption:
    ``l2_hbm_exposed_gbps`` added with ``reason``, ``header`` appended to its comment lines (its source as it was)."""
    rate = load_hardware("h200-x1-calibrated").hbm_gbps
    return dataclasses.replace(d, added={**d.added, "l2_hbm_exposed_gbps": (repr(rate), reason)},
                               header=d.header + header)


def _h100_adopted() -> Derivation:
    """``h100-x1-datasheet`` since registered plan 76's adoption (2026-12-06): :func:`_h100_drift` with the exposed HBM
    share at the H200's measured rate, for the reason :data:`H100_EXPOSED_ADOPTED`."""
    return _exposed_adopted(
        _h100_drift(), H100_EXPOSED_ADOPTED, (
            "# The exposed HBM share is charged at the H200's measured rate (l2_hbm_exposed_gbps: registered plan 76's "
            "adoption,",
            "# 2026-12-06); h100-x1-datasheet-hbm3 is this profile as it was before, h100-x1-datasheet-tile before "
            "plan 73's.",
        ))


H100_CAPPED_ADOPTED = (
    "adopted 2026-12-07 by registered plan 98's rule on one H100 (GPU-6f6a6471, bench/results/validation-registered98: "
    "twelve GEMMs at K = 1024-6144 never timed before, at their best orders 1.16% against the absolute law's 4.05%, "
    "worst +2.24%): the absolute law above drift_k_ref, cta_drift tile times below it (KernelConfig.drift_k_law); "
    "read after registered plan 97 found the short-K gate-and-up GEMMs +2.6 to +6.5% under the absolute law; nothing "
    "fitted")
"""Why ``h100-x1-datasheet`` sets ``drift_k_law = "capped"`` (registered plan 98's adoption)."""


def _h100_capped() -> Derivation:
    """``h100-x1-datasheet`` since registered plan 98's adoption (2026-12-07): :func:`_h100_adopted` with the drift's K
    law capped at the tile law below ``drift_k_ref``, for the reason :data:`H100_CAPPED_ADOPTED`."""
    d = _h100_adopted()
    return dataclasses.replace(
        d, drift_added={**d.drift_added, "drift_k_law": ('"capped"', H100_CAPPED_ADOPTED)},
        header=d.header + (
            "# The drift's K law is capped at the tile law below drift_k_ref (drift_k_law: registered plan 98's "
            "adoption, 2026-12-07).",
        ))


H100_PASSES = {"epilogue_pass_gbps": (2905.2808, 14, "SwiGLU passes"), "rowwise_gbps": (3160.5732, 32, "norms")}
"""The two memory-pass rates registered plan 103 read from three committed H100 calls (its
``bench/predictions/reg103-pass-rates/constants.csv``): per field the value and the passes it is the median of."""

H100_PASSES_ADOPTED = (
    "adopted 2026-12-07 by registered plan 103's rule on one H100 (GPU-7a1b197d, "
    "bench/results/validation-registered103: the 14 passes of four blocks never timed alone at 1.20% against the "
    "datasheet-scaled rates' 9.83%)")
"""Why ``h100-x1-datasheet`` takes its own pass rates (registered plan 103's adoption)."""


def _h100_passes() -> Derivation:
    """``h100-x1-datasheet`` since registered plan 103's adoption (2026-12-07): :func:`_h100_capped` with the two
    memory-pass rates of :data:`H100_PASSES`, for the reason :data:`H100_PASSES_ADOPTED`."""
    d = _h100_capped()
    fields = {f: (repr(v), f"measured: the datasheet-scaled rate times the median of {n} {what}' modelled over "
                  "measured times on three committed calls on two H100s (registered plans 101 and 102 and plan 101's "
                  "repeat, GPU-22f650c3 and GPU-b35f0217; the harness's run_ns taken out); " + H100_PASSES_ADOPTED)
              for f, (v, n, what) in H100_PASSES.items()}
    return dataclasses.replace(
        d, fields={**d.fields, **fields},
        header=d.header + (
            "# The memory passes run at the H100's own rates (epilogue_pass_gbps, rowwise_gbps: registered plan 103's "
            "adoption, 2026-12-07).",
        ))


DERIVED["h100-x1-datasheet"] = _h100_passes()


def before_h100_capped(hw):
    """``hw`` (a :class:`ctasim.spec.Hardware`) with every kernel config's drift on the absolute K law
    (``drift_k_law`` = "absolute"), as ``h100-x1-datasheet`` priced it before registered plan 98's adoption
    (2026-12-07): the pin of the registrations and records made with it before then (plans 96-98). Plan 103's later
    adoption is undone too (:func:`before_h100_passes`), as every pin undoes the adoptions after its own."""
    return before_h100_passes(dataclasses.replace(hw, kernel_configs=tuple(
        dataclasses.replace(c, drift_k_law="absolute") for c in hw.kernel_configs)))


def before_h100_passes(hw):
    """``hw`` (a :class:`ctasim.spec.Hardware`) with the memory passes at the datasheet-scaled rates, as
    ``h100-x1-datasheet`` priced them before registered plan 103's adoption (2026-12-07): the pin of the registrations
    and records made with it before then (plans 96-104). Only a rate at the adopted value moves (a profile or twin
    with rates of its own keeps them)."""
    base = load_hardware("h200-x1-calibrated")
    before = {f: float(_h100_rate(base, f, "")[0]) for f, (v, _, _) in H100_PASSES.items() if getattr(hw, f) == v}
    return dataclasses.replace(hw, **before) if before else hw


def before_h100_capped_text() -> str:
    """The text ``specs/hardware/h100-x1-datasheet.toml`` had before registered plan 98's adoption (2026-12-07): what
    plans 97 and 98 derived their twins' files from."""
    return derive("h100-x1-datasheet", _h100_adopted())


def before_h100_adoptions(name: str):
    """Profile ``name`` as the records made before registered plan 73's adoption on an H100 priced it: the drift's
    tile law (:func:`before_h100_drift`) and, for ``h100-x1-datasheet`` itself, the exposed HBM share at ``hbm_gbps``
    (:func:`before_h100_exposed`; registered plan 76's adoption came after). A twin keeps the exposed rate it was
    registered with."""
    hw = before_h100_drift(before_h100_capped(load_hardware(name)))
    return before_h100_exposed(hw) if name == "h100-x1-datasheet" else hw


def before_h100_exposed(hw):
    """``hw`` (a :class:`ctasim.spec.Hardware`) with the exposed HBM share charged at ``hbm_gbps``
    (``l2_hbm_exposed_gbps`` = 0), as ``h100-x1-datasheet`` priced it before registered plan 76's adoption
    (2026-12-06): the pin of the registrations and records made with it before then."""
    return dataclasses.replace(hw, l2_hbm_exposed_gbps=0.0)


def _h100_x8() -> Derivation:
    """The 8xH100 HGX host as ``h200-x8-mechanism`` sees it, with the H100 datasheet's memory: the same GH100 die and
    NVLink4 switch fabric, so only the L2 size and the HBM rate change, scaled as :func:`_h100_datasheet` scales the
    one H200's (registered plan 64's rule). The reuse law stays the base's LRU of the whole L2: the base has no survival
    curve, and plan 67's adoption of the survival law was judged on the one-GPU profile's hierarchy, not this one's."""
    sheet = _h100_datasheet().fields
    base = load_hardware("h200-x8-mechanism")  # (its hbm_gbps is the 2xH200 machine's calibration, not the one H200's)
    return Derivation(
        base="h200-x8-mechanism",
        fields={
            "gpu": ('"H100"', "NVIDIA H100 80GB HBM3 (SXM5): an HGX H100 host's GPUs"),
            "hbm_gbps": _h100_rate(base, "hbm_gbps", "the 2xH200 machine's"),
            "gpus": ("8", "an HGX H100 host's eight GPUs"),
            "topology": ('"switch"', "estimate (H100 datasheet): every H100 SXM of an HGX host has 18 NVLink4 links "
                         "into the NVSwitch fabric, as an H200's; the link figures below were measured through an "
                         "HGX H200 host's"),
            "l2_bytes": (sheet["l2_bytes"][0], "estimate (H100 datasheet): the H100 whitepaper's 50 MB L2 in MiB, "
                         "as h100-x1-datasheet's"),
            "measured": ("false", "derived by ctasim.profiles, not measured on an H100"),
            "source": ('"derived by ctasim.profiles from h200-x8-mechanism: the 8xH200 host\'s fields (the same '
                       'GH100 die and NVLink4 switch fabric) with the H100 datasheet\'s L2 size and HBM rate"', ""),
        },
        header=(
            "# DERIVED, NOT MEASURED: written by `python -m ctasim.profiles` (ctasim.profiles.DERIVED).",
            "# The 8xH100 HGX host as h200-x8-mechanism sees it: every field, kernel config and comment below is "
            "h200-x8-mechanism's",
            "# (the same GH100 die and NVLink4 switch fabric; that profile is itself h200-x2-mechanism's for eight "
            "GPUs) except those",
            "# marked 'estimate (H100 datasheet)': the L2 size and the HBM rate (the epilogue and row-wise kernels take "
            "hbm_gbps).",
            "# A panel's reuse across waves stays an LRU of the whole L2 (the base's law; h100-x1-datasheet prices it "
            "by the",
            "# survival curve since registered plan 67, on its own hierarchy). No plan has measured an H100 host.",
        ),
    )


H100_X8_EXPOSED_ADOPTED = (
    "adopted 2026-12-07 by registered plan 87's rule on one H100 (GPU-f4563d06, bench/results/validation-registered87: "
    "the grouped producers alone at M = 32768, H = 7168-13312, mean |error| 0.61% against 2.35% at the lockstep level, "
    "worst -1.53%, the flat predictor 2.50%; waves 0-1 of the pairs and grouped 0.72 against 2.68%), after plan 86's "
    "twin h100-x8-mechanism-exposed (chosen after plan 85's H100) missed its rule by one bound on another unit: the "
    "exposed share of a wave's HBM bytes (l2_hbm_exposed) charged at the H200's measured hbm_gbps, as "
    "h100-x1-datasheet since plan 76, the roofline's HBM time at hbm_gbps (ctasim.l2.wave_ns); nothing fitted")
"""Why ``h100-x8-mechanism`` writes ``l2_hbm_exposed_gbps`` (registered plan 87's adoption)."""


def _h100_x8_adopted() -> Derivation:
    """``h100-x8-mechanism`` since registered plan 87's adoption (2026-12-07): :func:`_h100_x8` with the exposed HBM
    share at the H200's measured rate, for the reason :data:`H100_X8_EXPOSED_ADOPTED` (its ticket spread as it was)."""
    return _exposed_adopted(
        _h100_x8(), H100_X8_EXPOSED_ADOPTED, (
            "# The exposed HBM share is charged at the H200's measured rate (l2_hbm_exposed_gbps: registered plan 87's "
            "adoption,",
            "# 2026-12-07); ctasim.profiles.before_h100_x8_exposed gives this profile as it was before.",
        ))


DERIVED["h100-x8-mechanism"] = _h100_x8_adopted()


def before_h100_x8_exposed(name: str):
    """Profile ``name`` as the registrations made before registered plan 87's adoption (2026-12-07) priced it:
    ``h100-x8-mechanism`` with the exposed HBM share charged at ``hbm_gbps`` (:func:`before_h100_exposed`), any other
    profile as it is. Plans 83-88's scripts load their profiles through it, so that their registrations stay what they
    were."""
    from ctasim import spec  # noqa: PLC0415  (the loader as it is at the call: a test may stand in for it)

    hw = spec.load_hardware(name)
    return before_h100_exposed(hw) if name == "h100-x8-mechanism" else hw


def _h100_x8_exposed() -> Derivation:
    """``h100-x8-mechanism`` with the exposed share of a wave's HBM bytes charged at the H200's measured rate, the field
    registered plan 76 adopted on ``h100-x1-datasheet``: registered plan 86's twin, chosen after plan 85's H100 priced
    the grouped producers alone 2.2-5.0% slow (post-hoc, ``bench/posthoc_h100_x8_exposed.py``)."""
    d = _h100_x8()
    return _exposed_at_h200(
        d, '"derived by ctasim.profiles from h200-x8-mechanism: h100-x8-mechanism with the exposed HBM share charged '
           'at the H200\'s measured rate (registered plan 86\'s twin)"',
        "registered plan 85's H100 priced the grouped producers alone 2.2-5.0% slow",
        d.header + (
            "# The exposed HBM share is charged at the H200's measured rate (l2_hbm_exposed_gbps, added, as "
            "h100-x1-datasheet since",
            "# registered plan 76): registered plan 86's twin, chosen after registered plan 85's H100 runs "
            "(post-hoc).",
        ))


DERIVED["h100-x8-mechanism-exposed"] = _h100_x8_exposed()

H100_PROBE_GAP_CVS = (1.229, 1.215)
"""``ticket_gap_cv`` as ``ctahw calibrate``'s gap traces read it on two H100s (GPU-291847ac, GPU-e4628d39)."""
H100_TICKET_GAP_CV = round(statistics.median(H100_PROBE_GAP_CVS), 3)
"""``ctahw calibrate``'s gap traces on two H100s, the median of their ``ticket_gap_cv`` (1.229 on GPU-291847ac,
bench/results/hw-h100/2026-12-05-row-groups-gaps/gaps; 1.215 on GPU-e4628d39,
bench/results/hw-h100/2026-12-05-ticket-gaps-GPU-e4628d39; ``python bench/posthoc_h100_tickets.py``, probes.csv)."""
H100_REACH_FACTOR = 2
"""The factor on the H200's ``ticket_spread`` that the twin takes: chosen post-hoc from 2, 3 and 4 as the one that
priced registered plans 64's and 65's six H100 calls best (``bench/posthoc_h100_tickets.py``). Not a measured spread:
the traces' spread in pairs and row order is 3-4 times the H200s' on the same shapes, in groups of 8 the same."""
_TIMES = {2: "twice"}
"""How the derived profile's text says :data:`H100_REACH_FACTOR` (a factor without an entry here fails at import:
the text is written from the constants, never apart from them)."""


def _h100_tickets() -> Derivation:
    """``h100-x1-datasheet`` with the H100's own sharers' spread: the gap probe's ``ticket_gap_cv`` (measured on two
    H100s) and twice the H200's ``ticket_spread`` (post-hoc), after registered plans 64 and 65 found the H100s losing
    the pairs' and row order's reuse where the datasheet profile keeps it."""
    d = _h100_datasheet()
    spread = load_hardware("h200-x1-calibrated").config(128, 256).ticket_spread
    return dataclasses.replace(
        d,
        fields={**d.fields,
                "source": ('"derived by ctasim.profiles from h200-x1-calibrated: h100-x1-datasheet with the H100\'s '
                           'sharers\' spread (the gap probe\'s ticket_gap_cv, ' + _TIMES[H100_REACH_FACTOR] + ' the ticket '
                           'spread)"', "")},
        tickets={"ticket_spread": (repr(round(spread * H100_REACH_FACTOR, 6)),
                                   f"estimate (post-hoc, H100): {H100_REACH_FACTOR} times the H200's "
                                   f"{spread:g} (ctasim.profiles.H100_REACH_FACTOR: the H100 traces' spread in pairs "
                                   "and row order 3-5 times the H200s', bench/posthoc_h100_tickets.py)"),
                 "ticket_gap_cv": (repr(H100_TICKET_GAP_CV),
                                   "measured: ctahw calibrate's gap traces on two H100s, the median of "
                                   f"{H100_PROBE_GAP_CVS[0]:g} and {H100_PROBE_GAP_CVS[1]:g} "
                                   "(ctasim.profiles.H100_TICKET_GAP_CV)")},
        header=d.header[:-1] + (
            "# datasheet)': the L2 size and the HBM rates. The 128x256 config's ticket_gap_cv is the H100's (its gap "
            "probe) and",
            f"# its ticket_spread {_TIMES[H100_REACH_FACTOR]} the H200's (post-hoc): a twin chosen after registered "
            "plans 64's and 65's H100 "
            "runs.",
        ),
    )


DERIVED["h100-x1-datasheet-tickets"] = _h100_tickets()


_REUSE_WHY = ("registered plan 67's twin: a GEMM panel's reuse across waves priced by the measured L2 survival curve "
              "above (the share a line keeps after its reuse distance came in: whole to ~0.4 of l2_bytes, gone by "
              "~0.75), not as an LRU of the whole L2 (ctasim.l2.REUSE_LAWS); the one capacity the survival ticket law "
              "already prices a later sharer by; nothing fitted")


def _reuse(base: Derivation | None, name: str) -> Derivation:
    """``name`` (a measured profile, ``base`` None) or the derivation ``base`` with a GEMM panel's reuse across waves
    priced by the measured L2 survival curve (``l2_reuse_law = "survival"``): registered plan 67's twin (the same law as
    the profile itself since each adoption: the H100's 2026-12-05, the H200's 2026-12-06; kept for plan 67's record)."""
    law = ('"survival"', _REUSE_WHY)
    source = (f'"{name} with a panel\'s reuse across waves priced by the measured L2 survival curve '
              '(l2_reuse_law, registered plan 67\'s twin)"', "")
    if base is None:
        return Derivation(base=name, fields={"source": source, "measured": (
            "false", f"derived by ctasim.profiles: {name}'s measured fields with another reuse law"),
            "l2_reuse_law": law}, header=(
            "# DERIVED: written by `python -m ctasim.profiles` (ctasim.profiles.DERIVED). Every field, kernel config "
            f"and comment below is {name}'s",
            "# but l2_reuse_law: registered plan 67's twin, a panel's reuse across waves priced by the "
            "measured L2 survival curve.",
        ))
    return dataclasses.replace(base, fields={**base.fields, "source": source, "l2_reuse_law": law},
                               header=base.header + (
                                   "# l2_reuse_law: registered plan 67's twin, a panel's reuse across waves "
                                   "priced by the measured L2 survival curve.",))


DERIVED["h200-x1-calibrated-reuse"] = _reuse(None, "h200-x1-calibrated")


MECHANISM_SURVIVAL = {"h200-x2-mechanism-survival": True, "h200-x2-mechanism-survival-gap": False}
"""Registered plan 82's twins of ``h200-x2-mechanism``, every ticket-scheduled config under the one H200's survival
ticket law: as ``h200-x1-calibrated`` adopted it (its gap spread and touched bytes; True), or with its gap spread
alone (touched 1.0: chosen after ``bench/ctapipe_mechanism.py`` judged the three forms on the 2xH200 traces; False)."""


def _mechanism_survival(name: str, touched: bool) -> Derivation:
    """``h200-x2-mechanism`` with the one H200's measured L2 survival curve and its survival ticket law on every
    ticket-scheduled config (the one-CTA-per-tile family's and the chain kernel's): registered plan 82's twins
    (:data:`MECHANISM_SURVIVAL`)."""
    one = load_hardware("h200-x1-calibrated")
    ref = one.config(128, 256)
    curve = "the one H200's (h200-x1-calibrated: the L2 survival probe, bench/results/hw/2026-12-04-l2-survival-1gpu)"
    law = ("one H200's ticket law (h200-x1-calibrated since registered plan 53; ctasim.l2.TICKET_LAWS), on "
           "every ticket-scheduled config: registered plan 82's twin (post-hoc on the committed 2xH200 traces, "
           "bench/ctapipe_mechanism.py: 7.34% as adopted, 4.53% with the gap spread alone, against 9.21%)")
    form = "as adopted after registered plan 58" if touched else ("the gap spread alone, the touched bytes at 1.0 "
                                                                   "(chosen post-hoc on the 2xH200 traces)")
    return Derivation(
        base="h200-x2-mechanism",
        fields={"measured": ("false", "derived by ctasim.profiles: h200-x2-mechanism's measured and fitted fields "
                             "with the one H200's survival ticket law"),
                "source": (f'"h200-x2-mechanism with the one H200\'s survival ticket law, {form} (registered plan '
                           '82\'s twin)"', "")},
        added={"l2_survival_taken": (repr(list(one.l2_survival_taken)).replace("'", ""), "copied: " + curve),
               "l2_survival_share": (repr(list(one.l2_survival_share)).replace("'", ""), "copied: " + curve)},
        tickets={"ticket_law": ('"survival"', law)},
        tickets_added={"ticket_gap_cv": (repr(ref.ticket_gap_cv), "copied: the one H200's sharers' gap spread "
                                         "(h200-x1-calibrated, registered plan 58)"),
                       "ticket_touched": (repr(ref.ticket_touched if touched else 1.0),
                                          "copied: the one H200's touched bytes (h200-x1-calibrated, chosen there "
                                          "post-hoc, adopted by registered plan 58)" if touched else
                                          "the default (no refinement): the form chosen post-hoc on the 2xH200 "
                                          "traces (bench/ctapipe_mechanism.py)")},
        header=(
            "# DERIVED: written by `python -m ctasim.profiles` (ctasim.profiles.DERIVED). Every field, kernel config "
            "and comment below is",
            "# h200-x2-mechanism's but the L2 survival curve (added) and the ticket law of its ticket-scheduled "
            "configs: the one H200's",
            f"# survival law, {form}. Registered plan 82's twin for the 2-GPU cases of plan 11.",
        ))


DERIVED.update({name: _mechanism_survival(name, touched) for name, touched in MECHANISM_SURVIVAL.items()})


def _before_h200_reuse() -> Derivation:
    """``h200-x1-calibrated`` as it was before registered plan 67's adoption on an H200 (2026-12-06): a panel's reuse
    across waves an LRU of the whole L2. The dated records made before the adoption keep it by name."""
    return Derivation(
        base="h200-x1-calibrated",
        fields={"l2_reuse_law": ('"lru"', "the law before registered plan 67's adoption on an H200 (2026-12-06, "
                                 "bench/results/validation-registered67-h200): a panel's reuse across waves an LRU of "
                                 "the whole L2 (ctasim.l2.REUSE_LAWS)"),
                "measured": ("false", "derived by ctasim.profiles: h200-x1-calibrated's measured fields with the "
                             "reuse law it had before 2026-12-06"),
                "source": ('"h200-x1-calibrated before registered plan 67\'s adoption on an H200: reuse across waves '
                           'an LRU of the whole L2"', "")},
        header=("# DERIVED: written by `python -m ctasim.profiles` (ctasim.profiles.DERIVED). Every field, kernel config "
                "and comment below is h200-x1-calibrated's",
                "# but l2_reuse_law: the profile as it was before registered plan 67's adoption on an H200 "
                "(2026-12-06), kept for the records made with it."),
    )


H200_BEFORE_REUSE = "h200-x1-calibrated-lru"
"""The one-H200 profile as it was before registered plan 67's adoption on an H200 (2026-12-06), by name."""
DERIVED[H200_BEFORE_REUSE] = _before_h200_reuse()


def before_h200_reuse(hw):
    """``hw`` (a :class:`ctasim.spec.Hardware`) with a panel's reuse across waves an LRU of the whole L2, as every H200
    profile priced it before registered plan 67's adoption on an H200 (2026-12-06): the pin of the dated records and
    registrations made before it, whatever a later change does to the profile."""
    return dataclasses.replace(hw, l2_reuse_law="lru")


DERIVED["h100-x1-datasheet-reuse"] = _reuse(_h100_datasheet(), "h100-x1-datasheet")


def _shared(kernels: int) -> Derivation:
    """One H200 shared by ``kernels`` chain kernels of a ring, each with its share of the SMs: one share as a GPU."""
    why = "estimate (shared device): "
    base = load_hardware("h200-x1-calibrated")
    return Derivation(
        base="h200-x1-calibrated",
        fields={
            "gpus": (str(kernels), f"the ring's {kernels} chain kernels, each a plan GPU, all on one H200"),
            "sm_count": (str(base.sm_count // kernels), why + f"a kernel's share of the {base.sm_count} SMs "
                         "(ctahw.chain.ChainRunner: the device's SMs // its kernels, all resident)"),
            "l2_bytes": (repr(base.l2_bytes / kernels), why + f"the one L2 ({base.l2_bytes:.0f} bytes, measured) split "
                         "evenly between the kernels; they share it, unevenly at times"),
            "hbm_gbps": (repr(round(base.hbm_gbps / kernels, 4)), why + f"the measured HBM rate ({base.hbm_gbps}) split "
                         "evenly between the kernels"),
            "link_gbps": ("1000000.0", why + "no link: the next kernel's buffers are on the same device"),
            "link_latency_ns": ("0.0", why + "no link"),
            "sm_remote_store_gbps": ("1000000.0", why + "a tile's store into the next kernel's buffers is a local "
                                     "store, in the tile's measured time already"),
            "measured": ("false", "derived by ctasim.profiles, not measured as a whole"),
            "source": (f'"derived by ctasim.profiles from h200-x1-calibrated: one H200 shared by {kernels} chain '
                       f'kernels, one share as a GPU"', ""),
        },
        header=(
            "# DERIVED, NOT MEASURED AS A WHOLE: written by `python -m ctasim.profiles` (ctasim.profiles.DERIVED).",
            f"# One H200 shared by the {kernels} chain kernels of a ring (an experiment with shared_device = true), one "
            "share as a GPU:",
            "# every field, kernel config and comment below is h200-x1-calibrated's (measured on one H200) except those",
            "# marked 'estimate (shared device)'. Registered plan 40 predicts rings on one H200 with it.",
        ),
    )


def _shared_active(kernels: int) -> Derivation:
    """:func:`_shared`'s profile whose kernels share the L2, the HBM and the clock among those computing
    (``device_shares``), with the partial-grid clock boost of the H200 (measured on the 2xH200 machine)."""
    static = _shared(kernels)
    boost = load_hardware("h200-x2-calibrated").max_clock_boost
    why = "estimate (shared device): "
    return Derivation(
        base=static.base,
        fields={
            **static.fields,
            "l2_bytes": (static.fields["l2_bytes"][0], why + "one share of the L2 (measured) when every kernel "
                         "computes; a kernel computing while a of them do gets N/a of it (device_shares)"),
            "hbm_gbps": (static.fields["hbm_gbps"][0], why + "one share of the measured HBM rate when every kernel "
                         "computes; N/a of it while a of them do (device_shares)"),
            "max_clock_boost": (repr(boost), "copied from h200-x2-calibrated (fitted there: partial-grid CUTLASS "
                                "kernels of 32-128 tiles on one H200 of the 2xH200 machine, docs/validation.md): the "
                                "clock gain while only some of the device's kernels compute"),
            "source": (f'"derived by ctasim.profiles from h200-x1-calibrated: one H200 shared by {kernels} chain '
                       f'kernels, one share as a GPU, the L2, HBM and clock shared among the kernels computing"', ""),
        },
        added={"device_shares": (str(kernels), f"the {kernels} plan GPUs are shares of one device (ctasim.costs."
                                 "active_share): not measured as a whole; the sharing rule was chosen after registered "
                                 "plans 40 and 41's traces (post-hoc)")},
        header=(
            "# DERIVED, NOT MEASURED AS A WHOLE: written by `python -m ctasim.profiles` (ctasim.profiles.DERIVED).",
            f"# One H200 shared by the {kernels} chain kernels of a ring (an experiment with shared_device = true), one "
            "share as a GPU,",
            "# the L2, HBM and clock shared among the kernels computing at each tile's start (device_shares): every "
            "field, kernel",
            "# config and comment below is h200-x1-calibrated's (measured on one H200) except those marked 'estimate "
            "(shared device)'",
            "# and max_clock_boost (h200-x2-calibrated's). Registered plan 42 predicts rings on one H200 with it.",
        ),
    )


SHARED: dict[str, int] = {**{f"h200-x1-shared{n}": n for n in (2, 3, 4)},
                          **{f"h200-x1-shared{n}-active": n for n in (2, 3, 4)}}
"""The derived profiles of one device shared by a ring's kernels, and how many kernels each describes (an experiment
with ``shared_device = true`` must run rings of exactly that many kernels on one of them:
:func:`ctasim.cases.check_experiment`). ``-sharedN``: an even split for the whole run (registered plans 40, 41);
``-sharedN-active``: shared among the kernels computing (``device_shares``; registered plan 42)."""
DERIVED.update({name: (_shared_active(n) if name.endswith("-active") else _shared(n)) for name, n in SHARED.items()})

_LINE = re.compile(r"^(?P<key>[a-z][a-z0-9_]*) = (?P<value>.*?)(?P<comment>\s+#.*)?$")


def _ticket_scheduled(lines: list[str]) -> list[bool]:
    """Per line of a profile's text: whether it lies in a ``[[hardware.kernel_config]]`` table whose
    ``ticket_spread`` is written and above 0 (a ticket-scheduled config)."""
    marks, start = [False] * len(lines), None

    def close(end: int) -> None:
        if start is None:
            return
        spread = [float(m["value"]) for m in map(_LINE.match, lines[start:end]) if m and m["key"] == "ticket_spread"]
        if spread and spread[0] > 0:
            marks[start:end] = [True] * (end - start)

    for i, line in enumerate(lines):
        if line.startswith("["):
            close(i)
            start = i if line.strip() == "[[hardware.kernel_config]]" else None
    close(len(lines))
    return marks


def derive(name: str, derivation: Derivation, specs: Path = SPECS_DIR) -> str:
    """The text of profile ``name``: the base's text with the derivation's fields set (a ``[hardware]`` line each,
    its comment replaced by the reason) and its header first. Raises ValueError when a field is not a one-line
    assignment of the base's ``[hardware]`` table."""
    base_text = (specs / "hardware" / f"{derivation.base}.toml").read_text()
    out = list(derivation.header)
    section = None
    todo = {"name": (f'"{name}"', ""), **derivation.fields}
    added = [f"{key} = {value}" + (f"  # {why}" if why else "") for key, (value, why) in derivation.added.items()]
    tickets_set: set[str] = set()
    added_after = 0
    drift_set = False
    not_ticket = sorted(k for k in (*derivation.tickets, *derivation.tickets_added) if not k.startswith("ticket_"))
    if not_ticket:
        raise ValueError(f"{name}: tickets sets ticket fields only, not {', '.join(not_ticket)}")
    scheduled = _ticket_scheduled(base_text.splitlines())
    both = sorted(set(derivation.added) & set(todo))
    if both:
        raise ValueError(f"{name}: {', '.join(both)} both set and added")
    for i, line in enumerate(base_text.splitlines()):
        if line.startswith("["):
            if section == "[hardware]" and added:  # the table ends: the added fields go last in it
                while out and not out[-1].strip():
                    out.pop()
                out += added + [""]
                added = []
            section = line.strip()
        m = _LINE.match(line)
        if section == "[hardware]" and m and m["key"] in derivation.added:
            raise ValueError(f"{name}: {derivation.base} already writes {m['key']}, which the derivation adds")
        if section == "[hardware]" and m and m["key"] in todo:
            value, why = todo.pop(m["key"])
            line = f"{m['key']} = {value}" + (f"  # {why}" if why else "")
        if m and m["key"] in derivation.drift_added and section == "[[hardware.kernel_config]]":
            raise ValueError(f"{name}: {derivation.base} already writes {m['key']}, which the derivation adds")
        if scheduled[i] and m and m["key"] in derivation.tickets_added:
            raise ValueError(f"{name}: {derivation.base} already writes {m['key']}, which the derivation adds")
        if scheduled[i] and m and m["key"] in derivation.tickets:
            value, why = derivation.tickets[m["key"]]
            line = f"{m['key']} = {value}" + (f"  # {why}" if why else "")
            tickets_set.add(m["key"])
        out.append(line)
        if scheduled[i] and m and m["key"] == "ticket_law" and derivation.tickets_added:
            out += [f"{key} = {value}" + (f"  # {why}" if why else "")
                    for key, (value, why) in derivation.tickets_added.items()]
            added_after += 1
        if (section == "[[hardware.kernel_config]]" and m and m["key"] == "cta_drift" and derivation.drift_added
                and float(m["value"]) > 0):
            out += [f"{key} = {value}" + (f"  # {why}" if why else "")
                    for key, (value, why) in derivation.drift_added.items()]
            drift_set = True
    if derivation.drift_added and not drift_set:
        raise ValueError(f"{name}: no kernel config of {derivation.base} has a drift (cta_drift > 0) to add "
                         f"{', '.join(derivation.drift_added)} to")
    if section == "[hardware]" and added:
        out += added
        added = []
    if todo:  # (a base without a [hardware] table lacks its name too)
        raise ValueError(f"{name}: {derivation.base} has no one-line [hardware] field {', '.join(sorted(todo))}")
    configs = sum(1 for j, line in enumerate(base_text.splitlines())
                  if scheduled[j] and line.strip() == "[[hardware.kernel_config]]")
    if derivation.tickets_added and not configs:
        raise ValueError(f"{name}: no ticket-scheduled kernel config of {derivation.base} to add "
                         f"{', '.join(derivation.tickets_added)} to")
    if derivation.tickets_added and added_after != configs:
        raise ValueError(f"{name}: {configs - added_after} ticket-scheduled kernel config(s) of {derivation.base} "
                         f"write no ticket_law to add {', '.join(derivation.tickets_added)} after")
    if set(derivation.tickets) - tickets_set:
        raise ValueError(f"{name}: no ticket-scheduled kernel config of {derivation.base} writes "
                         f"{', '.join(sorted(set(derivation.tickets) - tickets_set))}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write every derived profile (or, with ``--check``, say which committed one differs); exit 1 on a difference."""
    p = argparse.ArgumentParser(prog="python -m ctasim.profiles", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare with the committed files, write nothing")
    args = p.parse_args(argv)
    stale = []
    for name, d in DERIVED.items():
        path = SPECS_DIR / "hardware" / f"{name}.toml"
        text = derive(name, d, SPECS_DIR)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print(f"derived profiles out of date: {', '.join(stale)} (run python -m ctasim.profiles)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
