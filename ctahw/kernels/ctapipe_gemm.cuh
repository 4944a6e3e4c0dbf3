// ctapipe_gemm.cuh: the CTA-pipelined CUTLASS 4.2 SM90 bf16 GEMM, variant (a) "classical": one tile per
// CTA, non-persistent grid, the CTA's tile chosen by a project-defined tile scheduler. Included by the
// translation units that instantiate it (ctapipe_sm90_bf16.cu: cluster 1x1; ctapipe_sm90_bf16_cluster.cu:
// clusters 2x1 and 1x2).
//
// D[M,N] = alpha * A[M,K] @ W[N,K]^T, bf16, fp32 accumulation, cooperative warp-specialized mainloop,
// TMA-store epilogue, tile 128x256x64, as gemm_sm90_bf16.cu. CUTLASS's kernel, mainloop and epilogue are
// untouched: everything CTA-pipelining needs happens in the scheduler that GemmUniversal's fourth template
// argument selects (TileSchedulerSelector):
//
//   constructor (every thread, before any role split):
//     cluster 1x1: thread 0 takes the CTA's tile -- order[cta] for a static (producer-only) kernel, a
//       pop from the inbound work-queue, or order[cta] once its inbound counter completed (wait consumer) --
//       writes it to a global scratch word, and the CTA meets at a __syncthreads (ctapipe::acquire_broadcast,
//       shared with the persistent and chain schedulers); a failed pop or wait gives an invalid tile, so the CTA
//       skips all work and exits.
//     cluster of 2, static: each CTA reads order[cta] (the order pairs tiles that share the multicast
//       operand: same column for 2x1, same row for 1x2).
//     cluster of 2, queue or wait: the kernel has done cluster_arrive_relaxed; the constructor completes it
//       with cluster_wait, the leader CTA's thread 0 pops two consecutive slots (or waits for both CTAs'
//       tiles of the order) -- checked to share the multicast operand -- and writes both CTAs' tiles to the
//       scratch, then cluster_arrive (release); the kernel's own cluster_wait (acquire) follows before any
//       thread asks for its tile. Both CTAs get a tile or neither does (a lone CTA would wait forever for
//       its partner's multicast).
//   initial_work_tile_info: that tile; fetch_next_work: none (one tile per CTA).
//   fixup (called between mainloop and epilogue): the mainloop-end stamp.
//   fetch_next_work in the consumer warp groups (called right after the epilogue issued its TMA stores):
//     every epilogue thread waits for its bulk groups to complete, the 256 threads meet at a named barrier,
//     and one thread signals the scoreboard / pushes ready tiles (ctapipe.cuh).
//
// The tile id is broadcast through global memory (cta_tile[cta]), not a static __shared__ variable: static
// shared memory shifts CUTLASS's dynamic shared storage off the alignment its swizzled TMA buffers need
// (it failed with a misaligned address). Tracing (%globaltimer stamps) is a template parameter.
//
// Fused epilogue ops (Config's third template parameter, op codes of CTAPIPE_EPILOGUE_OPS below): CUTLASS's own
// fusion operations given to the epilogue CollectiveBuilder, as gemm_sm90_bf16_epi.cu does for the plain GEMM; the
// kernel, mainloop, scheduler and protocol are the same for every op:
//
//   op 0 none     D = alpha * acc (the builder's default LinearCombination, C = void: today's kernel, unchanged)
//   op 1 gelu     D = GELU(acc), erf form                     fusion::LinCombEltAct<thread::GELU, ...>, C = void
//   op 2 silu     D = acc * sigmoid(acc)                      fusion::LinCombEltAct<thread::SiLu, ...>, C = void
//   op 3 relu     D = max(acc, 0)                             fusion::LinCombEltAct<thread::ReLu, ...>, C = void
//   op 4 residual D = acc + C, C[M,N] row-major bf16          fusion::LinearCombination<..., bf16 C>, alpha = beta = 1
//
// Ops 1-3 run with alpha = 1, beta = 0 and no C operand (no C load, no C shared memory). Op 4's C is TMA-loaded
// by the producer warp group's epilogue-load warp, which calls fetch_next_work too but never signals (only the
// consumer warp groups do); its buffers are carved out of the mainloop's shared memory (StageCountAutoCarveout):
// with CUTLASS 4.2 every cluster shape keeps 4 mainloop stages, 230400 bytes of shared memory against 214016 for
// ops 0-3 (ctahw_ctapipe_describe_epi; the H200 allows 232448 a CTA). C is read only: no pipelined kernel produces
// it, so no protocol step orders it (it must be written before the launch). fp32 math on the fp32 accumulator,
// rounded once to bf16.
#pragma once

#include <cstdio>
#include <type_traits>
#include <utility>
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"
#include "cutlass/version.h"
#include "cute/tensor.hpp"
#include "cute/arch/cluster_sm90.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/operations.hpp"
#include "cutlass/epilogue/thread/activation.h"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/gemm/kernel/tile_scheduler.hpp"
#include "cutlass/arch/barrier.h"
#include "cutlass/util/packed_stride.hpp"

#include "ctapipe.cuh"
#include "launch_status.cuh"

