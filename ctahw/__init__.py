"""ctahw: CTA-pipelined CUTLASS kernels and their baselines on real GPUs; emits ctasim's trace schema."""

__version__ = "0.1.0"
__all__ = ["__version__"]
