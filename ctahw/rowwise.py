"""Row-wise ops after a GEMM (LayerNorm, RMSNorm) and unfused epilogue ops on the GPU, and fp32 references of the
epilogue and row-wise ops.

What it computes:

* :func:`layernorm` and :func:`rmsnorm`: ``out[r, :] = norm(x[r, :])`` over a row-major ``rows x cols`` bf16 matrix
  (stored as uint16 CuPy arrays, as everywhere in ctahw). LayerNorm is ``(x - mean) / sqrt(var + eps)`` with the
  biased variance (divided by ``cols``); RMSNorm is ``x / sqrt(mean(x^2) + eps)``. fp32 math; the output is rounded
  once to bf16, round to nearest even, bit for bit as :func:`ctahw.device.f32_to_bf16_bits` for every finite value
  and infinity (a NaN stays a NaN; where the kernel stores 2 or more elements at a time, with the hardware's
  payload 0x7FFF rather than 0x7FC1).
* :func:`epilogue`: a layer's epilogue ops (gelu, silu, relu, residual, swiglu) as their own elementwise kernel
  after a plain GEMM (``Layer.epilogue_fused = false``): one read of the GEMM's output (and of the residual), one
  write. This is how ctahw runs ``swiglu``: CUTLASS's SM90 epilogue stores the tile it computes, and no fusion
  operation of CUTLASS 4.2 stores half of it (a gated store needs an epilogue of our own; not built).
  Each thread makes 8 outputs from 16-byte loads where the sizes and pointers allow.
* :func:`reference_epilogue` and :func:`reference_rowwise`: the same ops in fp32 on numpy or CuPy arrays, for
  checking the kernels and ``CutlassGemm(..., epilogue=...)``.

The kernels are CuPy RawModules compiled by NVRTC on first use (no CUTLASS, no nvcc): one CTA per row, the row
held in registers as bf16 bits (read once from HBM, written once), 16-byte loads and stores where ``cols`` and the
pointers allow (else 8, 4 or 2 bytes). LayerNorm's variance is centred: each thread takes the mean and the sum of
squared deviations of its own elements, and the CTA merges these pairwise (Chan et al.), so a mean far from 0 costs
no precision and the CTA synchronizes once.
The CTA has up to 1024 threads and each thread holds ``ceil(cols / (vec * threads))`` vectors of ``vec`` elements:
about 4 vectors a thread (:data:`TARGET_VECS_PER_THREAD`), 32 registers. Measured on one H200 (2026-12-01; two input
sets of 256-470 MiB rotated, median of 20): both ops at 3.97-4.09 TB/s (read + write) for cols = 4096, 8192, 14336 and 28672, where a
device-to-device copy moved 4.24 TB/s. (The first version, with the row in fp32 registers and two CTA-wide
reductions for LayerNorm, ran LayerNorm at 2.1-3.3 TB/s; 2, 6, 8 and 16 vectors a thread were no faster than 4.)

Left out: the affine weights (gamma = 1, beta = 0: a workload's gamma/beta cost one more read of a ``cols``
vector, cached in L2), fused residual adds, other dtypes than bf16, rows longer than 32 vectors a thread (262144
columns with 16-byte vectors), batching of several small rows into one CTA (rows narrower than a few hundred
columns leave the CTA mostly idle) and any backward pass.
"""

from __future__ import annotations

import math

__all__ = [
    "ROWWISE_OPS",
    "layernorm",
    "rmsnorm",
    "rowwise",
    "epilogue",
    "epilogue_code",
    "EPILOGUE_OP_CODES",
    "launch_config",
    "reference_epilogue",
    "reference_rowwise",
]

ROWWISE_OPS: dict[str, int] = {"layernorm": 0, "rmsnorm": 1}
"""Row-wise ops the GPU kernels run, with their code in the kernel source."""

MAX_THREADS = 1024
MAX_VECS_PER_THREAD = 32
TARGET_VECS_PER_THREAD = 4