namespace ctahw {

// Named barrier id for the epilogue threads' meeting after their stores completed (CUTLASS reserves 1..7).
constexpr int kSignalBarrier = 13;
constexpr int kThreadsPerWarpGroup = 128;
constexpr int kEpilogueThreads = 256;  // the two consumer (MMA + epilogue) warp groups
static_assert(kSignalBarrier >= static_cast<int>(cutlass::arch::ReservedNamedBarriers::FirstUserBarrier) &&
                  kSignalBarrier < 16,
              "the signal barrier must be a named barrier CUTLASS leaves to users (and one of the 16 there are)");

// The protocol's thread roles hold for CUTLASS kernel K: its producer warp groups come first and are one warp
// group (so thread kThreadsPerWarpGroup, the signalling thread, is the first MMA / epilogue thread), and its MMA
// warp groups are the kEpilogueThreads that meet at kSignalBarrier before a signal. Every launcher checks it
// (static_assert) for the kernel it instantiates.
template <class K>
constexpr bool protocol_roles_match() {
  return K::NumLoadWarpGroups * cutlass::NumThreadsPerWarpGroup == kThreadsPerWarpGroup &&
         K::NumMmaWarpGroups * cutlass::NumThreadsPerWarpGroup == kEpilogueThreads &&
         K::MaxThreadsPerBlock == kThreadsPerWarpGroup + kEpilogueThreads;
}

// Per-tile trace stamps, the words every kernel of this project writes (ctapipe.cuh's kStamp* names them):
// tile `tile`'s kTileStampWords words of `stamps`.
CUTLASS_DEVICE unsigned long long* tile_stamps(unsigned long long* stamps, int tile) {
  return stamps + static_cast<size_t>(tile) * ctapipe::kTileStampWords;
}

// kStampWhere's word: the SM the calling thread runs on (high half) and the CTA `cta` (low half).
CUTLASS_DEVICE unsigned long long where_word(unsigned cta) {
  return (static_cast<unsigned long long>(ctapipe::smid()) << 32) | cta;
}

// The first MMA / epilogue thread, as the MMA warp groups begin tile `tile` (none for a negative id): kStampAcquire.
// `stamps` is the parameters' own field, read only by that thread and after the clock.
CUTLASS_DEVICE void stamp_compute_start(unsigned long long* const& stamps, int tile) {
  if (tile >= 0 && threadIdx.x == kThreadsPerWarpGroup) tile_stamps(stamps, tile)[ctapipe::kStampAcquire] = ctapipe::now_ns();
}

// A scheduler's fixup (CUTLASS calls it in the MMA warp groups once a tile's mainloop is done): the first MMA /
// epilogue thread stamps kStampMainloopEnd of the valid work tile `work`, its id from (L, M, N) by `tile_of`.
// `stamps` is the parameters' own field, read only by that thread and after the clock.
template <class WorkTileInfo, class TileOf>
CUTLASS_DEVICE void stamp_mainloop_end(unsigned long long* const& stamps, WorkTileInfo const& work, TileOf&& tile_of) {
  if (threadIdx.x == kThreadsPerWarpGroup && work.is_valid()) {
    const int tile = tile_of(work);
    tile_stamps(stamps, tile)[ctapipe::kStampMainloopEnd] = ctapipe::now_ns();
  }
}

// A one-layer kernel's tile id of a work tile: row-major over the descriptor's tiles_n columns.
CUTLASS_DEVICE auto pipe_tile_of(ctapipe::Params const& p) {
  return [&p](auto const& work) { return work.M_idx * p.tiles_n + work.N_idx; };
}

// A scheduler's Params from CUTLASS's: the PersistentTileSchedulerSm90 fields of `args` (the base of every
// scheduler here) set as that scheduler sets them, the derived scheduler's own fields left at their defaults.
template <class Params, class ProblemShapeMNKL, class TileShape, class ClusterShape, class Arguments>
Params base_scheduler_params(ProblemShapeMNKL problem_shape_mnkl, TileShape tile_shape, ClusterShape cluster_shape,
                             cutlass::KernelHardwareInfo const& hw_info, Arguments const& args, void* workspace,
                             uint32_t epilogue_subtile, uint32_t ktile_align) {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;
  Params p;
  static_cast<typename Base::Params&>(p) = Base::to_underlying_arguments(
      problem_shape_mnkl, tile_shape, cluster_shape, hw_info, static_cast<typename Base::Arguments const&>(args),
      workspace, epilogue_subtile, ktile_align);
  return p;
}

// Consumer warp groups, right after the epilogue issued a tile's TMA stores (every variant): every storing thread
// completes and fences its own stores (ctapipe::complete_stores), the epilogue threads meet, and one thread signals
// the tile's counters and stamps it when tracing.
template <bool Trace>
CUTLASS_DEVICE void finish_tile_and_signal(ctapipe::Params const& p, int m_idx, int n_idx) {
  const int tile = m_idx * p.tiles_n + n_idx;
  const bool leader = threadIdx.x == kThreadsPerWarpGroup;
  unsigned long long* s = nullptr;
  if constexpr (Trace) {
    s = tile_stamps(p.stamps, tile);
    if (leader) s[ctapipe::kStampEpilogue] = ctapipe::now_ns();
  }
  ctapipe::complete_stores();  // no-op for threads that issued no stores
  asm volatile("bar.sync %0, %1;" ::"n"(kSignalBarrier), "n"(kEpilogueThreads) : "memory");
  if (leader) {
    unsigned long long t_store = 0, t_signal = 0;
    if constexpr (Trace) t_store = ctapipe::now_ns();
    if (p.out_counters != nullptr && m_idx != p.stall_row) {
      t_signal = ctapipe::signal<Trace>(p, tile);
    } else if constexpr (Trace) {
      t_signal = t_store;  // nothing to signal (last layer): the output is visible where it is read
    }
    if constexpr (Trace) {
      s[ctapipe::kStampStoreEnd] = t_store;
      s[ctapipe::kStampSignal] = t_signal;
    }
  }
}

constexpr int kSchedStages = 2;

// The kernel's scheduler pipeline: PipelineAsync with the Params fields the cooperative kernel sets.
template <int S>
struct SchedPipeline : cutlass::PipelineAsync<S> {
  using Base = cutlass::PipelineAsync<S>;
  struct Params : Base::Params {
    uint32_t producer_blockid = 0;
    uint32_t transaction_bytes = 0;
  };
  CUTLASS_DEVICE SchedPipeline(typename Base::SharedStorage& s, Params const& p)
      : Base(s, static_cast<typename Base::Params const&>(p)) {}
};

// The scheduler-warp adapter: what CUTLASS's cooperative kernel asks of a dynamic-persistent tile scheduler
// (IsDynamicPersistent: producer warp 1 is the scheduler warp), written once for the persistent kernel
// (ctapipe_sm90_bf16_persistent.cu) and the chain kernel's tickets design. Each tile reaches every role through a
// kSchedStages-deep shared-memory pipeline of tile words. `Derived` is the tile source and sink:
//   int take_next(bool elected)             every lane of the scheduler warp; the elected lane's tile is published
//                                          (the others may keep per-lane state, e.g. a static order's position);
//   void finish_tile(WorkTileInfo)          the MMA/epilogue threads after the tile's TMA stores were issued (signal);
//   void fetched(int tile)                  every role, once the next tile is read (fences, stamps);
//   WorkTileInfo to_work(int tile)          tile id -> CUTLASS work tile (invalid for a negative id).
template <class Derived>
class SchedulerWarp : public cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90 {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;

