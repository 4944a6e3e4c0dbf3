"""GPU tests: the kernels and baselines on real GPUs (marked `hw`; skipped with a reason elsewhere)."""

from __future__ import annotations

import math
import os

import pytest

pytestmark = pytest.mark.hw


def _gpus_or_skip(n: int):
    from ctahw.device import DeviceError, require_gpus

    try:
        return require_gpus(n)
    except DeviceError as e:
        pytest.skip(f"needs {n} sm_90 GPU(s): {e}")


@pytest.mark.parametrize("backend", ["cutlass", "cublas"])
@pytest.mark.parametrize("m,n,k", [(256, 512, 1024), (1000, 768, 2048)])  # 1000: rows not a tile multiple
def test_gemm_matches_fp32_reference(cp, backend, m, n, k):
    from ctahw.device import REL_TOL_BF16, bf16_bits_to_f32, poison, random_bf16, rel_error
    from ctahw.gemm import make_backend

    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))  # fresh inputs each run
    a, w = random_bf16((m, k), cp, rng), random_bf16((n, k), cp, rng, 1 / math.sqrt(k))
    d = cp.empty((m, n), dtype=cp.uint16)
    poison(d)
    # the inputs and the poison are made on CuPy's default stream, which a non-blocking stream does not wait
    # for: without this the GEMM could run before them (seen after the CTA-pipelining tests: the poison landed
    # on top of the GEMM's output)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    make_backend(backend, 0)(a, w, d, m, n, k, s)
    s.synchronize()
    ref = bf16_bits_to_f32(a, cp) @ bf16_bits_to_f32(w, cp).T
    err = rel_error(d, ref, cp)
    assert err < REL_TOL_BF16, err
    assert err > 1e-5  # bf16 output rounding alone is ~1e-3: a zero error would mean the check saw nothing


def test_cutlass_rejects_misaligned_k(cp):
    from ctahw.gemm import CutlassGemm, GemmError

    g = CutlassGemm(0)
    a = cp.zeros((128, 1001), dtype=cp.uint16)
    w = cp.zeros((256, 1001), dtype=cp.uint16)
    d = cp.zeros((128, 256), dtype=cp.uint16)
    with pytest.raises(GemmError, match="cutlass"):
        g(a, w, d, 128, 256, 1001, cp.cuda.Stream())


@pytest.mark.parametrize("ops", [("gelu",), ("silu",), ("relu",), ("residual",)])
@pytest.mark.parametrize("m,n,k", [(256, 512, 256), (1000, 768, 512)])  # 1000: rows not a tile multiple
def test_cutlass_fused_epilogue_matches_fp32_reference(cp, ops, m, n, k):
    from ctahw.device import REL_TOL_BF16, bf16_bits_to_f32, poison, random_bf16, rel_error
    from ctahw.gemm import CutlassGemm
    from ctahw.rowwise import reference_epilogue

    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    a, w = random_bf16((m, k), cp, rng), random_bf16((n, k), cp, rng, 1 / math.sqrt(k))
    c = random_bf16((m, n), cp, rng) if ops == ("residual",) else None
    d = cp.empty((m, n), dtype=cp.uint16)
    poison(d)
    cp.cuda.Device().synchronize()  # inputs and poison are on the default stream (see above)
    s = cp.cuda.Stream(non_blocking=True)
    CutlassGemm(0)(a, w, d, m, n, k, s, epilogue=ops, c=c)
    s.synchronize()
    y = bf16_bits_to_f32(a, cp) @ bf16_bits_to_f32(w, cp).T
    ref = reference_epilogue(y, ops, bf16_bits_to_f32(c, cp) if c is not None else None)
    err = rel_error(d, ref, cp)
    assert err < REL_TOL_BF16, (ops, err)
    assert err > 1e-5
    # the op really ran: the output is far from the plain product (relu, gelu and silu zero out the negatives)
    assert rel_error(d, y, cp) > 0.1, ops