_SOURCE = r"""
template <int VEC> struct VecT;
template <> struct VecT<8> { typedef uint4 T; };
template <> struct VecT<4> { typedef uint2 T; };
template <> struct VecT<2> { typedef unsigned int T; };
template <> struct VecT<1> { typedef unsigned short T; };

__device__ __forceinline__ float bf16_to_f32(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }

// Element j of a vector of VEC bf16 (j known at compile time after unrolling), read from its 32-bit words.
template <int VEC, class V>
__device__ __forceinline__ float elem(const V& r, int j) {
  if constexpr (VEC == 1) {
    return bf16_to_f32(*reinterpret_cast<const unsigned short*>(&r));
  } else {
    const unsigned int w = reinterpret_cast<const unsigned int*>(&r)[j >> 1];
    return __uint_as_float((j & 1) ? (w & 0xFFFF0000u) : (w << 16));
  }
}

__device__ __forceinline__ unsigned short f32_to_bf16_rne(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (unsigned short)0x7FC1;  // NaN stays NaN (ctahw.device.BF16_NAN_BITS)
  return (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// (count, mean, M2 = sum of squared deviations) of two disjoint sets -> of their union (Chan et al.): no
// cancellation however far the mean is from 0.
__device__ __forceinline__ void chan(float& n, float& mean, float& m2, float nb, float meanb, float m2b) {
  const float nn = n + nb;
  if (nb == 0.f) return;
  if (n == 0.f) { n = nb; mean = meanb; m2 = m2b; return; }
  const float d = meanb - mean, f = __fdividef(nb, nn);
  mean += d * f;
  m2 += m2b + d * d * n * f;
  n = nn;
}

// Butterfly over the warp: layernorm merges (count, mean, M2), rmsnorm sums a (its sum of squares).
template <int OP>
__device__ __forceinline__ void reduce_warp(float& n, float& a, float& m2) {
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ab = __shfl_xor_sync(0xffffffffu, a, o);
    if (OP == 0) {
      const float nb = __shfl_xor_sync(0xffffffffu, n, o), m2b = __shfl_xor_sync(0xffffffffu, m2, o);
      chan(n, a, m2, nb, ab, m2b);
    } else {
      a += ab;
    }
  }
}

// OP 0 layernorm, 1 rmsnorm. Row r of x (cols elements, row-major, bf16 bits) -> row r of out. The row stays in
// registers as raw bf16 bits (half the registers of fp32: more rows in flight per SM); one CTA-wide reduction.
template <int VEC, int NV, int OP>
__global__ void __launch_bounds__(1024) rownorm(const unsigned short* __restrict__ x, unsigned short* __restrict__ out,
                                                int cols, float eps) {
  typedef typename VecT<VEC>::T V;
  __shared__ float sh[3][32];
  const long long row = blockIdx.x;
  const V* xr = reinterpret_cast<const V*>(x + row * (long long)cols);
  V* orow = reinterpret_cast<V*>(out + row * (long long)cols);
  const int nvec = cols / VEC;
  V raw[NV];
  #pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < nvec) raw[i] = __ldg(xr + idx);
  }
  // this thread's statistics, from its registers
  float n = 0.f, a = 0.f, m2 = 0.f;  // layernorm: count, mean, M2; rmsnorm: a = sum of squares
  #pragma unroll
  for (int i = 0; i < NV; ++i) {
    if (threadIdx.x + i * blockDim.x < nvec) {
      #pragma unroll
      for (int j = 0; j < VEC; ++j) {
        const float v = elem<VEC>(raw[i], j);
        a += OP == 0 ? v : v * v;
      }
      n += (float)VEC;
    }
  }
  if (OP == 0 && n > 0.f) {
    a /= n;
    #pragma unroll
    for (int i = 0; i < NV; ++i) {
      if (threadIdx.x + i * blockDim.x < nvec) {
        #pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const float d = elem<VEC>(raw[i], j) - a;
          m2 += d * d;
        }
      }
    }
  }
  // warp, then CTA: lane 0 of each warp posts its warp's partial, and every warp merges the posted partials with the
  // same butterfly (identical inputs, identical order: the same result in every warp; lane 0's is broadcast so
  // that the lanes agree to the bit)
  reduce_warp<OP>(n, a, m2);
  if ((threadIdx.x & 31) == 0) {
    sh[0][threadIdx.x >> 5] = n;
    sh[1][threadIdx.x >> 5] = a;
    sh[2][threadIdx.x >> 5] = m2;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const bool posted = lane < (int)(blockDim.x >> 5);
  n = posted ? sh[0][lane] : 0.f;
  a = posted ? sh[1][lane] : 0.f;
  m2 = posted ? sh[2][lane] : 0.f;
  reduce_warp<OP>(n, a, m2);
  a = __shfl_sync(0xffffffffu, a, 0);
  m2 = __shfl_sync(0xffffffffu, m2, 0);
  float mean = 0.f, rstd;
  if (OP == 0) {
    mean = a;
    rstd = rsqrtf(m2 / (float)cols + eps);
  } else {
    rstd = rsqrtf(a / (float)cols + eps);
  }
  #pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int idx = threadIdx.x + i * blockDim.x;
    if (idx < nvec) {
      V o;
      if constexpr (VEC == 1) {
        *reinterpret_cast<unsigned short*>(&o) = f32_to_bf16_rne((elem<1>(raw[i], 0) - mean) * rstd);
      } else {
        #pragma unroll
        for (int p = 0; p < VEC / 2; ++p) {
          const float lo = (elem<VEC>(raw[i], 2 * p) - mean) * rstd, hi = (elem<VEC>(raw[i], 2 * p + 1) - mean) * rstd;
          unsigned int w;
          asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));  // RNE, as f32_to_bf16_rne
          reinterpret_cast<unsigned int*>(&o)[p] = w;
        }
      }
      orow[idx] = o;
    }
  }
}

// The epilogue ops of a layer as their own elementwise kernel (Layer.epilogue_fused = false). OPS: up to 4 op codes
// of 4 bits, applied lowest first (1 gelu, 2 silu, 3 relu, 4 residual; 5 swiglu, alone). y: the GEMM's rows x n
// output; out: rows x out_n (n, or n / 2 for swiglu); res: the residual, rows x out_n. swiglu: tile t of y's columns
// (tile_n = 2 * half) holds gate in its first half and up in its second; out[r, t * half + c] = silu(gate) * up.
// Each thread makes VEC consecutive outputs (VEC divides out_n and half); fp32 math, one bf16 rounding (RNE).
__device__ __forceinline__ float epi_op(unsigned op, float v, float r) {
  if (op == 1u) return 0.5f * v * erfcf(v * -0.70710678118654752f);  // gelu, erf form (1 + erf(z) = erfc(-z))
  if (op == 2u || op == 5u) return v / (1.f + expf(-v));             // silu (swiglu's gate)
  if (op == 3u) return fmaxf(v, 0.f);                                 // relu
  if (op == 4u) return v + r;                                         // residual
  return v;
}

template <int VEC, unsigned OPS>
__global__ void __launch_bounds__(256) epilogue_ops(const unsigned short* __restrict__ y,
                                                     const unsigned short* __restrict__ res,
                                                     unsigned short* __restrict__ out, long long rows, int n,
                                                     int out_n, int half) {
  typedef typename VecT<VEC>::T V;
  const long long nvec = rows * (long long)(out_n / VEC);
  for (long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x; v < nvec;
       v += (long long)gridDim.x * blockDim.x) {
    const long long e = v * VEC, r = e / out_n;
    const int j = (int)(e - r * out_n);
    float acc[VEC];
    if constexpr ((OPS & 0xFu) == 5u) {
      const int t = j / half, c = j - t * half;
      const long long g = r * (long long)n + (long long)t * 2 * half + c;
      const V gv = __ldg(reinterpret_cast<const V*>(y + g)), uv = __ldg(reinterpret_cast<const V*>(y + g + half));
      #pragma unroll
      for (int i = 0; i < VEC; ++i) acc[i] = epi_op(5u, elem<VEC>(gv, i), 0.f) * elem<VEC>(uv, i);
    } else {
      const V yv = __ldg(reinterpret_cast<const V*>(y + r * (long long)n + j));
      V rv;
      if (res != nullptr) rv = __ldg(reinterpret_cast<const V*>(res + e));
      #pragma unroll
      for (int i = 0; i < VEC; ++i) {
        float a = elem<VEC>(yv, i);
        #pragma unroll
        for (int s = 0; s < 16; s += 4) {
          const unsigned op = (OPS >> s) & 0xFu;
          if (op != 0u) a = epi_op(op, a, op == 4u ? elem<VEC>(rv, i) : 0.f);
        }
        acc[i] = a;
      }
    }
    V o;
    if constexpr (VEC == 1) {
      *reinterpret_cast<unsigned short*>(&o) = f32_to_bf16_rne(acc[0]);
    } else {
      #pragma unroll
      for (int p = 0; p < VEC / 2; ++p) {
        unsigned int w;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(acc[2 * p + 1]), "f"(acc[2 * p]));
        reinterpret_cast<unsigned int*>(&o)[p] = w;
      }
    }
    *reinterpret_cast<V*>(out + e) = o;
  }
}
"""

