"""ctasim: a discrete-event model of CTA-pipelined multi-GPU GEMM chains.

spec (TOML) -> plan (tiles, dependency arrays, scoreboards, work-queues) -> engine (SimPy) -> trace.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
