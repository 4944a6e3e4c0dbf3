"""Issuing a ctasim :class:`~ctasim.plan.Plan` on GPUs: the one executor of sequential, micro-batching and tensor
parallelism, for every workload the spec format describes.

A plan (``ctasim.strategies``) says which GEMM kernels, copies, collectives and memory passes run on which GPU and
what each waits for; each operation's :class:`~ctasim.plan.Region` says what of which layer it computes, moves or
reduces.  :class:`PlanExecutor` turns that into data and launches, the same way for every strategy:

* **buffers**: per (GPU, layer) the layer's output as that GPU holds it, in up to three stages -- ``gemm`` (the GEMM's
  output where the epilogue ops run as a kernel of their own), ``act`` (after the epilogue), ``norm`` (after the
  row-wise op). A layer's *output* is its last stage. Its columns are what that GPU's kernels of the layer compute
  (all of N, or a tensor-parallel column slice); its rows are the layer's M (a chunk writes its row range).
* a **GEMM** of layer l on GPU g reads layer l - 1's output on g (layer 0: the workload's input), the weight slice of
  its region, and writes its rows of layer l on g, with the layer's epilogue fused (``Layer.epilogue_fused``); a
  residual (the workload's input, or the residual stream where the layer says so: ``Layer.residual_source``) is added
  by the ``k0 = 0`` slice only, so a row-parallel pair adds it once.
* a **Transfer** copies its rows of layer l's output from ``src`` to ``dst`` (the copy engine, on ``src``'s copy
  stream); a **Collective** all-reduces layer l's output over its GPUs; a **MemoryPass** runs the layer's epilogue
  ops (``what = "epilogue"``) or its row-wise op (``"rowwise"``) over its rows.
* **order**: kernels and passes run on their GPU's compute stream, transfers on the source GPU's copy stream, a
  collective on the compute streams of its GPUs. Operations are issued in the plan's order (topological: a plan
  adds an operation after everything it waits for); a dependency on another stream becomes an event wait, one on
  the same stream is stream order. The dependencies' delays are the model's launch costs, not instructions.

Before anything is timed the executor places the inputs: the workload's input on every GPU that reads it, each
kernel's weight slice on its GPU (``Inputs``: one bf16 input and one weight matrix per layer, made on GPU 0, and the
residual stream where a layer adds it).

Two machines issue the operations: :class:`CudaMachine` (CuPy streams and events, the CUTLASS GEMM with its fused
epilogues, ``ctahw.rowwise``'s kernels, peer copies, NCCL; plan GPU g on physical device ``devices[g]``) and
:class:`ReferenceMachine` (numpy, fp32, no streams: what the plan computes, so that a CPU test can check every
strategy's data flow against the workload's reference, :func:`reference_output`).

Left out: pipes (the CTA-pipelined kernels run through ``ctahw.runner`` and ``ctahw.chain``), all-gathers (TP's
unpaired last layer: :func:`plan_reason` names it), and a GEMM that reads a column slice of a wider buffer (no plan
asks for one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ctasim.plan import Collective, Kernel, MemoryPass, Op, Plan, Transfer
from ctasim.spec import Layer, Workload

__all__ = ["PlanExecutor", "CudaMachine", "ReferenceMachine", "Inputs", "plan_reason", "reference_output",
           "reference_bf16", "stage_names"]

STAGES = ("gemm", "act", "norm")


def stage_names(layer: Layer) -> tuple[str, ...]:
    """The buffers a layer's output passes through on a GPU: ``gemm`` where the epilogue is a kernel of its own,
    then ``act``, then ``norm`` where the layer has a row-wise op; the last is the layer's output."""
    return (("gemm",) if layer.epilogue_pass else ()) + ("act",) + (("norm",) if layer.rowwise else ())


def _out_cols(layer: Layer, n: int) -> int:
    """Stored columns of ``n`` GEMM columns of ``layer`` (a gated epilogue stores half)."""
    return n * layer.out_n // layer.n


@dataclass
class _Buffer:
    """Layer ``layer``'s data on GPU ``gpu``: ``cols`` stored columns from column ``col0`` of the layer's output
    (``gemm_cols`` GEMM columns from ``n0`` before a gated epilogue), every row of its M."""

    gpu: int
    layer: int
    col0: int
    cols: int
    n0: int
    gemm_cols: int