EPILOGUE_OP_CODES: dict[str, int] = {"gelu": 1, "silu": 2, "relu": 3, "residual": 4, "swiglu": 5}
"""The epilogue ops :func:`epilogue` runs as a kernel, with their code in the kernel source: every op of
``ctasim.spec.EPILOGUE_OPS`` (a test holds the two lists equal)."""

_functions: dict[tuple[int, str], object] = {}  # (device, template instance of _SOURCE) -> cupy.RawKernel


def launch_config(cols: int, align_bytes: int = 16) -> tuple[int, int, int]:
    """(vec, threads, vectors per thread) for rows of ``cols`` bf16 elements whose pointers are ``align_bytes``
    aligned: the widest vector (8, 4, 2 or 1 elements) that divides ``cols`` and the alignment, then about
    :data:`TARGET_VECS_PER_THREAD` vectors a thread, threads a multiple of 32 and at most 1024. Pure."""
    if cols <= 0:
        raise ValueError(f"cols must be positive, got {cols}")
    vec = 8
    while vec > 1 and (cols % vec or align_bytes % (2 * vec)):
        vec //= 2
    nvec = cols // vec
    threads = min(MAX_THREADS, max(32, 32 * math.ceil(math.ceil(nvec / TARGET_VECS_PER_THREAD) / 32)))
    nv = math.ceil(nvec / threads)
    if nv > MAX_VECS_PER_THREAD:
        raise ValueError(f"rows of {cols} columns need {nv} vectors of {vec} a thread; the kernel holds at most "
                         f"{MAX_VECS_PER_THREAD} (a row in registers)")
    return vec, threads, nv