 public:
  static constexpr bool IsDynamicPersistent = true;
  using WorkTileInfo = typename Base::WorkTileInfo;
  struct CLCResponse {
    int data[4] = {-1, 0, 0, 0};  // tile
  };
  using Pipeline = SchedPipeline<kSchedStages>;
  using PipelineStorage = typename Pipeline::SharedStorage;
  using ThrottlePipeline = cutlass::PipelineAsync<kSchedStages>;
  using ThrottlePipelineStorage = typename ThrottlePipeline::SharedStorage;
  class SharedStorage {
   public:
    CUTLASS_DEVICE PipelineStorage& pipeline() { return pipeline_; }
    CUTLASS_DEVICE ThrottlePipelineStorage& throttle_pipeline() { return throttle_pipeline_; }
    CUTLASS_DEVICE CLCResponse* data() { return data_; }

   private:
    alignas(16) PipelineStorage pipeline_;
    alignas(16) ThrottlePipelineStorage throttle_pipeline_;
    alignas(16) CLCResponse data_[kSchedStages];
  };

  CUTLASS_DEVICE explicit SchedulerWarp(typename Base::Params const& params) : Base(params) {}

  CUTLASS_DEVICE void set_data_ptr(CLCResponse* p) { data_ = p; }

  // Scheduler warp: take the next tile and publish it to every role.
  template <class PipelineState>
  CUTLASS_DEVICE PipelineState advance_to_next_work(Pipeline& pipeline, PipelineState state) {
#if defined(__CUDA_ARCH__)
    pipeline.producer_acquire(state);
    __syncwarp();
    const bool elected = cute::elect_one_sync();
    const int tile = derived().take_next(elected);
    if (elected) {
      reinterpret_cast<volatile int*>(data_[state.index()].data)[0] = tile;
      pipeline.producer_commit(state);
    }
    __syncwarp();
#endif
    ++state;
    return state;
  }

  // Every role, after the current tile (the MMA/epilogue threads: after its TMA stores were issued).
  template <class TileSchedulerPipeline, class TileSchedulerPipelineState>
  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo work, TileSchedulerPipeline& pipeline,
                                      TileSchedulerPipelineState state) {
    int tile = -1;
#if defined(__CUDA_ARCH__)
    if (work.is_valid() && threadIdx.x >= kThreadsPerWarpGroup) derived().finish_tile(work);
    pipeline.consumer_wait(state);
    tile = reinterpret_cast<volatile int*>(data_[state.index()].data)[0];
    pipeline.consumer_release(state);
    derived().fetched(tile);
#endif
    return cute::make_tuple(derived().to_work(tile), true);
  }

  // Only for warp groups without work in a tile (never here).
  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo) {
    return cute::make_tuple(WorkTileInfo::invalid_work_tile(), true);
  }

  CUTLASS_DEVICE bool is_last_tile(WorkTileInfo&, uint32_t = 1) const { return false; }

 private:
  CUTLASS_DEVICE Derived& derived() { return *static_cast<Derived*>(this); }
  CLCResponse* data_ = nullptr;
};

template <bool Trace, int CM, int CN>
struct CtaPipeSchedulerTag {};

template <bool Trace, int CM, int CN>
class CtaPipeScheduler : public cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90 {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;
  static constexpr int kClusterSize = CM * CN;
  static_assert((CM == 1 && CN == 1) || (CM == 2 && CN == 1) || (CM == 1 && CN == 2), "clusters 1x1, 2x1, 1x2");