def _streams(op: Op) -> list[tuple[int, str]]:
    """The (plan GPU, stream kind) pairs an operation runs on."""
    if isinstance(op, (Kernel, MemoryPass)):
        return [(op.gpu, "compute")]
    if isinstance(op, Transfer):
        return [(op.src, "copy")]
    if isinstance(op, Collective):
        return [(g, "compute") for g in op.gpus]
    raise TypeError(f"unknown operation {type(op).__name__}")


def _layout(plan: Plan, wl: Workload) -> tuple[dict[tuple[int, int], _Buffer], dict[int, str], list[str]]:
    """Every (GPU, layer) buffer the plan's operations touch; the stage each operation writes (a transfer or a
    collective: the stage its dependencies on that layer wrote, which it moves or reduces); the problems that keep
    the executor from running the plan."""
    bufs: dict[tuple[int, int], _Buffer] = {}
    stage: dict[int, str] = {}
    problems: list[str] = []
    layers = wl.layers

    def carried(op) -> str | None:
        got = {stage.get(d) for d, _ in op.deps if getattr(plan.ops[d], "layer", None) == op.layer}
        got.discard(None)
        if len(got) != 1:
            problems.append(f"{op.name}: its dependencies do not say which stage of layer {op.layer} it "
                            f"{'moves' if isinstance(op, Transfer) else 'reduces'}")
            return None
        return got.pop()

    if plan.pipes:
        problems.append("a plan with pipes (CTA-pipelining) runs on ctahw.runner, not the plan executor")
    for op in plan.ops:
        if isinstance(op, Kernel):
            if op.source != "static" or op.inbound >= 0 or op.outbound >= 0:
                problems.append(f"{op.name}: a {op.source} kernel with pipes is not a plain GEMM")
                continue
            r = op.region
            if r is None or not 0 <= op.layer < len(layers):
                problems.append(f"{op.name}: no region of a workload layer")
                continue
            layer = layers[op.layer]
            stage[op.id] = "gemm" if layer.epilogue_pass else "act"
            key = (op.gpu, op.layer)
            want = _Buffer(op.gpu, op.layer, _out_cols(layer, r.n0), _out_cols(layer, r.n), r.n0, r.n)
            have = bufs.setdefault(key, want)
            if (have.n0, have.gemm_cols) != (r.n0, r.n):
                problems.append(f"{op.name}: GPU {op.gpu} computes columns {have.n0}+{have.gemm_cols} and "
                                f"{r.n0}+{r.n} of layer {op.layer}; one column range per GPU and layer")
            if r.k0 or r.k != layer.k:  # a K slice: the input must be exactly that slice of the previous output
                prev = bufs.get((op.gpu, op.layer - 1)) if op.layer > 0 else None
                if prev is None or (prev.col0, prev.cols) != (r.k0, r.k):
                    problems.append(f"{op.name}: sums K {r.k0}+{r.k} of layer {op.layer}, but GPU {op.gpu} does not "
                                    f"hold exactly those columns of its input")
            if r.k0 and set(layer.epilogue) - {"residual"}:
                problems.append(f"{op.name}: {'+'.join(layer.epilogue)} on a partial sum (K {r.k0}+{r.k}) of layer "
                                f"{op.layer}")
            if "residual" in layer.epilogue and r.k0 == 0 and (r.n0 or _out_cols(layer, r.n) != _residual_cols(layers, layer)):
                problems.append(f"{op.name}: a residual on a column slice of layer {op.layer}")
        elif isinstance(op, Transfer):
            if op.region is None or not 0 <= op.layer < len(layers):
                problems.append(f"{op.name}: a transfer that names no layer region")
                continue
            src = bufs.get((op.src, op.layer))
            st = carried(op)
            if st is None:
                continue
            stage[op.id] = st
            if src is None:
                problems.append(f"{op.name}: GPU {op.src} holds no layer {op.layer} to send")
                continue
            dst = bufs.setdefault((op.dst, op.layer), _Buffer(op.dst, op.layer, src.col0, src.cols, src.n0,
                                                                src.gemm_cols))
            if (dst.col0, dst.cols) != (src.col0, src.cols):
                problems.append(f"{op.name}: GPU {op.dst} holds other columns of layer {op.layer}")
        elif isinstance(op, Collective):
            if op.kind != "allreduce":
                problems.append(f"{op.name}: a {op.kind} has no ctahw path (the plan executor all-reduces only)")
                continue
            st = carried(op)
            if st is None:
                continue
            stage[op.id] = st
            held = [bufs.get((g, op.layer)) for g in op.gpus]
            if any(b is None or (b.col0, b.cols) != (0, layers[op.layer].out_n) for b in held):
                problems.append(f"{op.name}: every GPU must hold all of layer {op.layer}'s columns to all-reduce them")
        elif isinstance(op, MemoryPass):
            if op.what not in ("epilogue", "rowwise") or op.region is None or not 0 <= op.layer < len(layers):
                problems.append(f"{op.name}: a memory pass that names no layer op and region")
                continue
            stage[op.id] = "act" if op.what == "epilogue" else "norm"
            b = bufs.get((op.gpu, op.layer))
            if b is None:
                problems.append(f"{op.name}: GPU {op.gpu} holds no layer {op.layer}")
            elif op.what == "rowwise" and (b.col0, b.cols) != (0, layers[op.layer].out_n):
                problems.append(f"{op.name}: a row-wise op needs whole rows; GPU {op.gpu} holds a column slice")
        else:
            problems.append(f"{op.name}: {type(op).__name__} has no ctahw path")
    last = len(layers) - 1
    if not any(b.layer == last and (b.col0, b.cols) == (0, layers[last].out_n) for b in bufs.values()):
        problems.append(f"no GPU ends with all of layer {last}'s output")
    return bufs, stage, problems


