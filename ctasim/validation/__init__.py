"""Post-hoc validation of the simulator against the committed 2×H200 runs: one pipeline, one entry point
(``ctasim validate``, :func:`ctasim.validation.pipeline.main`).

Modules: :mod:`~ctasim.validation.baselines` (baseline runs: fits and judged cases), :mod:`~ctasim.validation.ctapipe`
(CTA-pipelined per-CTA traces: kernel-config fits and judged traces), :mod:`~ctasim.validation.traces` (a measured
trace against a simulated one), :mod:`~ctasim.validation.pipeline` (the command). The registered path (predictions
before measurements) is :mod:`ctasim.predict` and :mod:`ctasim.accuracy`.
"""