 public:
  using WorkTileInfo = typename Base::WorkTileInfo;
  struct Arguments : Base::Arguments {
    ctapipe::Params pipe{};
  };
  struct Params : Base::Params {
    ctapipe::Params pipe{};
  };

  template <class ProblemShapeMNKL, class TileShape, class ClusterShape>
  static Params to_underlying_arguments(ProblemShapeMNKL problem_shape_mnkl, TileShape tile_shape,
                                        ClusterShape cluster_shape, cutlass::KernelHardwareInfo const& hw_info,
                                        Arguments const& args, void* workspace = nullptr,
                                        const uint32_t epilogue_subtile = 1, uint32_t ktile_align = 1u) {
    Params p = base_scheduler_params<Params>(problem_shape_mnkl, tile_shape, cluster_shape, hw_info, args, workspace,
                                             epilogue_subtile, ktile_align);
    p.pipe = args.pipe;
    return p;
  }

  CUTLASS_HOST_DEVICE static bool can_implement(Arguments const& args) {
    return args.pipe.num_tiles > 0 && args.pipe.num_tiles % kClusterSize == 0;
  }

  // One CTA per tile; a 1x2 cluster's CTAs along y.
  template <class ProblemShapeMNKL, class BlockShape, class ClusterShape>
  CUTLASS_HOST_DEVICE static dim3 get_grid_shape(Params const& params, ProblemShapeMNKL, BlockShape, ClusterShape,
                                                 cutlass::KernelHardwareInfo, Arguments = Arguments{},
                                                 bool = true) {
    if constexpr (CN == 2) return dim3(static_cast<unsigned>(params.pipe.num_tiles / 2), 2, 1);
    return dim3(static_cast<unsigned>(params.pipe.num_tiles), 1, 1);
  }

  CUTLASS_DEVICE explicit CtaPipeScheduler(Params const& params) : Base(params), pipe_(params.pipe) {
#if defined(__CUDA_ARCH__)
    const int cta = ctapipe::cta_linear();
    if constexpr (Trace) t_start_ = ctapipe::now_ns();
    if (pipe_.mode == 0) {
      tile_ = cta < pipe_.num_tiles ? pipe_.order[cta] : -1;  // every thread reads it
      slot_ = -1;
      if constexpr (Trace) {
        if (threadIdx.x == 0) stamp_acquired();
      }
    } else if constexpr (kClusterSize == 1) {
      int slot = -1;
      tile_ = ctapipe::acquire_broadcast(
          pipe_.cta_tile + cta,
          [&] {
            int tile = -1;
            if (pipe_.mode == ctapipe::kModeQueue) {
              tile = ctapipe::pop(pipe_, &slot);
            } else {
              ctapipe::wait_n(pipe_, cta, 1, &tile, &slot);
            }
            return tile;
          },
          [&](int tile) {
            tile_ = tile;
            slot_ = slot;
            if constexpr (Trace) stamp_acquired();
          });
    } else {
      cute::cluster_wait();  // completes the kernel's cluster_arrive_relaxed
      const int rank = cta % kClusterSize, first = cta - rank;
      if (rank == 0 && threadIdx.x == 0) {
        int tiles[kClusterSize], slots[kClusterSize];
        const bool got = pipe_.mode == ctapipe::kModeQueue ? ctapipe::pop_n(pipe_, kClusterSize, tiles, slots)
                                                           : ctapipe::wait_n(pipe_, first, kClusterSize, tiles, slots);
        if (got) {
          const int tn = pipe_.tiles_n;
          bool ok = CN == 2 ? tiles[0] / tn == tiles[1] / tn : tiles[0] % tn == tiles[1] % tn;
          if (!ok) {
            ctapipe::record_error(pipe_, ctapipe::kClusterMismatch, slots[0],
                                  (static_cast<unsigned long long>(tiles[0]) << 32) | static_cast<unsigned>(tiles[1]));
            tiles[0] = tiles[1] = -1;
          }
        }
        for (int i = 0; i < kClusterSize; ++i) {
          reinterpret_cast<volatile int*>(pipe_.cta_tile)[first + i] = tiles[i];
          reinterpret_cast<volatile int*>(pipe_.cta_tile)[pipe_.num_tiles + first + i] = slots[i];
        }
        __threadfence();
      }
      __syncwarp();            // barrier.cluster.*.aligned: the whole warp, converged
      cute::cluster_arrive();  // release; the kernel's cluster_wait acquires before the tile is read
      deferred_ = true;
    }
#endif
  }