def _function(cp, device: int, name: str):
    """The kernel ``name`` (a template instance of ``_SOURCE``) compiled for ``device``, once per process."""
    key = (device, name)
    if key not in _functions:
        with cp.cuda.Device(device):
            mod = cp.RawModule(code=_SOURCE, options=("-std=c++17",), name_expressions=(name,))
            _functions[key] = mod.get_function(name)
    return _functions[key]


def _kernel(cp, device: int, vec: int, nv: int, op: int):
    return _function(cp, device, f"rownorm<{vec},{nv},{op}>")


def _check(cp, name: str, arr, rows: int, cols: int) -> None:
    if not isinstance(arr, cp.ndarray) or arr.dtype != cp.uint16 or not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be a C-contiguous uint16 (bf16 bits) CuPy array, got "
                         f"{type(arr).__name__} {getattr(arr, 'dtype', None)}")
    if arr.size < rows * cols:
        raise ValueError(f"{name} has {arr.size} elements, fewer than rows * cols = {rows} * {cols}")


def rowwise(op: str, x, out, rows: int, cols: int, stream=None, eps: float = 1e-5) -> None:
    """Run the row-wise ``op`` (``"layernorm"`` or ``"rmsnorm"``) of ``x`` into ``out`` on ``stream`` (None: the
    current stream) of the GPU that holds ``x``. Both are uint16 CuPy arrays of at least rows * cols elements."""
    from ctahw.device import require_cupy

    cp = require_cupy()
    if op not in ROWWISE_OPS:
        raise ValueError(f"unknown row-wise op {op!r} (known: {', '.join(ROWWISE_OPS)})")
    _check(cp, "x", x, rows, cols)
    _check(cp, "out", out, rows, cols)
    if rows <= 0:
        return
    device = x.device.id
    if out.device.id != device:
        raise ValueError(f"x is on GPU {device}, out on GPU {out.device.id}: both must be on one GPU")
    align = math.gcd(int(x.data.ptr), int(out.data.ptr), 16)
    vec, threads, nv = launch_config(cols, align)
    kern = _kernel(cp, device, vec, nv, ROWWISE_OPS[op])
    args = (x, out, cp.int32(cols), cp.float32(eps))
    with cp.cuda.Device(device):
        if stream is None:
            kern((rows,), (threads,), args)
        else:
            with stream:
                kern((rows,), (threads,), args)