def plan_reason(plan: Plan, wl: Workload) -> str | None:
    """Why the plan executor cannot run ``plan`` (its first problem), or None. CPU only."""
    problems = _layout(plan, wl)[2]
    return problems[0] if problems else None


@dataclass
class Inputs:
    """One run's data, in the machine's format, on plan GPU 0: the workload's input (M x K of layer 0), each
    layer's weights (N x K, rows = output columns) and the residual stream (M x ``Workload.stream_cols``) where a
    layer adds it (``Layer.residual_source = "stream"``; else None)."""

    x: Any
    weights: Sequence[Any]
    stream: Any = None


def _residual_cols(layers: Sequence[Layer], layer: Layer) -> int:
    """Columns of what ``layer``'s residual adds: the workload's input (layer 0's K) or the residual stream (the
    layer's own stored columns: the spec holds every stream layer to one width)."""
    return layer.out_n if layer.residual_source == "stream" else layers[0].k


class PlanExecutor:
    """One plan of one workload on a machine: buffers placed once, then :meth:`issue` as often as it is timed.
    ``inputs``: one :class:`Inputs`, or several sets that :meth:`issue` rotates through (so that a timed run does
    not find its inputs in L2); the activations are shared by the sets."""

    def __init__(self, plan: Plan, wl: Workload, machine, inputs: Inputs | Sequence[Inputs]):
        bufs, self.stage, problems = _layout(plan, wl)
        if problems:
            raise ValueError(f"{plan.strategy} {plan.case}: {problems[0]}")
        self.plan, self.wl, self.machine = plan, wl, machine
        layers = wl.layers
        self.layout = bufs
        self.data: dict[tuple[int, int, str], Any] = {}
        for (g, l), b in bufs.items():
            for stage in stage_names(layers[l]):
                self.data[(g, l, stage)] = machine.empty(g, layers[l].m, b.gemm_cols if stage == "gemm" else b.cols)
        # inputs: layer 0's input (and the residual) on every GPU that reads it, each kernel's weight slice
        sets = [inputs] if isinstance(inputs, Inputs) else list(inputs)
        if not sets:
            raise ValueError("no input sets")
        self.sets = len(sets)
        self.x: dict[tuple[int, int], Any] = {}
        self.w: dict[tuple, Any] = {}
        def adds(op, source):
            layer = layers[op.layer]
            return "residual" in layer.epilogue and layer.residual_source == source and (
                isinstance(op, Kernel) or (isinstance(op, MemoryPass) and op.what == "epilogue"))

        needs_x = {op.gpu for op in plan.kernels() if op.layer == 0} | {op.gpu for op in plan.ops if adds(op, "input")}
        needs_s = {op.gpu for op in plan.ops if adds(op, "stream")}
        self.s: dict[tuple[int, int], Any] = {}
        for i, data in enumerate(sets):
            if needs_s and data.stream is None:
                raise ValueError(f"{plan.strategy} {plan.case}: a layer adds the residual stream, but input set {i} "
                                 f"has none")
            for g in sorted(needs_x):
                self.x[(g, i)] = machine.place(g, data.x)
            for g in sorted(needs_s):
                self.s[(g, i)] = machine.place(g, data.stream)
            for k in plan.kernels():
                key = _weight_key(k) + (i,)
                if key not in self.w:
                    r = k.region
                    self.w[key] = machine.place(k.gpu, data.weights[k.layer], rows=(r.n0, r.n), cols=(r.k0, r.k))
        self._set = 0
        self._waits = self.waits()  # the plan's cross-stream dependencies, the same at every issue()
        self._awaited = {(dep, src) for ws in self._waits.values() for _s, dep, src in ws}

    # -- what the plan computes
    def output_buffer(self, g: int, l: int):
        return self.data[(g, l, stage_names(self.wl.layers[l])[-1])]

    def outputs(self) -> dict[int, Any]:
        """{plan GPU: the last layer's output there}, for every GPU that ends with all of it."""
        last = len(self.wl.layers) - 1
        full = self.wl.layers[last].out_n
        return {g: self.output_buffer(g, l) for (g, l), b in sorted(self.layout.items())
                if l == last and (b.col0, b.cols) == (0, full)}

    def written(self) -> list[Any]:
        """Every buffer the run writes (to poison before a correctness run)."""
        return list(self.data.values())

    def gemm_shapes(self) -> dict[int, list[tuple[int, int, int]]]:
        """{plan GPU: the (M, N, K) of its GEMMs, in plan order, once each} -- what a tile-order tuner needs."""
        out: dict[int, list] = {}
        for k in self.plan.kernels():
            s = (k.region.m, k.region.n, k.region.k)
            if s not in out.setdefault(k.gpu, []):
                out[k.gpu].append(s)
        return out

    # -- issuing
    def waits(self) -> dict[int, list[tuple[tuple[int, str], int, tuple[int, str]]]]:
        """{op id: [(its stream, the op it waits for, that op's stream it waits on), ...]}: every dependency on
        another stream (one on the same stream is stream order; a collective waits for its GPUs' parts itself)."""
        where: dict[int, list[tuple[int, str]]] = {}
        out: dict[int, list] = {}
        for op in self.plan.ops:
            streams = where[op.id] = _streams(op)
            out[op.id] = []
            for dep, _delay in op.deps:
                for s in streams:
                    dep_streams = where[dep]
                    if s in dep_streams:
                        continue  # stream order
                    if isinstance(op, Collective) and set(dep_streams) & set(streams):
                        continue  # the collective itself waits for every GPU's part
                    src = next((d for d in dep_streams if d[0] == s[0]), dep_streams[0])
                    out[op.id].append((s, dep, src))
        return out

    def issue(self, input_set: int = 0) -> list[tuple[int, str]]:
        """Issue every operation once on the machine, on input set ``input_set`` (modulo the sets); returns the
        streams used (the run ends when they all have). An operation that another stream waits for records its
        completion there (``machine.done``); nothing else is recorded (each record is an event on the GPU's
        stream: ``bench/hw/executor_overhead.py`` measured ~2-4 us a run when every operation recorded one)."""
        m, layers = self.machine, self.wl.layers
        self._set = input_set % self.sets
        waits, awaited = self._waits, self._awaited
        used: list[tuple[int, str]] = []
        for op in self.plan.ops:
            for s, dep, src in waits[op.id]:
                m.wait(s, dep, src)
            if isinstance(op, Kernel):
                self._gemm(op)
            elif isinstance(op, MemoryPass):
                self._pass(op)
            elif isinstance(op, Transfer):
                r, st = op.region, self.stage[op.id]
                m.copy(op.src, op.dst, m.rows(self.data[(op.dst, op.layer, st)], r.row0, r.m),
                       m.rows(self.data[(op.src, op.layer, st)], r.row0, r.m), op.id)
            else:
                st = self.stage[op.id]
                m.allreduce(op.gpus, [self.data[(g, op.layer, st)] for g in op.gpus], layers[op.layer].m
                            * layers[op.layer].out_n, op.id)
            for s in _streams(op):
                if (op.id, s) in awaited:
                    m.done(s, op.id)
                if s not in used:
                    used.append(s)
        return used

    def _input(self, g: int, l: int):
        return self.x[(g, self._set)] if l == 0 else self.output_buffer(g, l - 1)

    def _residual(self, g: int, layer: Layer):
        """What ``layer``'s residual adds on GPU ``g``: the workload's input or the residual stream."""
        return (self.s if layer.residual_source == "stream" else self.x)[(g, self._set)]

    def _gemm(self, k: Kernel) -> None:
        m, layer, r = self.machine, self.wl.layers[k.layer], k.region
        a = m.rows(self._input(k.gpu, k.layer), r.row0, r.m)
        w = self.w[_weight_key(k) + (self._set,)]
        if layer.epilogue_pass:
            m.gemm(k.gpu, a, w, m.rows(self.data[(k.gpu, k.layer, "gemm")], r.row0, r.m), r.m, r.n, r.k, (), None,
                   layer.tile_n, k.id)
            return
        ops = tuple(layer.epilogue)
        c = None
        if "residual" in ops:
            if r.k0 == 0:
                c = m.rows(self._residual(k.gpu, layer), r.row0, r.m)
            else:  # another K slice: the k0 = 0 slice adds the residual; this one adds the rest of the sum
                ops = tuple(o for o in ops if o != "residual")
        m.gemm(k.gpu, a, w, m.rows(self.data[(k.gpu, k.layer, "act")], r.row0, r.m), r.m, r.n, r.k, ops, c,
               layer.tile_n, k.id)

    def _pass(self, p: MemoryPass) -> None:
        m, layer, r = self.machine, self.wl.layers[p.layer], p.region
        b = self.layout[(p.gpu, p.layer)]
        if p.what == "epilogue":
            res = m.rows(self._residual(p.gpu, layer), r.row0, r.m) if "residual" in layer.epilogue else None
            m.epilogue(p.gpu, tuple(layer.epilogue), m.rows(self.data[(p.gpu, p.layer, "gemm")], r.row0, r.m),
                       m.rows(self.data[(p.gpu, p.layer, "act")], r.row0, r.m), r.m, b.gemm_cols, layer.tile_n, res,
                       p.id)
        else:
            m.rowwise(p.gpu, layer.rowwise, m.rows(self.data[(p.gpu, p.layer, "act")], r.row0, r.m),
                      m.rows(self.data[(p.gpu, p.layer, "norm")], r.row0, r.m), r.m, b.cols, p.id)