  template <class ClusterShape>
  CUTLASS_DEVICE WorkTileInfo initial_work_tile_info(ClusterShape) {
#if defined(__CUDA_ARCH__)
    if (deferred_) {
      const int cta = ctapipe::cta_linear();
      tile_ = reinterpret_cast<volatile int*>(pipe_.cta_tile)[cta];
      // The leader's pop / wait fenced the async proxy for the leader CTA only: each CTA of the cluster fences it
      // again after the cluster barrier, before its own TMA loads (docs/protocol.md: the cluster-partner mutant).
      ctapipe::fence_proxy_async_global();
      if constexpr (Trace) {
        if (threadIdx.x == 0) {
          slot_ = reinterpret_cast<volatile int*>(pipe_.cta_tile)[pipe_.num_tiles + cta];
          stamp_acquired();
        }
      }
      deferred_ = false;
    }
#endif
    if (tile_ < 0) return WorkTileInfo::invalid_work_tile();
    return {tile_ / pipe_.tiles_n, tile_ % pipe_.tiles_n, 0, true};
  }

  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo work) {
#if defined(__CUDA_ARCH__)
    if (work.is_valid() && threadIdx.x >= kThreadsPerWarpGroup) finish_tile(work);
#endif
    return cute::make_tuple(WorkTileInfo::invalid_work_tile(), true);
  }

  template <class Pipeline, class PipelineState>
  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo work, Pipeline&, PipelineState) {
    return fetch_next_work(work);
  }

  CUTLASS_DEVICE bool is_last_tile(WorkTileInfo&, uint32_t = 1) const { return true; }

  template <class FrgTensorC>
  CUTLASS_DEVICE static void fixup(Params const& params, WorkTileInfo const& work, FrgTensorC&, uint32_t, uint32_t) {
#if defined(__CUDA_ARCH__)
    if constexpr (Trace) stamp_mainloop_end(params.pipe.stamps, work, pipe_tile_of(params.pipe));
#endif
  }

 private:
  // Thread 0, once the CTA's tile is known: start, acquire, where, slot.
  CUTLASS_DEVICE void stamp_acquired() {
    if (tile_ < 0) return;
    unsigned long long* s = tile_stamps(pipe_.stamps, tile_);
    s[ctapipe::kStampStart] = t_start_;
    s[ctapipe::kStampAcquire] = ctapipe::now_ns();
    s[ctapipe::kStampWhere] = where_word(static_cast<unsigned>(ctapipe::cta_linear()));
    s[ctapipe::kStampSlot] = static_cast<unsigned long long>(static_cast<long long>(slot_));
  }

  // Consumer warp groups, right after the epilogue issued the tile's TMA stores.
  CUTLASS_DEVICE void finish_tile(WorkTileInfo const& work) { finish_tile_and_signal<Trace>(pipe_, work.M_idx, work.N_idx); }

  ctapipe::Params pipe_;
  int tile_ = -1;
  int slot_ = -1;
  bool deferred_ = false;
  unsigned long long t_start_ = 0;
};

}  // namespace ctahw

namespace cutlass::gemm::kernel::detail {
template <bool Trace, int CM, int CN, class ArchTag, class TileShape, class ClusterShape, uint32_t Stages,
          class ProblemShapeType>
struct TileSchedulerSelector<ctahw::CtaPipeSchedulerTag<Trace, CM, CN>, ArchTag, TileShape, ClusterShape, Stages,
                             ProblemShapeType> {
  using Scheduler = ctahw::CtaPipeScheduler<Trace, CM, CN>;
};
}  // namespace cutlass::gemm::kernel::detail

