// ctahw: the project's own CUTLASS 4.2 SM90 bf16 GEMM, behind extern "C" launchers for ctypes.
//
// D[M,N] (row-major, bf16) = A[M,K] (row-major, bf16) @ B[K,N], where B is stored as W[N,K] row-major
// (i.e. column-major K x N: both operands K-major, the "TN" layout cuBLAS and the tensor cores like best).
// fp32 accumulation; epilogue D = alpha * acc (no C operand).
//
// Kernel: warp-specialized cooperative mainloop (TMA + wgmma), TMA-store epilogue, persistent static tile
// scheduler, CTA tile 128x256x64, cluster 2x1x1 (the configuration of ../shared/CUTLASS-NOTES.md that ran at
// 712-790 TFLOP/s on an H200). Mainloop and epilogue are CUTLASS's, untouched.
//
// Every launcher returns 0 on success, or a negative code: -1000 - cutlass::Status for CUTLASS errors,
// -cudaError_t for CUDA runtime errors (see ctahw_gemm_status_string).

#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cutlass/version.h"
#include "cute/tensor.hpp"
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
using ElementAccumulator = float;
constexpr int kAlign = 8;  // 16 bytes of bf16

using TileShape = Shape<_128, _256, _64>;
using ClusterShape = Shape<_2, _1, _1>;

using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator,
    void, LayoutD, kAlign,  // no C operand
    ElementD, LayoutD, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative>::CollectiveOp;

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

using ctahw::launch::cutlass_code;

// raster: 0 heuristic, 1 along M, 2 along N (cutlass::gemm::kernel::detail::RasterOrderOptions);
// swizzle: the persistent scheduler's max_swizzle_size (1, 2, 4 or 8): tiles grouped for L2 reuse.
typename Gemm::Arguments make_args(const void* a, const void* b, void* d, int m, int n, int k, float alpha,
                                   int device, int sm_count, int raster = 0, int swizzle = 1) {
  cutlass::KernelHardwareInfo hw;
  hw.device_id = device;
  hw.sm_count = sm_count > 0 ? sm_count : cutlass::KernelHardwareInfo::query_device_multiprocessor_count(device);
  StrideA sa = cutlass::make_cute_packed_stride(StrideA{}, make_shape(m, k, 1));
  StrideB sb = cutlass::make_cute_packed_stride(StrideB{}, make_shape(n, k, 1));
  StrideC sc = cutlass::make_cute_packed_stride(StrideC{}, make_shape(m, n, 1));
  StrideD sd = cutlass::make_cute_packed_stride(StrideD{}, make_shape(m, n, 1));
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k, 1},
                                {static_cast<const ElementA*>(a), sa, static_cast<const ElementB*>(b), sb},
                                {{alpha, 0.0f}, nullptr, sc, static_cast<ElementD*>(d), sd},
                                hw};
  using Raster = cutlass::gemm::kernel::detail::RasterOrderOptions;
  args.scheduler.raster_order = raster == 1 ? Raster::AlongM : raster == 2 ? Raster::AlongN : Raster::Heuristic;
  args.scheduler.max_swizzle_size = swizzle;
  return args;
}

}  // namespace

extern "C" {

// Version of this C ABI; the Python side checks it after loading.
int ctahw_gemm_abi_version() { return 2; }

// One line describing the compiled kernel (tile, cluster, stages, threads, shared memory).
int ctahw_gemm_describe(char* buf, int len) {
  int n = snprintf(buf, static_cast<size_t>(len),
                   "cutlass=%d.%d.%d kernel=sm90_tma_ws_cooperative_persistent dtype=bf16 layout=TN "
                   "tile=%dx%dx%d cluster=%dx%dx%d stages=%d threads=%d smem_bytes=%d",
                   CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, int(size<0>(TileShape{})),
                   int(size<1>(TileShape{})), int(size<2>(TileShape{})), int(size<0>(ClusterShape{})),
                   int(size<1>(ClusterShape{})), int(size<2>(ClusterShape{})),
                   int(CollectiveMainloop::DispatchPolicy::Stages), int(GemmKernel::MaxThreadsPerBlock),
                   int(GemmKernel::SharedStorageSize));
  return n;
}

// Bytes of workspace the launcher needs for this problem (0 for the static persistent scheduler, but ask).
long long ctahw_gemm_workspace_bytes(int m, int n, int k, int device, int sm_count) {
  auto args = make_args(nullptr, nullptr, nullptr, m, n, k, 1.0f, device, sm_count);
  return static_cast<long long>(Gemm::get_workspace_size(args));
}

// 0 if the kernel can run this problem (alignment, sizes), else a negative code.
int ctahw_gemm_can_implement(int m, int n, int k, int device, int sm_count) {
  auto args = make_args(nullptr, nullptr, nullptr, m, n, k, 1.0f, device, sm_count);
  return cutlass_code(Gemm::can_implement(args));
}

// D = alpha * A @ B on `stream` of the current device `device` (the caller sets it). sm_count <= 0: all SMs;
// a smaller sm_count makes the persistent grid use fewer SMs (leaving the rest free). D may live on a peer
// GPU with peer access enabled: the TMA-store epilogue then writes over NVLink. raster and swizzle: the tile
// order of the persistent scheduler (see make_args); they change the order, never the result.
int ctahw_gemm_bf16_128x256x64_coop(const void* a, const void* b, void* d, int m, int n, int k, float alpha,
                                    void* workspace, long long workspace_bytes, int device, int sm_count,
                                    int raster, int swizzle, cudaStream_t stream) {
  if (raster < 0 || raster > 2 || (swizzle != 1 && swizzle != 2 && swizzle != 4 && swizzle != 8)) return -2001;
  auto args = make_args(a, b, d, m, n, k, alpha, device, sm_count, raster, swizzle);
  size_t need = Gemm::get_workspace_size(args);
  if (static_cast<long long>(need) > workspace_bytes) return -2000;
  Gemm gemm;
  return ctahw::launch::can_initialize_run(gemm, args, workspace, stream);
}

// A message for a launcher's return code (valid until the next call).
const char* ctahw_gemm_status_string(int code) {
  if (code == -2000) return "workspace too small";
  if (code == -2001) return "bad raster (0..2) or swizzle (1, 2, 4, 8)";
  return ctahw::launch::status_string(code);
}

}  // extern "C"