def _weight_key(k: Kernel) -> tuple:
    """The weights a kernel needs: its GPU, layer, column and K slice, whatever its rows."""
    r = k.region
    return (k.gpu, k.layer, r.n0, r.n, r.k0, r.k)


# --------------------------------------------------------------------------------------------------
# The workload's reference


def reference_output(xp, x32, weights32: Sequence, layers: Sequence[Layer], round_stores: Callable | None = None,
                     stream32=None):
    """The workload's output in fp32: per layer ``x @ W.T``, its epilogue ops (residual = the workload's input, or
    ``stream32``, the residual stream, where the layer's ``residual_source`` says so), its row-wise op. ``round_stores`` (e.g. a bf16 round trip) is applied where the GPU stores: an unfused epilogue's
    GEMM output, the epilogue's output before a row-wise op, each layer's output before the next reads it."""
    from ctahw import rowwise  # noqa: PLC0415 - its kernels compile only when launched

    rnd = round_stores or (lambda y: y)
    act = x32
    out = x32
    for w, l in zip(weights32, layers):
        y = act @ w.T
        if l.epilogue_pass:
            y = rnd(y)
        res = None
        if "residual" in l.epilogue:
            res = stream32 if l.residual_source == "stream" else x32
            if res is None:
                raise ValueError("a layer adds the residual stream, but no stream was given")
        out = rowwise.reference_epilogue(y, tuple(l.epilogue), tile_n=l.tile_n, residual_f32=res)
        del y
        if l.rowwise:
            out = rowwise.reference_rowwise(rnd(out), l.rowwise)
        act = rnd(out)
    return out