namespace ctahw::ctapipe_gemm {

using namespace cute;

using ElementA = cutlass::bfloat16_t;
using LayoutA = cutlass::layout::RowMajor;
using ElementB = cutlass::bfloat16_t;
using LayoutB = cutlass::layout::ColumnMajor;
using ElementD = cutlass::bfloat16_t;
using LayoutD = cutlass::layout::RowMajor;
using ElementAccumulator = float;
constexpr int kAlign = 8;

using TileShape = Shape<_128, _256, _64>;

// The fused epilogue ops, by code and name: the one list the library exports (ctahw_ctapipe_epilogue_names) and the
// launcher dispatches on; ctahw.runner checks the names against ctahw.gemm.EPILOGUE_OPS_FUSED at load time.
#define CTAPIPE_EPILOGUE_OPS(X) X(0, none) X(1, gelu) X(2, silu) X(3, relu) X(4, residual)

// Op `Op`'s fusion operation, C element (void: no C operand), name and description. Op 0's Fusion is exactly the
// type the epilogue builder defaults to (LinearCombination<ElementD, ElementCompute = ElementAccumulator,
// ElementC = void, ElementCompute>), so Config<CM, CN, 0> is the kernel built before ops existed.
template <int Op>
struct EpilogueOp;

namespace fusion = cutlass::epilogue::fusion;
namespace act = cutlass::epilogue::thread;

template <>
struct EpilogueOp<0> {
  static constexpr const char* name = "none";
  static constexpr const char* fusion = "LinearCombination,C=void,alpha,beta=0";
  using ElementC = void;
  using Fusion = fusion::LinearCombination<ElementD, ElementAccumulator, void, ElementAccumulator>;
};
// Ops 1-3: no C operand (ElementC = void: the builder drops the C load and its shared memory).
template <template <class> class Act>
using ActivationFusion = fusion::LinCombEltAct<Act, ElementD, ElementAccumulator, void, ElementAccumulator>;
template <>
struct EpilogueOp<1> {
  static constexpr const char* name = "gelu";
  static constexpr const char* fusion = "LinCombEltAct<GELU(erf)>,C=void,alpha=1,beta=0";
  using ElementC = void;
  using Fusion = ActivationFusion<act::GELU>;
};
template <>
struct EpilogueOp<2> {
  static constexpr const char* name = "silu";
  static constexpr const char* fusion = "LinCombEltAct<SiLu>,C=void,alpha=1,beta=0";
  using ElementC = void;
  using Fusion = ActivationFusion<act::SiLu>;
};
template <>
struct EpilogueOp<3> {
  static constexpr const char* name = "relu";
  static constexpr const char* fusion = "LinCombEltAct<ReLu>,C=void,alpha=1,beta=0";
  using ElementC = void;
  using Fusion = ActivationFusion<act::ReLu>;
};
template <>
struct EpilogueOp<4> {
  static constexpr const char* name = "residual";
  static constexpr const char* fusion = "LinearCombination,C=bf16,alpha=1,beta=1";
  using ElementC = cutlass::bfloat16_t;  // row-major M x N, the stride of D
  using Fusion = fusion::LinearCombination<ElementD, ElementAccumulator, ElementC, ElementAccumulator>;
};

constexpr bool same_name(const char* a, const char* b) {
  return *a == *b && (*a == '\0' || same_name(a + 1, b + 1));
}
#define CTAPIPE_CHECK_OP(code, op) \
  static_assert(same_name(EpilogueOp<code>::name, #op), "EpilogueOp<" #code "> is not " #op);
CTAPIPE_EPILOGUE_OPS(CTAPIPE_CHECK_OP)
#undef CTAPIPE_CHECK_OP
// The names are exported by position: the codes must be 0, 1, 2, ... in the order listed.
#define CTAPIPE_OP_CODE(code, op) code,
constexpr int kEpilogueCodes[] = {CTAPIPE_EPILOGUE_OPS(CTAPIPE_OP_CODE)};
#undef CTAPIPE_OP_CODE
constexpr bool codes_in_order(int i = 0) {
  return i == int(sizeof(kEpilogueCodes) / sizeof(int)) || (kEpilogueCodes[i] == i && codes_in_order(i + 1));
}
static_assert(codes_in_order(), "CTAPIPE_EPILOGUE_OPS: codes must be 0, 1, 2, ... in order (names go by position)");
#define CTAPIPE_OP_NAME(code, op) #op ","
constexpr char kEpilogueNames[] = CTAPIPE_EPILOGUE_OPS(CTAPIPE_OP_NAME);
#undef CTAPIPE_OP_NAME

// Calls f(std::integral_constant<int, Code>{}) for the one of `Codes` equal to `op`, or returns -2006 where none is
// (every library's op dispatch: this header's ops, and the chain library's ops after them).
template <int... Codes, class F>
int dispatch_code(std::integer_sequence<int, Codes...>, int op, F&& f) {
  int rc = -2006;
  (void)((op == Codes ? (rc = f(std::integral_constant<int, Codes>{}), true) : false) || ...);
  return rc;
}

// The codes of an op list X-macro, as a sequence: std::integer_sequence<int CTAPIPE_EPILOGUE_OPS(CTAPIPE_OP_SEQ)>.
#define CTAPIPE_OP_SEQ(code, op) , code
using EpilogueCodes = std::integer_sequence<int CTAPIPE_EPILOGUE_OPS(CTAPIPE_OP_SEQ)>;

// Calls f(std::integral_constant<int, Op>{}) for op code `op`, or returns -2006 for an unknown one.
template <class F>
int dispatch_op(int op, F&& f) {
  return dispatch_code(EpilogueCodes{}, op, std::forward<F>(f));
}

// The TMA-store cooperative epilogue of every CTA-pipelined kernel (this header's and the chain kernel's), for a
// cluster shape and an op `Epi` (its ElementC: the C operand or void; its Fusion: a fusion operation or callbacks).
template <class ClusterShape, class Epi>
using EpilogueFor = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator, typename Epi::ElementC,
    LayoutD, kAlign, ElementD, LayoutD, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative,
    typename Epi::Fusion>::CollectiveOp;

template <int CM, int CN, int Op = 0>
struct Config {
  using ClusterShape = Shape<Int<CM>, Int<CN>, _1>;
  using Epi = EpilogueOp<Op>;
  using CollectiveEpilogue = EpilogueFor<ClusterShape, Epi>;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, LayoutA, kAlign, ElementB, LayoutB, kAlign,
      ElementAccumulator, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
  template <bool Trace>
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, CtaPipeSchedulerTag<Trace, CM, CN>>;
  template <bool Trace>
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel<Trace>>;
};
// Op 0 is the builder's default epilogue: the same kernel type as before the op parameter existed.
static_assert(std::is_same_v<
              Config<1, 1, 0>::CollectiveEpilogue,
              typename cutlass::epilogue::collective::CollectiveBuilder<
                  cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, Shape<_1, _1, _1>,
                  cutlass::epilogue::collective::EpilogueTileAuto, ElementAccumulator, ElementAccumulator, void,
                  LayoutD, kAlign, ElementD, LayoutD, kAlign,
                  cutlass::epilogue::TmaWarpSpecializedCooperative>::CollectiveOp>,
              "op 0 must be the builder's default epilogue");


// The descriptor: int64 fields in the order of CTAPIPE_DESC_FIELDS (ctapipe.cuh), pointers as integers.
#define CTAPIPE_COUNT(name, type, init) +1
constexpr int kDescFields = 0 CTAPIPE_DESC_FIELDS(CTAPIPE_COUNT);
#undef CTAPIPE_COUNT
#define CTAPIPE_NAME(name, type, init) #name ","
constexpr char kDescNames[] = CTAPIPE_DESC_FIELDS(CTAPIPE_NAME);
#undef CTAPIPE_NAME

// One int64 descriptor word as a field of type T (pointers from integers).
template <class T>
T desc_field(long long v) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<T>(static_cast<uintptr_t>(v));
  } else {
    return static_cast<T>(v);
  }
}

inline ctapipe::Params from_desc(const long long* f) {
  ctapipe::Params p;
  int i = 0;
#define CTAPIPE_READ(name, type, init) p.name = desc_field<type>(f[i++]);
  CTAPIPE_DESC_FIELDS(CTAPIPE_READ)
#undef CTAPIPE_READ
  return p;
}

// 0 if the descriptor is usable, else -2002. Every spin is bounded and reports through the error buffer, so
// a launch without one, or without a positive timeout, is refused.
inline int check_desc(const ctapipe::Params& p, int trace, int cluster_size) {
  if (p.num_tiles <= 0 || p.tiles_n <= 0 || p.cta_tile == nullptr || p.epoch == 0 || p.error == nullptr ||
      p.timeout_ns <= 0 || p.mode < 0 || p.mode > 2 ||
      p.num_tiles % cluster_size != 0 || (p.mode != 1 && p.order == nullptr) ||
      (p.mode == 1 && (p.in_slots == nullptr || p.in_head == nullptr || p.in_capacity % cluster_size != 0)) ||
      (p.mode == 2 && (p.in_counters == nullptr || p.in_threshold == nullptr || p.in_consumer_dep == nullptr)) ||
      (p.out_counters != nullptr && p.out_slots != nullptr && p.out_tail == nullptr) ||
      (trace && p.stamps == nullptr) ||
      (trace && p.out_counters != nullptr && (p.push_stamps == nullptr || p.zero_stamps == nullptr)))
    return -2002;
  return 0;
}

// D = epilogue(alpha * A @ B + beta * C) with a CTA-pipelined CUTLASS device adapter `Gemm` (the classical variants
// below; the persistent ones of ctapipe_sm90_bf16_persistent.cu): `pipe` goes to its tile scheduler. C (row-major
// M x N, the stride of D) is read only by a Gemm whose epilogue has a C operand; pass nullptr otherwise.
template <class Gemm>
int launch(const void* a, const void* b, const void* c, void* d, int m, int n, int k, float alpha, float beta,
           const ctapipe::Params& pipe, int device, cudaStream_t stream) {
  using K = typename Gemm::GemmKernel;
  static_assert(protocol_roles_match<K>(), "the protocol's signalling thread and barrier do not fit this kernel");
  using PtrC = typename K::CollectiveEpilogue::ElementC const*;  // void const* where there is no C
  cutlass::KernelHardwareInfo hw;
  hw.device_id = device;
  hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(device);
  auto sa = cutlass::make_cute_packed_stride(typename K::StrideA{}, make_shape(m, k, 1));
  auto sb = cutlass::make_cute_packed_stride(typename K::StrideB{}, make_shape(n, k, 1));
  auto sc = cutlass::make_cute_packed_stride(typename K::StrideC{}, make_shape(m, n, 1));
  auto sd = cutlass::make_cute_packed_stride(typename K::StrideD{}, make_shape(m, n, 1));
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k, 1},
                                {static_cast<const ElementA*>(a), sa, static_cast<const ElementB*>(b), sb},
                                {{}, static_cast<PtrC>(c), sc, static_cast<ElementD*>(d), sd},
                                hw};
  args.epilogue.thread.alpha = alpha;
  args.epilogue.thread.beta = beta;
  args.scheduler.pipe = pipe;
  if (Gemm::get_workspace_size(args) != 0) return -2000;
  Gemm gemm;
  return ctahw::launch::can_initialize_run(gemm, args, nullptr, stream);
}