def epilogue_code(ops) -> int:
    """The kernel's packed op code of an epilogue op sequence (4 bits an op, first op lowest). Pure; ValueError for
    an unknown op, more than 4 ops, or swiglu with another op."""
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    unknown = [o for o in ops if o not in EPILOGUE_OP_CODES]
    if unknown or not ops or len(ops) > 4:
        raise ValueError(f"epilogue ops {list(ops)}: 1 to 4 of {', '.join(EPILOGUE_OP_CODES)} expected")
    if "swiglu" in ops and len(ops) > 1:
        raise ValueError(f"epilogue ops {list(ops)}: swiglu stands alone")
    return sum(EPILOGUE_OP_CODES[o] << (4 * i) for i, o in enumerate(ops))


def epilogue(ops, y, out, rows: int, n: int, tile_n: int = 256, residual=None, stream=None) -> None:
    """A layer's epilogue ``ops`` as their own kernel (``Layer.epilogue_fused = false``) on ``stream`` of the GPU
    that holds ``y``: ``y`` the GEMM's ``rows x n`` bf16 output; ``out`` ``rows x n`` (``rows x n/2`` for swiglu,
    whose gate and up are paired within each ``tile_n`` tile as in ``ctasim.spec.Layer``); ``residual`` the
    ``rows x`` out-columns bf16 operand of a residual op. fp32 math, output rounded once to bf16 (RNE)."""
    from ctahw.device import require_cupy

    cp = require_cupy()
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    code = epilogue_code(ops)
    gated = code == EPILOGUE_OP_CODES["swiglu"]
    if gated and (tile_n <= 0 or tile_n % 2 or n % tile_n):
        raise ValueError(f"swiglu pairs gate and up within {tile_n}-column tiles: n={n} must be a multiple of it")
    out_n = n // 2 if gated else n
    _check(cp, "y", y, rows, n)
    _check(cp, "out", out, rows, out_n)
    has_res = "residual" in ops
    if has_res:
        if residual is None:
            raise ValueError("the residual op needs its residual operand")
        _check(cp, "residual", residual, rows, out_n)
    if rows <= 0:
        return
    device = y.device.id
    for name, arr in (("out", out), ("residual", residual)):
        if arr is not None and arr.device.id != device:
            raise ValueError(f"y is on GPU {device}, {name} on GPU {arr.device.id}: all must be on one GPU")
    half = tile_n // 2 if gated else out_n
    ptrs = [int(y.data.ptr), int(out.data.ptr)] + ([int(residual.data.ptr)] if has_res else [])
    align = math.gcd(*ptrs, 16)
    vec = 8
    while vec > 1 and (out_n % vec or half % vec or align % (2 * vec)):  # n = 2 out_n for swiglu
        vec //= 2
    kern = _function(cp, device, f"epilogue_ops<{vec},{code}u>")
    nvec = rows * (out_n // vec)
    with cp.cuda.Device(device):
        blocks = int(min((nvec + 255) // 256, cp.cuda.Device(device).attributes["MultiProcessorCount"] * 16))
        args = (y, residual if has_res else cp.uint64(0), out, cp.int64(rows), cp.int32(n), cp.int32(out_n),
                cp.int32(half))
        if stream is None:
            kern((max(blocks, 1),), (256,), args)
        else:
            with stream:
                kern((max(blocks, 1),), (256,), args)


def layernorm(x, out, rows: int, cols: int, stream=None, eps: float = 1e-5) -> None:
    """``out = (x - mean) / sqrt(var + eps)`` per row (no gamma, no beta), bf16 in and out, fp32 math."""
    rowwise("layernorm", x, out, rows, cols, stream, eps)


def rmsnorm(x, out, rows: int, cols: int, stream=None, eps: float = 1e-5) -> None:
    """``out = x / sqrt(mean(x^2) + eps)`` per row (no gamma), bf16 in and out, fp32 math."""
    rowwise("rmsnorm", x, out, rows, cols, stream, eps)


# --------------------------------------------------------------------------------------------------
# fp32 references (numpy or CuPy arrays)


def _xp(y):
    """cupy for a CuPy array, else numpy (CuPy is not imported for numpy inputs)."""
    mod = type(y).__module__
    if mod.startswith("cupy"):
        import cupy  # noqa: PLC0415

        return cupy
    import numpy  # noqa: PLC0415

    return numpy


def _float(y, xp):
    y = xp.asarray(y)
    return y if y.dtype in (xp.float32, xp.float64) else y.astype(xp.float32)


def _erfc(y, xp):
    if xp.__name__ == "cupy":
        from cupyx.scipy.special import erfc  # noqa: PLC0415

        return erfc(y)
    try:
        from scipy.special import erfc  # noqa: PLC0415
    except ImportError:  # scipy is optional: math.erfc element by element (references are small)
        return xp.vectorize(math.erfc, otypes=[y.dtype])(y)
    return erfc(y).astype(y.dtype, copy=False)


def reference_epilogue(y_f32, ops, residual_f32=None, tile_n: int = 256):
    """The epilogue ``ops`` applied in order to ``y_f32`` (the fp32 GEMM result): gelu = 0.5 x (1 + erf(x/sqrt 2))
    (the erf form, not the tanh approximation), silu = x * sigmoid(x), relu = max(x, 0), residual = y + residual,
    swiglu = silu(gate) * up with gate and up the two halves of each ``tile_n``-column tile (``ctasim.spec.Layer``;
    half the columns out). numpy or CuPy in, the same out (float32, or float64 for float64 input)."""
    ops = (ops,) if isinstance(ops, str) else tuple(ops)
    xp = _xp(y_f32)
    y = _float(y_f32, xp)
    for op in ops:
        if op == "swiglu":
            rows, n = y.shape
            if tile_n % 2 or n % tile_n:
                raise ValueError(f"swiglu pairs gate and up within {tile_n}-column tiles; {n} columns do not tile")
            t = y.reshape(rows, n // tile_n, 2, tile_n // 2)
            gate, up = t[:, :, 0, :], t[:, :, 1, :]
            y = (0.5 * gate * (1.0 + xp.tanh(0.5 * gate)) * up).reshape(rows, n // 2)
            continue
        if op == "gelu":
            # 1 + erf(z) = erfc(-z): the same function, without the cancellation of 1 + erf(z) for z << 0
            y = 0.5 * y * _erfc(y * (-1.0 / math.sqrt(2.0)), xp)
        elif op == "silu":
            y = 0.5 * y * (1.0 + xp.tanh(0.5 * y))  # x * sigmoid(x), written so that no exp overflows
        elif op == "relu":
            y = xp.maximum(y, 0)
        elif op == "residual":
            if residual_f32 is None:
                raise ValueError("the residual op needs residual_f32")
            y = y + _float(residual_f32, xp)
        else:
            raise ValueError(f"unknown epilogue op {op!r} (known: {', '.join(EPILOGUE_OP_CODES)})")
    return y.astype(_float(y_f32, xp).dtype, copy=False)


def reference_rowwise(y_f32, op: str, eps: float = 1e-5, gamma=None, beta=None):
    """The row-wise ``op`` over the last axis of ``y_f32``: layernorm = (y - mean) / sqrt(var + eps) with the biased
    variance, rmsnorm = y / sqrt(mean(y^2) + eps); then ``* gamma + beta`` where given (the kernels of this module
    have no affine weights; the chain kernel's LayerNorm fold has). numpy or CuPy in, the same out."""
    xp = _xp(y_f32)
    y = _float(y_f32, xp)
    if op == "layernorm":
        mean = y.mean(axis=-1, keepdims=True)
        c = y - mean
        out = c / xp.sqrt((c * c).mean(axis=-1, keepdims=True) + eps)
    elif op == "rmsnorm":
        out = y / xp.sqrt((y * y).mean(axis=-1, keepdims=True) + eps)
    else:
        raise ValueError(f"unknown row-wise op {op!r} (known: {', '.join(ROWWISE_OPS)})")
    if gamma is not None:
        out = out * xp.asarray(gamma, dtype=out.dtype)
    if beta is not None:
        out = out + xp.asarray(beta, dtype=out.dtype)
    return out
