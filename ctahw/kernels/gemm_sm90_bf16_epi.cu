// ctahw: the project's CUTLASS 4.2 SM90 bf16 GEMM with a fused epilogue, behind extern "C" launchers for ctypes.
//
// The same GEMM as gemm_sm90_bf16.cu: D[M,N] (row-major, bf16) = A[M,K] (row-major, bf16) @ B[K,N], B stored as
// W[N,K] row-major (column-major K x N, the "TN" layout), fp32 accumulation; warp-specialized cooperative
// mainloop (TMA + wgmma), TMA-store epilogue, persistent static tile scheduler, CTA tile 128x256x64, cluster
// 2x1x1, the same raster / swizzle arguments. What differs is the epilogue, CUTLASS's own fusion operations
// given to the epilogue CollectiveBuilder (nothing hand-written runs in the epilogue):
//
//   op 1 gelu     D = GELU(acc), the erf form 0.5 x (1 + erf(x / sqrt 2))   fusion::LinCombEltAct<thread::GELU, ...>
//   op 2 silu     D = acc * sigmoid(acc)                                       fusion::LinCombEltAct<thread::SiLu, ...>
//   op 3 relu     D = max(acc, 0)                                              fusion::LinCombEltAct<thread::ReLu, ...>
//   op 4 residual D = acc + C, C[M,N] row-major bf16 (TMA-loaded)              fusion::LinearCombination<..., bf16 C>
//
// Ops 1-3 have no C operand (ElementC = void: the builder drops the C load and its shared memory, as the plain
// kernel does) and run with alpha = 1, beta = 0; op 4 runs with alpha = beta = 1. The activation and the sum
// are computed in fp32 on the fp32 accumulator and rounded once to bf16 (round to nearest even). Op 0 (no
// epilogue op) is not in this library: that is gemm_sm90_bf16.cu.
//
// Note on SiLu: CUTLASS's sigmoid is 1 / (1 + fast_exp(-x)) (ex2.approx), a few ulp of fp32 off expf: far
// below the bf16 rounding of the output.
//
// Every launcher returns 0 on success, or a negative code: -1000 - cutlass::Status for CUTLASS errors,
// -cudaError_t for CUDA runtime errors, <= -2000 this library's own (see ctahw_gemm_epi_status_string).

#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cutlass/version.h"
#include "cute/tensor.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler_params.h"
#include "cutlass/util/packed_stride.hpp"

#include "launch_status.cuh"

using namespace cute;

namespace {

using ElementA = cutlass::bfloat16_t;
using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::bfloat16_t;
using LayoutB = cutlass::layout::ColumnMajor;
using ElementD = cutlass::bfloat16_t;
using LayoutD = cutlass::layout::RowMajor;
using LayoutC = cutlass::layout::RowMajor;
using ElementAccumulator = float;
using ElementCompute = float;
constexpr int kAlign = 8;  // 16 bytes of bf16

using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;

constexpr int kCodeWorkspace = -2000;
constexpr int kCodeSchedule = -2001;
constexpr int kCodeUnknownOp = -2002;
constexpr int kCodeNoC = -2003;

using ctahw::launch::cutlass_code;

// One GEMM with the fusion operation `FusionOp` and the C element `ElementC` (void: no C operand). The four ops
// are four instantiations of this one code path.
template <class FusionOp, class ElementC_, bool kHasC>
struct EpiGemm {
  using ElementC = ElementC_;
  static constexpr bool has_c = kHasC;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementCompute, ElementC, LayoutC,
      kAlign, ElementD, LayoutD, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative,
      FusionOp>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlign, ElementB, LayoutB, kAlign,
      ElementAccumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;

  using GemmKernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                          CollectiveEpilogue, cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<GemmKernel>;

  using StrideA = typename Gemm::GemmKernel::StrideA;
  using StrideB = typename Gemm::GemmKernel::StrideB;
  using StrideC = typename Gemm::GemmKernel::StrideC;
  using StrideD = typename Gemm::GemmKernel::StrideD;
  using PtrC = typename CollectiveEpilogue::ElementC const*;  // void const* where there is no C