// The plain epilogue (D = alpha * A @ B, no C), as every variant launched it before the epilogue ops.
template <class Gemm>
int launch(const void* a, const void* b, void* d, int m, int n, int k, float alpha, const ctapipe::Params& pipe,
           int device, cudaStream_t stream) {
  return launch<Gemm>(a, b, nullptr, d, m, n, k, alpha, 0.0f, pipe, device, stream);
}

template <int CM, int CN, bool Trace>
int run(const void* a, const void* b, void* d, int m, int n, int k, float alpha, const ctapipe::Params& pipe,
        int device, cudaStream_t stream) {
  return launch<typename Config<CM, CN>::template Gemm<Trace>>(a, b, d, m, n, k, alpha, pipe, device, stream);
}

// Epilogue op `op` (CTAPIPE_EPILOGUE_OPS) fused, alpha = 1; beta = 1 with C for an op that has a C operand (the
// residual), else beta = 0 and c must be nullptr. -2006: unknown op; -2007: C missing, or given to an op without one.
template <int CM, int CN>
int run_epi(int op, bool trace, const void* a, const void* b, const void* c, void* d, int m, int n, int k,
            const ctapipe::Params& pipe, int device, cudaStream_t stream) {
  return dispatch_op(op, [&](auto code) {
    using C = Config<CM, CN, decltype(code)::value>;
    constexpr bool has_c = !std::is_void_v<typename C::Epi::ElementC>;
    if (has_c != (c != nullptr)) return -2007;
    const float beta = has_c ? 1.0f : 0.0f;  // a sourceless (void-C) epilogue requires beta == 0
    return trace ? launch<typename C::template Gemm<true>>(a, b, c, d, m, n, k, 1.0f, beta, pipe, device, stream)
                 : launch<typename C::template Gemm<false>>(a, b, c, d, m, n, k, 1.0f, beta, pipe, device, stream);
  });
}

