"""How a registration priced the H200: its profile as it is, or as it was before registered plan 67's adoption.

Registered plan 67's adoption (2026-12-06) changed ``h200-x1-calibrated``'s ``l2_reuse_law`` from an LRU of the whole L2
(``lru``) to the survival curve. The registrations and dated records written before it priced the H200 under the LRU,
and the scripts that wrote them reproduce them with ``ctasim.profiles.before_h200_reuse``; a registration written since
prices it with the profile as it is. A registration folder says which in :data:`PRICING_FILE` (one word, :data:`PROFILE`
or :data:`LRU`), written beside its ``predicted.csv``; a folder without the file was written before the adoption
(:data:`LRU`), and its judge prices it so.

Left out: any other later change to a profile (the file names this one change only; a registration whose profile
moved otherwise is refused by its judge, which checks the registered times against what the profile gives now).
"""

from __future__ import annotations

from pathlib import Path

PRICING_FILE = "pricing.txt"
PROFILE = "profile"
"""The H200 profile as it is (every registration written since 2026-12-06)."""
LRU = "lru"
"""The H200 profile before registered plan 67's adoption: a panel's reuse across waves an LRU of the whole L2."""
BEFORE_ADOPTION_FLAG = "--before-reuse-adoption"
"""The command-line flag of the scripts that take :data:`LRU` (to reproduce a registration written before
2026-12-06)."""
FLAG_HELP = ("price the H200 as before registered plan 67's adoption (2026-12-06: a panel's reuse an LRU of the whole "
             "L2), as every registration written before it was")


def chosen(before_adoption: bool) -> str:
    """The pricing a command line asks for: :data:`LRU` with :data:`BEFORE_ADOPTION_FLAG`, else :data:`PROFILE`."""
    return LRU if before_adoption else PROFILE


def write(folder: Path, pricing: str) -> None:
    """Record ``pricing`` in ``folder`` (which exists) beside the registration it priced."""
    if pricing not in (PROFILE, LRU):
        raise ValueError(f"pricing {pricing!r} is neither {PROFILE!r} nor {LRU!r}")
    (folder / PRICING_FILE).write_text(pricing + "\n")


def read(folder: Path) -> str:
    """The pricing of the registration in ``folder``: its :data:`PRICING_FILE`, or :data:`LRU` where it has none
    (written before the adoption). ValueError naming the file if it holds anything else."""
    path = folder / PRICING_FILE
    if not path.is_file():
        return LRU
    word = path.read_text().strip()
    if word not in (PROFILE, LRU):
        raise ValueError(f"{path}: pricing {word!r} is neither {PROFILE!r} nor {LRU!r}")
    return word


def priced(hw, pricing: str):
    """``hw`` (a :class:`ctasim.spec.Hardware`) as ``pricing`` prices it."""
    from ctasim.profiles import before_h200_reuse

    return before_h200_reuse(hw) if pricing == LRU else hw
