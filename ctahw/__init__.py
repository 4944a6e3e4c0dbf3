"""ctahw: CTA-pipelined CUTLASS kernels and their baselines on real GPUs; emits ctasim's trace schema.

Modules: ``build`` (nvcc JIT of ``kernels/`` into a keyed cache), ``device`` (GPUs, buffers, timing and
correctness helpers), ``gemm`` (CUTLASS and cuBLAS GEMMs), ``comm`` (NCCL all-reduce), ``probes``
(calibration kernels), ``baselines`` (sequential, micro-batching, tensor parallel), ``calibrate`` (machine
-> ``specs/hardware`` profile), ``provenance``, ``cli`` (the ``ctahw`` command). Importing ``ctahw`` needs
neither CuPy nor a GPU; see docs/hardware.md.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