// Load `Gemm`'s kernel into device `device`'s context now. With lazy loading (the CUDA default since 12.2) a kernel
// is loaded at its first launch, and loading may wait for the kernels running in the context: a consumer launched
// first and spinning on its work-queue would then keep its own producer from being loaded until its bounded wait
// ran out (the CUDA Programming Guide's lazy-loading hazard for kernels that rely on running concurrently). Runners
// load every kernel before the first launch. 0, or -cudaError.
template <class Gemm>
int load(int device) {
  int prev = 0;
  if (cudaError_t e = cudaGetDevice(&prev)) return -int(e);
  if (cudaError_t e = cudaSetDevice(device)) return -int(e);
  cudaFuncAttributes attr;
  cudaError_t e = cudaFuncGetAttributes(&attr, cutlass::device_kernel<typename Gemm::GemmKernel>);
  cudaSetDevice(prev);
  return e == cudaSuccess ? 0 : -int(e);
}

// load() of epilogue op `op`'s kernel (trace on or off), or -2006 for an unknown op.
template <int CM, int CN>
int load_epi(int op, bool trace, int device) {
  return dispatch_op(op, [&](auto code) {
    using C = Config<CM, CN, decltype(code)::value>;
    return trace ? load<typename C::template Gemm<true>>(device) : load<typename C::template Gemm<false>>(device);
  });
}

template <int CM, int CN, int Op = 0>
int describe(char* buf, int len) {
  using C = Config<CM, CN, Op>;
  return snprintf(buf, static_cast<size_t>(len),
                  "cutlass=%d.%d.%d kernel=sm90_tma_ws_cooperative_ctapipe_classical dtype=bf16 layout=TN "
                  "tile=%dx%dx%d cluster=%dx%dx1 stages=%d threads=%d smem_bytes=%d%s%s%s%s",
                  CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, int(size<0>(TileShape{})), int(size<1>(TileShape{})),
                  int(size<2>(TileShape{})), CM, CN, int(C::CollectiveMainloop::DispatchPolicy::Stages),
                  int(C::template Kernel<false>::MaxThreadsPerBlock),
                  int(C::template Kernel<false>::SharedStorageSize), Op ? " epilogue=" : "", Op ? C::Epi::name : "",
                  Op ? " fusion=" : "", Op ? C::Epi::fusion : "");
}

// describe() of op `op`'s kernel, or -2006 for an unknown op.
template <int CM, int CN>
int describe_epi(int op, char* buf, int len) {
  return dispatch_op(op, [&](auto code) { return describe<CM, CN, decltype(code)::value>(buf, len); });
}

inline const char* status_string(int code) {
  if (code == -2000) return "the kernel asked for a workspace";
  if (code == -2002) return "bad ctapipe descriptor";
  if (code == -2003) return "cluster shape not built into this library";
#define CTAPIPE_OP_CODE_NAME(code, op) " " #code "=" #op
  if (code == -2006) return "unknown epilogue op (this library runs" CTAPIPE_EPILOGUE_OPS(CTAPIPE_OP_CODE_NAME) ")";
#undef CTAPIPE_OP_CODE_NAME
  if (code == -2007) return "the residual op needs its C operand, and an op without one takes none (c must be NULL)";
  if (code == -2005)
    return "K too small for the persistent ring design's hand-off ring: the load warp could overwrite a tile the "
           "MMA threads have not read (a queue-fed ring kernel needs ring_depth x ceil(K / tile K) > stages; "
           "ctahw_ctapipe_describe gives both)";
  return ctahw::launch::status_string(code);
}

}  // namespace ctahw::ctapipe_gemm

// The exports every CTA-pipelining library shares (besides its own describe and gemm launchers), compiled into the
// translation units that define CTAHW_CTAPIPE_LIBRARY before including this header. ABI 4: the descriptor's field
// names exported (ctahw_ctapipe_desc_names). ABI 5: the classical libraries export the fused-epilogue launcher
// ctahw_ctapipe_gemm_epi with ctahw_ctapipe_describe_epi and ctahw_ctapipe_epilogue_names (CTAHW_CTAPIPE_EPILOGUE
// below; the persistent library does not run epilogue ops); status codes -2006 and -2007.
#ifdef CTAHW_CTAPIPE_LIBRARY
extern "C" {

int ctahw_ctapipe_abi_version() { return 5; }
int ctahw_ctapipe_desc_fields() { return ctahw::ctapipe_gemm::kDescFields; }
const char* ctahw_ctapipe_desc_names() { return ctahw::ctapipe_gemm::kDescNames; }
int ctahw_ctapipe_tile_stamp_words() { return ctapipe::kTileStampWords; }
const char* ctahw_ctapipe_status_string(int code) { return ctahw::ctapipe_gemm::status_string(code); }

}  // extern "C"
#endif

// The fused-epilogue op list of the classical libraries (ABI 5), compiled into the translation units that define
// CTAHW_CTAPIPE_EPILOGUE_LIBRARY (ctapipe_sm90_bf16.cu, ctapipe_sm90_bf16_cluster.cu; each writes its own
// ctahw_ctapipe_gemm_epi and ctahw_ctapipe_describe_epi for its cluster codes with run_epi and describe_epi).
#ifdef CTAHW_CTAPIPE_EPILOGUE_LIBRARY
extern "C" {

// The op names by code ("none,gelu,silu,relu,residual,"): ctahw.runner checks them against
// ctahw.gemm.EPILOGUE_OPS_FUSED when it loads the library.
const char* ctahw_ctapipe_epilogue_names() { return ctahw::ctapipe_gemm::kEpilogueNames; }

}  // extern "C"
#endif