def reference_bf16(cp, x_bits, weights_bits: Sequence, layers: Sequence[Layer], device: int = 0, stream_bits=None):
    """:func:`reference_output` of bf16 inputs (uint16 CuPy arrays, on any GPU; ``stream_bits`` the residual stream
    where a layer adds it) on ``device``, rounded to bf16 where the GPU stores: what every GPU run of a workload is
    checked against."""
    from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits, to_device  # noqa: PLC0415

    with cp.cuda.Device(device):
        def f32(b):
            return bf16_bits_to_f32(to_device(cp, b, device), cp)

        return reference_output(cp, f32(x_bits), [f32(w) for w in weights_bits], layers,
                                lambda y: bf16_bits_to_f32(f32_to_bf16_bits(y, cp), cp),
                                None if stream_bits is None else f32(stream_bits))


# --------------------------------------------------------------------------------------------------
# Machines


class ReferenceMachine:
    """The plan's data flow in numpy fp32, every operation run when issued (issue order is a topological order):
    what a CUDA run should compute, without rounding. Counts what it was asked to do (``calls``)."""

    def __init__(self):
        import numpy as np  # noqa: PLC0415

        self.np = np
        self.calls: list[tuple] = []

    def empty(self, g, rows, cols):
        return self.np.full((rows, cols), self.np.nan, dtype=self.np.float32)

    def place(self, g, arr, rows=None, cols=None):
        a = self.np.asarray(arr, dtype=self.np.float32)
        if rows is not None:
            a = a[rows[0]:rows[0] + rows[1], cols[0]:cols[0] + cols[1]]
        return self.np.array(a, dtype=self.np.float32)

    def rows(self, buf, r0, m):
        assert r0 + m <= buf.shape[0], (r0, m, buf.shape)
        return buf[r0:r0 + m]

    def wait(self, stream, dep, src):
        self.calls.append(("wait", stream, dep, src))

    def done(self, stream, op_id):
        self.calls.append(("done", stream, op_id))

    def gemm(self, g, a, w, d, m, n, k, ops, c, tile_n, op_id):
        from ctahw import rowwise  # noqa: PLC0415

        assert a.shape == (m, k) and w.shape == (n, k), (a.shape, w.shape, m, n, k)
        d[...] = rowwise.reference_epilogue(a @ w.T, ops, tile_n=tile_n, residual_f32=c)
        self.calls.append(("gemm", g, op_id, m, n, k, ops))

    def epilogue(self, g, ops, y, out, m, n, tile_n, residual, op_id):
        from ctahw import rowwise  # noqa: PLC0415

        out[...] = rowwise.reference_epilogue(y, ops, tile_n=tile_n, residual_f32=residual)
        self.calls.append(("epilogue", g, op_id, ops))

    def rowwise(self, g, op, x, out, m, cols, op_id):
        from ctahw import rowwise  # noqa: PLC0415

        out[...] = rowwise.reference_rowwise(x, op)
        self.calls.append(("rowwise", g, op_id, op))

    def copy(self, src_gpu, dst_gpu, dst, src, op_id):
        dst[...] = src
        self.calls.append(("copy", src_gpu, dst_gpu, op_id))

    def allreduce(self, gpus, bufs, count, op_id):
        total = sum(b.astype(self.np.float64) for b in bufs)
        for b in bufs:
            b[...] = total
        self.calls.append(("allreduce", tuple(gpus), op_id))