def test_cutlass_epilogue_errors(cp):
    from ctahw.gemm import CutlassGemm, GemmError, make_backend

    g = CutlassGemm(0)
    a = cp.zeros((128, 256), dtype=cp.uint16)
    w = cp.zeros((256, 256), dtype=cp.uint16)
    d = cp.zeros((128, 256), dtype=cp.uint16)
    s = cp.cuda.Stream()
    with pytest.raises(GemmError, match="needs c"):
        g(a, w, d, 128, 256, 256, s, epilogue=("residual",))
    with pytest.raises(GemmError, match="uint16"):
        g(a, w, d, 128, 256, 256, s, epilogue=("residual",), c=cp.zeros((128, 128), dtype=cp.uint16))
    with pytest.raises(GemmError, match="no fused CUTLASS epilogue"):
        g(a, w, d, 128, 256, 256, s, epilogue=("gelu", "residual"), c=d)
    with pytest.raises(GemmError, match="cuBLAS backend runs no fused epilogue"):
        make_backend("cublas", 0)(a, w, d, 128, 256, 256, s, epilogue=("gelu",))
    assert "epilogue=gelu" in g.describe_epilogue(("gelu",)) and "tile=128x256x64" in g.describe_epilogue(())


@pytest.mark.parametrize("op", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("rows,cols", [(256, 512), (64, 4096), (33, 28672), (17, 4100), (9, 1001)])
def test_rowwise_matches_fp32_reference(cp, op, rows, cols):
    from ctahw import rowwise
    from ctahw.device import REL_TOL_BF16, bf16_bits_to_f32, f32_to_bf16_bits, poison, rel_error

    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    # normal(3, 2): a mean far from 0, so that a LayerNorm without the mean subtraction fails; 1001 and 4100
    # columns take the narrower vector paths
    x = f32_to_bf16_bits(rng.standard_normal((rows, cols), dtype=cp.float32) * 2 + 3, cp)
    out = cp.empty((rows, cols), dtype=cp.uint16)
    poison(out)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    getattr(rowwise, op)(x, out, rows, cols, s)
    s.synchronize()
    ref = rowwise.reference_rowwise(bf16_bits_to_f32(x, cp), op)
    err = rel_error(out, ref, cp)
    assert 1e-5 < err < REL_TOL_BF16, (op, rows, cols, err)


@pytest.mark.parametrize("ops,rows,n,tile_n", [
    (("swiglu",), 256, 2048, 256),    # 16-byte vectors
    (("swiglu",), 33, 28672, 256),    # the Llama-3.1-8B gate-and-up width
    (("swiglu",), 17, 36, 12),        # halves of 6: 4-byte vectors
    (("swiglu",), 9, 30, 10),         # halves of 5: one element a thread
    (("gelu",), 64, 4096, 256),
    (("silu",), 7, 1001, 256),        # 1001 columns: one element a thread
    (("relu",), 64, 512, 256),
    (("residual",), 64, 4100, 256),   # 4100: 8-byte vectors
    (("gelu", "residual"), 128, 768, 256),  # two ops in order: a sequence no fused kernel runs
])
def test_epilogue_kernel_matches_fp32_reference(cp, ops, rows, n, tile_n):
    """The unfused epilogue kernel (Layer.epilogue_fused = false) against the fp32 reference of the same bf16 input,
    the output poisoned first; random inputs (normal(0, 2)) so that each op's sign handling is exercised."""
    from ctahw import rowwise
    from ctahw.device import REL_TOL_BF16, bf16_bits_to_f32, f32_to_bf16_bits, poison, rel_error

    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    y = f32_to_bf16_bits(rng.standard_normal((rows, n), dtype=cp.float32) * 2, cp)
    out_n = n // 2 if "swiglu" in ops else n
    res = f32_to_bf16_bits(rng.standard_normal((rows, out_n), dtype=cp.float32), cp) if "residual" in ops else None
    out = cp.empty((rows, out_n), dtype=cp.uint16)
    poison(out)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    rowwise.epilogue(ops, y, out, rows, n, tile_n, residual=res, stream=s)
    s.synchronize()
    ref = rowwise.reference_epilogue(bf16_bits_to_f32(y, cp), ops, tile_n=tile_n,
                                     residual_f32=None if res is None else bf16_bits_to_f32(res, cp))
    err = rel_error(out, ref, cp)
    assert err < REL_TOL_BF16, (ops, rows, n, err)
    if "swiglu" in ops:  # pairing the matrix's halves instead of each tile's would be far off
        wrong = rowwise.reference_epilogue(bf16_bits_to_f32(y, cp), ops, tile_n=n)
        assert n == tile_n or rel_error(out, wrong, cp) > 0.1


SPEC_SWIGLU = """
[experiment]
name = "hw-swiglu-1gpu"
hardware = "h200-x2-calibrated"
gpus = 1

[experiment.workload]
dtype = "bf16"

[[experiment.workload.layer]]
m = 512
k = 1024
n = 4096
tile = [128, 256]
epilogue = ["swiglu"]
epilogue_fused = false

[[experiment.workload.layer]]
m = 512
k = 2048
n = 1024
tile = [128, 256]
epilogue = ["residual"]
rowwise = "rmsnorm"

[[experiment.strategy]]
kind = "sequential"
"""


def test_a_swiglu_mlp_block_runs_from_a_spec_on_one_gpu(tmp_path):
    """ctahw run of a SwiGLU MLP block (gate-and-up GEMM, the swiglu kernel, the down GEMM with the residual fused,
    RMSNorm): the row is ok, checked against the fp32 chain."""
    _gpus_or_skip(1)
    from ctahw.experiment import RunConfig, run
    from ctasim.cases import load_experiment

    p = tmp_path / "hw-swiglu-1gpu.toml"
    p.write_text(SPEC_SWIGLU)
    df = run(load_experiment(str(p)), RunConfig(reps=2, warmup=1, tune_rounds=0, rest_ms=0.0))
    assert (df["status"] == "ok").all(), df[["strategy", "status", "reason"]].to_string()
    assert (df["rel_err"] < 0.02).all() and (df["rel_err"] > 0).all()


def test_layernorm_keeps_its_precision_far_from_zero(cp):
    """Rows of 1000 + normal(0, 2): a variance taken as E[x^2] - mean^2 in fp32 would lose it to cancellation."""
    from ctahw import rowwise
    from ctahw.device import REL_TOL_BF16, bf16_bits_to_f32, f32_to_bf16_bits, poison, rel_error

    rows, cols = 64, 14336
    rng = cp.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    x = f32_to_bf16_bits(rng.standard_normal((rows, cols), dtype=cp.float32) * 2 + 1000, cp)
    out = cp.empty((rows, cols), dtype=cp.uint16)
    poison(out)
    cp.cuda.Device().synchronize()
    rowwise.layernorm(x, out, rows, cols)
    cp.cuda.Device().synchronize()
    err = rel_error(out, rowwise.reference_rowwise(bf16_bits_to_f32(x, cp).astype(cp.float64), "layernorm"), cp)
    assert 1e-5 < err < REL_TOL_BF16, err


def test_peer_access_and_pingpong():
    _gpus_or_skip(2)
    from ctahw.calibrate import measure

    res = measure(quick=True, reps=3)
    assert 0 < res["pingpong_store"]["rtt_min_ns"] < 100_000
    assert res["link_gbps"] > 10 and res["copy_engine_gbps"] > 10
    assert res["tile_fit_128x256"]["sm_tflops"] > 0
    # the tickets design's one-layer microbenchmark: its 8 rows, each checked against fp32, or why not
    assert len(res.get("ticket_rate_runs", ())) == 8 or res.get("ticket_rate_note"), res.get("ticket_rate_note")


def test_small_sweep_is_correct():
    _gpus_or_skip(1)
    from ctahw.baselines import SweepConfig
    from ctahw.sweep import run_sweep
    from ctahw.device import gpus

    g = 2 if sum(x.is_sm90 for x in gpus()) >= 2 else 1
    rows = run_sweep(SweepConfig(ms=(1024,), h=2048, gpus=g, chunks=(1, 2), reps=2, warmup=1, gate_ms=0.5))
    assert rows and all(r["ok"] for r in rows), [(r.get("experiment"), r.get("error"), r.get("rel_err")) for r in rows]


SPEC_2GPU = """
[experiment]
name = "hw-spec-2gpu"
hardware = "h200-x2-calibrated"
gpus = 2

[experiment.workload]
dtype = "bf16"
layers = 2
m = 1024
k = 8192
n = 8192
tile = [128, 256]

[[experiment.strategy]]
kind = "sequential"

[[experiment.strategy]]
kind = "microbatch"
chunks = [1, 2]

[[experiment.strategy]]
kind = "tp"

[[experiment.strategy]]
kind = "ctapipe"
variant = "cutlass_ctapipe_w21g4"
"""


def test_a_spec_runs_every_strategy_on_two_gpus(tmp_path):
    """ctahw run EXPERIMENT on 2 GPUs: sequential, micro-batching per chunk count, TP and a CTA-pipelining variant
    from one spec, every row ok within bf16 tolerance, the traced twin's traces kept."""
    _gpus_or_skip(2)
    from ctahw.experiment import RunConfig, run
    from ctasim.cases import load_experiment

    p = tmp_path / "hw-spec-2gpu.toml"
    p.write_text(SPEC_2GPU)
    traces = {}
    df = run(load_experiment(str(p)), RunConfig(reps=2, warmup=1, tune_rounds=0, rest_ms=0.0), traces=traces)
    assert (df["status"] == "ok").all(), df[["strategy", "variant", "status", "reason"]].to_string()
    assert sorted(df["variant"].fillna("")) == ["", "", "", "chunks=1", "chunks=2"]
    assert traces and all(t.meta["variant"] == "cutlass_ctapipe_w21g4_trace" for t in traces.values())


SPEC_MLP_2GPU = """
[experiment]
name = "hw-mlp-2gpu"
hardware = "h200-x2-calibrated"
gpus = 2

[experiment.workload]
dtype = "bf16"

[[experiment.workload.layer]]
m = 1024
k = 2048
n = 7168
tile = [128, 256]
epilogue = ["gelu"]

[[experiment.workload.layer]]
m = 1024
k = 7168
n = 2048
tile = [128, 256]
epilogue = ["residual"]
rowwise = "layernorm"

[[experiment.strategy]]
kind = "microbatch"
chunks = [1, 2, 4]

[[experiment.strategy]]
kind = "tp"

[[experiment.strategy]]
kind = "ctapipe"
variant = "cutlass_ctapipe_w21g4"
"""


def test_the_mlp_blocks_micro_batching_tp_and_ctapipe_run_on_two_gpus(tmp_path):
    """On 2 GPUs, an MLP block: micro-batching (peer copies of LayerNorm'd chunks) and TP (GeLU on column slices,
    the residual added by one K slice, NCCL all-reduce, LayerNorm on both GPUs) through the plan executor, and a
    CTA-pipelined variant (GeLU fused in the producer, the residual in the consumer, LayerNorm after it), ok."""
    _gpus_or_skip(2)
    from ctahw.experiment import RunConfig, run
    from ctasim.cases import load_experiment

    p = tmp_path / "hw-mlp-2gpu.toml"
    p.write_text(SPEC_MLP_2GPU)
    traces = {}
    df = run(load_experiment(str(p)), RunConfig(reps=2, warmup=1, tune_rounds=0, rest_ms=0.0), traces=traces)
    assert (df["status"] == "ok").all(), df[["strategy", "variant", "status", "reason"]].to_string()
    assert len(df) == 5 and traces