  // raster: 0 heuristic, 1 along M, 2 along N; swizzle: the persistent scheduler's max_swizzle_size (1, 2, 4, 8).
  static typename Gemm::Arguments make_args(const void* a, const void* b, const void* c, void* d, int m, int n, int k,
                                            int device, int sm_count, int raster = 0, int swizzle = 1) {
    cutlass::KernelHardwareInfo hw;
    hw.device_id = device;
    hw.sm_count =
        sm_count > 0 ? sm_count : cutlass::KernelHardwareInfo::query_device_multiprocessor_count(device);
    StrideA sa = cutlass::make_cute_packed_stride(StrideA{}, make_shape(m, k, 1));
    StrideB sb = cutlass::make_cute_packed_stride(StrideB{}, make_shape(n, k, 1));
    StrideC sc = cutlass::make_cute_packed_stride(StrideC{}, make_shape(m, n, 1));
    StrideD sd = cutlass::make_cute_packed_stride(StrideD{}, make_shape(m, n, 1));
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                  {m, n, k, 1},
                                  {static_cast<const ElementA*>(a), sa, static_cast<const ElementB*>(b), sb},
                                  {{}, has_c ? static_cast<PtrC>(c) : nullptr, sc, static_cast<ElementD*>(d), sd},
                                  hw};
    args.epilogue.thread.alpha = 1.0f;
    args.epilogue.thread.beta = has_c ? 1.0f : 0.0f;  // a sourceless (void-C) epilogue requires beta == 0
    using Raster = cutlass::gemm::kernel::detail::RasterOrderOptions;
    args.scheduler.raster_order =
        raster == 1 ? Raster::AlongM : raster == 2 ? Raster::AlongN : Raster::Heuristic;
    args.scheduler.max_swizzle_size = swizzle;
    return args;
  }

  static int describe(const char* op_name, const char* fusion, char* buf, int len) {
    return snprintf(buf, static_cast<size_t>(len),
                    "cutlass=%d.%d.%d kernel=sm90_tma_ws_cooperative_persistent dtype=bf16 layout=TN "
                    "tile=%dx%dx%d cluster=%dx%dx%d stages=%d threads=%d smem_bytes=%d epilogue=%s fusion=%s "
                    "c_operand=%s",
                    CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, int(size<0>(TileShape{})),
                    int(size<1>(TileShape{})), int(size<2>(TileShape{})), int(size<0>(ClusterShape{})),
                    int(size<1>(ClusterShape{})), int(size<2>(ClusterShape{})),
                    int(CollectiveMainloop::DispatchPolicy::Stages), int(GemmKernel::MaxThreadsPerBlock),
                    int(GemmKernel::SharedStorageSize), op_name, fusion, has_c ? "bf16_row_major" : "none");
  }

  static long long workspace_bytes(int m, int n, int k, int device, int sm_count) {
    auto args = make_args(nullptr, nullptr, nullptr, nullptr, m, n, k, device, sm_count);
    return static_cast<long long>(Gemm::get_workspace_size(args));
  }

  static int can_implement(int m, int n, int k, int device, int sm_count) {
    auto args = make_args(nullptr, nullptr, nullptr, nullptr, m, n, k, device, sm_count);
    return cutlass_code(Gemm::can_implement(args));
  }

  static int run(const void* a, const void* b, const void* c, void* d, int m, int n, int k, void* workspace,
                 long long workspace_bytes, int device, int sm_count, int raster, int swizzle, cudaStream_t stream) {
    if (raster < 0 || raster > 2 || (swizzle != 1 && swizzle != 2 && swizzle != 4 && swizzle != 8)) {
      return kCodeSchedule;
    }
    if (has_c && c == nullptr) return kCodeNoC;
    auto args = make_args(a, b, c, d, m, n, k, device, sm_count, raster, swizzle);
    size_t need = Gemm::get_workspace_size(args);
    if (static_cast<long long>(need) > workspace_bytes) return kCodeWorkspace;
    Gemm gemm;
    return ctahw::launch::can_initialize_run(gemm, args, workspace, stream);
  }
};

namespace fusion = cutlass::epilogue::fusion;
namespace act = cutlass::epilogue::thread;