class CudaMachine:
    """The plan's operations on GPUs: plan GPU g is physical device ``devices[g]``; its streams are ``timed``'s
    (``ctahw.baselines.Timed``: compute and copy per device), set per run by :meth:`bind`. ``gemm[g]`` is the
    GEMM backend of plan GPU g (``ctahw.gemm``). All-reduces run on NCCL (``ctahw.comm.AllReduce``, made on first
    use, closed by :meth:`close`); where two plan GPUs share a device (a test on one GPU) they run as an fp32 sum on
    that device instead."""

    def __init__(self, cp, devices: Sequence[int], gemm: Sequence[Callable], log: Callable[[str], None] = print):
        self.cp, self.devices, self.gemms, self.log = cp, list(devices), list(gemm), log
        self.t = None
        self._events: dict[tuple[int, tuple[int, str]], Any] = {}
        self._allreduce = None

    def bind(self, timed) -> None:
        """Issue the next run on ``timed``'s streams, its parts timed (``timed.part``)."""
        self.t = timed
        self._events = {}

    def stream(self, s: tuple[int, str]):
        g, kind = s
        return (self.t.compute if kind == "compute" else self.t.copy)[self.devices[g]]

    def _dev(self, g: int):
        return self.cp.cuda.Device(self.devices[g])

    def empty(self, g, rows, cols):
        with self._dev(g):
            return self.cp.empty((rows, cols), dtype=self.cp.uint16)

    def place(self, g, arr, rows=None, cols=None):
        from ctahw.device import to_device  # noqa: PLC0415

        if rows is not None:
            with self.cp.cuda.Device(arr.data.device_id):
                arr = self.cp.ascontiguousarray(arr[rows[0]:rows[0] + rows[1], cols[0]:cols[0] + cols[1]])
        return to_device(self.cp, arr, self.devices[g])

    def rows(self, buf, r0, m):
        return buf[r0:r0 + m]

    def wait(self, s, dep, src):
        ev = self._events[(dep, src)]
        with self._dev(s[0]):
            self.stream(s).wait_event(ev)

    def done(self, s, op_id):
        ev = self.t.event(self.devices[s[0]])
        with self._dev(s[0]):
            ev.record(self.stream(s))
        self._events[(op_id, s)] = ev

    def gemm(self, g, a, w, d, m, n, k, ops, c, tile_n, op_id):
        st = self.stream((g, "compute"))
        self.t.part("compute", self.devices[g], st,
                    lambda: self.gemms[g](a, w, d, m, n, k, st, **({"epilogue": ops, "c": c} if ops else {})))

    def epilogue(self, g, ops, y, out, m, n, tile_n, residual, op_id):
        from ctahw import rowwise  # noqa: PLC0415

        st = self.stream((g, "compute"))
        self.t.part("compute", self.devices[g], st,
                    lambda: rowwise.epilogue(ops, y, out, m, n, tile_n, residual=residual, stream=st))

    def rowwise(self, g, op, x, out, m, cols, op_id):
        from ctahw import rowwise  # noqa: PLC0415

        st = self.stream((g, "compute"))
        self.t.part("compute", self.devices[g], st, lambda: rowwise.rowwise(op, x, out, m, cols, st))

    def copy(self, src_gpu, dst_gpu, dst, src, op_id):
        st = self.stream((src_gpu, "copy"))
        rt = self.cp.cuda.runtime
        self.t.part("copy", self.devices[src_gpu], st, lambda: rt.memcpyPeerAsync(
            dst.data.ptr, self.devices[dst_gpu], src.data.ptr, self.devices[src_gpu], src.nbytes, st.ptr))

    def allreduce(self, gpus, bufs, count, op_id):
        streams = [self.stream((g, "compute")) for g in gpus]
        devs = [self.devices[g] for g in gpus]
        start = []
        for d, st in zip(devs, streams):
            ev = self.t.event(d)
            with self.cp.cuda.Device(d):
                ev.record(st)
            start.append(ev)
        if len(set(devs)) == len(devs):
            if self._allreduce is None or self._allreduce_devs != devs:
                from ctahw.comm import AllReduce  # noqa: PLC0415

                self.close()
                self._allreduce, self._allreduce_devs = AllReduce(devs, log=self.log), devs
            self._allreduce(bufs, count, streams)
        else:
            self._local_sum(devs, bufs, streams)
        for d, st, a in zip(devs, streams, start):
            ev = self.t.event(d)
            with self.cp.cuda.Device(d):
                ev.record(st)
            self.t.add_part("comm", d, a, ev)

    def _local_sum(self, devs, bufs, streams) -> None:
        """An all-reduce where plan GPUs share a device: every stream's work so far, then the fp32 sum on the first
        stream, then every stream after it."""
        from ctahw.device import bf16_bits_to_f32, f32_to_bf16_bits  # noqa: PLC0415

        cp, s0 = self.cp, streams[0]
        if len(set(devs)) != 1:
            raise ValueError(f"an all-reduce over devices {devs}: NCCL needs distinct devices, the local sum one")
        with cp.cuda.Device(devs[0]):
            for st in streams[1:]:
                ev = cp.cuda.Event()
                ev.record(st)
                s0.wait_event(ev)
            with s0:
                total = sum(bf16_bits_to_f32(b, cp) for b in bufs)
                for b in bufs:
                    b[...] = f32_to_bf16_bits(total, cp)
            ev = cp.cuda.Event()
            ev.record(s0)
            for st in streams[1:]:
                st.wait_event(ev)

    @property
    def nccl_binding(self) -> str:
        """Which NCCL binding the all-reduces ran on ('' before the first)."""
        return getattr(self._allreduce, "binding", "") if self._allreduce is not None else ""

    def close(self) -> None:
        ar, self._allreduce = self._allreduce, None
        if ar is not None:
            ar.close()
