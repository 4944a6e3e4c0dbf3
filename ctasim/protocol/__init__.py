"""A weak-memory model of CTA-pipelining's scoreboard and work-queue protocol, for property-based tests.

Modules, each answering one question:

* :mod:`.memory` -- what may a load return, and in which orders may writes become visible (the PTX-level rules);
* :mod:`.ops` -- the instructions a program may execute (``st``, ``cp.async.bulk``, fences, ``ld``, polls, atomics);
* :mod:`.system` -- CTAs, kernels, resident slots and epochs on several GPUs; the scheduler's possible choices;
* :mod:`.grid` -- tile grids of a GEMM chain and which producer tiles each consumer tile reads;
* :mod:`.programs` -- the correct protocol as producer / consumer programs, and its seeded-bug mutants;
* :mod:`.chain` -- the chain kernel's protocol (producer and consumer CTAs on one GPU, GPU scope), both designs,
  its mutants and its two-GPU placement;
* :mod:`.rowstats` -- the row-statistics hand-off of a fused LayerNorm (partial sums added by the producers, read
  by the consumers after their acquire) on the unchanged programs, invariants (7)-(8), its mutants and searches;
  :mod:`.rowstats_explore` its Hypothesis search (imports Hypothesis; not imported here);
* :mod:`.invariants` -- invariants (1)-(6), checked event by event against an independent oracle;
* :mod:`.harness` -- one run: setup + variant + system + trace + checker;
* :mod:`.litmus` -- litmus tests and an exhaustive explorer of their outcomes;
* :mod:`.walk` -- random-walk schedule search counting distinct schedules, over worker processes;
* :mod:`.explore` -- Hypothesis strategies and state machines (imports Hypothesis; not imported here);
* :mod:`.report` -- ``python -m ctasim.protocol.report``: the mutant table of docs/protocol.md.

This package does not import the rest of :mod:`ctasim` (``ctasim.plan`` builds the same dependency arrays as
:mod:`.grid`); importing it has no side effects.  What the model leaves out is listed in each module and in
docs/protocol.md: timing, caches as such, mbarrier phases, multicast, aliases, non-multi-copy atomicity.
:mod:`.walk` is the fast random-walk search every CI run uses.
"""

from .grid import Chain
from .harness import Run, Setup
from .invariants import ProtocolViolation, check_trace
from .memory import Memory
from .programs import CORRECT, MUTANTS, Variant
from .rowstats import ROWSTATS, ROWSTATS_MUTANTS, RowStatsChecker, RowStatsVariant
from .system import DrainPolicy, System

__all__ = [
    "Chain",
    "Setup",
    "Run",
    "Variant",
    "CORRECT",
    "MUTANTS",
    "ProtocolViolation",
    "check_trace",
    "Memory",
    "System",
    "DrainPolicy",
    "RowStatsVariant",
    "ROWSTATS",
    "ROWSTATS_MUTANTS",
    "RowStatsChecker",
]
