"""The 2-GPU CTA-pipelined kernels on one GPU: every kernel and pipe of a variant's 2-GPU plan on GPU 0.

``ctahw.runner.CtaPipeRunner`` places one kernel per GPU; :class:`OneGpuRunner` puts them all on GPU 0, each kernel on
a stream of its own, so that the consumer (launched first) and the producer run side by side as on two GPUs when
both grids are resident at once (a small chain). Everything the protocol does happens, on local memory: pops,
waits, signals, pushes. Used by bench/hw/ctapipe_onegpu.py (every variant's functional check) and ctahw.stress (the
work-queue protocol's seeded bugs). Leaves out: NVLink (every store is local), and any timing (the kernels share one
GPU's SMs).
"""

from __future__ import annotations

import dataclasses

from ctahw import runner as rn

__all__ = ["OneGpuRunner"]


class OneGpuRunner(rn.CtaPipeRunner):
    """A :class:`ctahw.runner.CtaPipeRunner` with every kernel and pipe of a plan on GPU 0, each kernel launched on a
    stream of its own (:meth:`stream_of`). ``serial=True``: every kernel on one stream, producers first, so a
    consumer starts once its producer finished (every queue slot published, every counter complete): the data path
    and the protocol's bookkeeping without relying on the two grids running side by side."""

    def __init__(self, plan, *args, serial: bool = False, **kwargs):
        self.serial = serial
        plan_arrays = rn.plan_arrays

        def on_gpu0(p):
            ks, ps = plan_arrays(p)  # the runner's checks on the plan as it is (one kernel per GPU)
            return ([dataclasses.replace(k, gpu=0) for k in ks],
                    [dataclasses.replace(q, src_gpu=0, dst_gpu=0) for q in ps])

        rn.plan_arrays = on_gpu0  # the constructor's only call of it
        try:
            super().__init__(plan, *args, **kwargs)
        finally:
            rn.plan_arrays = plan_arrays
        with self.cp.cuda.Device(0):
            self.kernel_streams = {k.op: self.cp.cuda.Stream(non_blocking=True) for k in self.kernels}

    def stream_of(self, k, streams):
        return self.kernel_streams[min(self.kernel_streams)] if self.serial else self.kernel_streams[k.op]

    def launch_order(self):
        return sorted(self.kernels, key=lambda k: k.layer) if self.serial else super().launch_order()

    def sync(self) -> None:
        with self.cp.cuda.Device(0):
            self.cp.cuda.runtime.deviceSynchronize()