// ElementSource = void: no C operand (Sm90SrcFetch<void> loads nothing, is_zero()).
using GeluGemm = EpiGemm<fusion::LinCombEltAct<act::GELU, ElementD, ElementCompute, void, ElementCompute>, void, false>;
using SiluGemm = EpiGemm<fusion::LinCombEltAct<act::SiLu, ElementD, ElementCompute, void, ElementCompute>, void, false>;
using ReluGemm = EpiGemm<fusion::LinCombEltAct<act::ReLu, ElementD, ElementCompute, void, ElementCompute>, void, false>;
using ResidualGemm = EpiGemm<fusion::LinearCombination<ElementD, ElementCompute, cutlass::bfloat16_t, ElementCompute>,
                             cutlass::bfloat16_t, true>;

struct OpInfo {
  const char* name;
  const char* fusion;
};

// Calls f(Tag{}) with the EpiGemm of `op`, or returns kCodeUnknownOp.
template <class R, class F>
R dispatch(int op, F&& f) {
  switch (op) {
    case 1: return f(GeluGemm{}, OpInfo{"gelu", "LinCombEltAct<GELU(erf)>,C=void,alpha=1,beta=0"});
    case 2: return f(SiluGemm{}, OpInfo{"silu", "LinCombEltAct<SiLu>,C=void,alpha=1,beta=0"});
    case 3: return f(ReluGemm{}, OpInfo{"relu", "LinCombEltAct<ReLu>,C=void,alpha=1,beta=0"});
    case 4: return f(ResidualGemm{}, OpInfo{"residual", "LinearCombination,C=bf16,alpha=1,beta=1"});
    default: return static_cast<R>(kCodeUnknownOp);
  }
}

}  // namespace

extern "C" {

// Version of this C ABI; the Python side checks it after loading.
int ctahw_gemm_epi_abi_version() { return 1; }

// One line describing op's compiled kernel (tile, cluster, stages, threads, shared memory, fusion); the number of
// characters it needed, or -2002 for an unknown op.
int ctahw_gemm_epi_describe(int op, char* buf, int len) {
  return dispatch<int>(op, [&](auto g, OpInfo info) { return decltype(g)::describe(info.name, info.fusion, buf, len); });
}

// Bytes of workspace op's launcher needs for this problem (0 for the static persistent scheduler, but ask);
// -2002 for an unknown op.
long long ctahw_gemm_epi_workspace_bytes(int op, int m, int n, int k, int device, int sm_count) {
  return dispatch<long long>(op, [&](auto g, OpInfo) { return decltype(g)::workspace_bytes(m, n, k, device, sm_count); });
}

// 0 if op's kernel can run this problem (alignment, sizes), else a negative code.
int ctahw_gemm_epi_can_implement(int op, int m, int n, int k, int device, int sm_count) {
  return dispatch<int>(op, [&](auto g, OpInfo) { return decltype(g)::can_implement(m, n, k, device, sm_count); });
}

// D = epilogue_op(A @ B) on `stream` of the current device `device` (the caller sets it). c: the residual
// C[M,N] (row-major bf16) of op 4, ignored by ops 1-3 (pass NULL). sm_count, raster, swizzle and a D on a peer
// GPU: as ctahw_gemm_bf16_128x256x64_coop.
int ctahw_gemm_epi_bf16_128x256x64_coop(int op, const void* a, const void* b, const void* c, void* d, int m, int n,
                                        int k, void* workspace, long long workspace_bytes, int device, int sm_count,
                                        int raster, int swizzle, cudaStream_t stream) {
  return dispatch<int>(op, [&](auto g, OpInfo) {
    return decltype(g)::run(a, b, c, d, m, n, k, workspace, workspace_bytes, device, sm_count, raster, swizzle,
                            stream);
  });
}

// A message for a launcher's return code (valid until the next call).
const char* ctahw_gemm_epi_status_string(int code) {
  if (code == kCodeWorkspace) return "workspace too small";
  if (code == kCodeSchedule) return "bad raster (0..2) or swizzle (1, 2, 4, 8)";
  if (code == kCodeUnknownOp) return "unknown epilogue op (1 gelu, 2 silu, 3 relu, 4 residual)";
  if (code == kCodeNoC) return "the residual op (4) needs its C operand (got NULL)";
  return ctahw::launch::status_string(code);
}

}  // extern "C"
