// ctahw: CTA-pipelined CUTLASS 4.2 SM90 bf16 GEMM, variant (b) "persistent": CUTLASS's warp-specialized
// cooperative kernel on a persistent grid (at most one CTA per SM), its dynamic-persistent path driven by a
// project tile scheduler. Mainloop and epilogue are CUTLASS's, untouched; kernel tile 128x256x64 as variant (a).
//
// How the tiles reach the warp roles (sm90_gemm_tma_warpspecialized_cooperative.hpp, IsSchedDynamicPersistent):
//   * the CTA's first tile: the scheduler's constructor (every thread) -- every thread reads a static order's
//     entry; a pop: thread 0 takes it, writes it to a global scratch word, __syncthreads, every thread reads it
//     (ctapipe::acquire_broadcast, as variant (a));
//   * every further tile (ctapipe_gemm.cuh's SchedulerWarp adapter, shared with the chain kernel; this scheduler
//     gives it take_next, finish_tile and fetched): the kernel's scheduler warp (producer warp 1) calls
//     advance_to_next_work once the mainloop load warp has started the current tile (the kernel's throttle
//     pipeline): the next tile -- order[cta + k * grid] (static: every lane advances its position) or a pop from
//     the inbound work-queue (the elected lane) -- is published by the elected lane into a
//     2-stage shared-memory pipeline (PipelineAsync: one producer arrival, 320 consumer arrivals); the load
//     warp, the scheduler warp and the 256 MMA/epilogue threads read it in fetch_next_work. So the next tile's
//     pop (which may wait on the other GPU) and its TMA loads overlap the current tile's MMA and epilogue.
//   * queue exhaustion: the pop (ctapipe::claim_pop) claims a head reservation with a bounded compare-and-swap (never past
//     epoch * capacity, so the head stays exactly epoch * capacity for the next run); a CTA that finds the
//     queue exhausted publishes an invalid tile and every role leaves its loop.
//   * producer side: fetch_next_work in the MMA/epilogue threads runs right after the tile's TMA stores were
//     issued: each thread waits for its bulk-async groups to complete (cp.async.bulk.wait_group 0), the 256
//     meet at a named barrier, and one thread signals / pushes exactly as variant (a) (ctapipe::signal).
//   * clusters: 1x1 only. With 2x1 this design hung on the GPU (2026-11-29: 254 of 256 producer tiles done):
//     the cooperative kernel sets the throttle pipeline's dst_blockid = 0, so both CTAs' scheduler warps release
//     the leader CTA's throttle and the partner's is never released -- the SM100 CLC design has only the leader
//     query and multicast the response. A cluster version would need that (leader pops both tiles, writes them
//     to both CTAs' shared memory, remote mbarrier arrives): not built; the launcher refuses it (-2003).
//   * an earlier build of this design (descriptor copied into the scheduler object, no __syncwarp before
//     elect.sync) hung with cluster 1x1 too; with the descriptor read through the __grid_constant__ parameters
//     (the producer warp group runs on 40 registers after setmaxnreg) and the __syncwarp it runs correctly.
// The ring design below (CUTLASS's static-persistent path) runs clusters 1x1 and 2x1 (static order).
// Every wait outside the CTA is bounded (ctapipe.cuh); a timed-out pop records an error and ends the CTA's work.

#define CTAHW_CTAPIPE_LIBRARY  // the shared extern "C" exports of ctapipe_gemm.cuh
#include "ctapipe_gemm.cuh"

namespace ctahw {

// What both persistent designs below keep per CTA and do per tile: the descriptor, the grid, the CTA, a static
// order's position and the CTA's first tile; tile ids as CUTLASS work tiles; the trace stamps of a tile taken and
// of its compute start.
class PipeTiles {
 protected:
  using WorkTileInfo = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90::WorkTileInfo;

  CUTLASS_DEVICE PipeTiles(ctapipe::Params const* pp, int grid) : pp_(pp), grid_(grid) {}

  // The kernel's parameters are __grid_constant__: a pointer to them costs two registers where a copy of the
  // descriptor would cost ~40, and the producer warp group runs on 40 registers (setmaxnreg).
  CUTLASS_DEVICE ctapipe::Params const& pipe() const { return *pp_; }

  CUTLASS_DEVICE WorkTileInfo to_work(int tile) const {
    if (tile < 0) return WorkTileInfo::invalid_work_tile();
    return {tile / pipe().tiles_n, tile % pipe().tiles_n, 0, true};
  }

  // Static order: the CTA's k-th tile is order[cta + k * grid] (a cluster's CTAs take a pair at each step).
  CUTLASS_DEVICE void take_static(int* tile) {
    *tile = (next_ >= 0 && next_ < pipe().num_tiles) ? pipe().order[next_] : -1;
    next_ += grid_;
  }

  // The thread that took the tile: kStampStart = the tile id known and its inputs visible (the pop returned).
  // kStampAcquire (stamp_compute_start) is the time the MMA warp groups begin it.
  CUTLASS_DEVICE void stamp_taken(int tile, int slot) {
    if (tile < 0) return;
    unsigned long long* s = tile_stamps(pipe().stamps, tile);
    s[ctapipe::kStampStart] = ctapipe::now_ns();
    s[ctapipe::kStampWhere] = where_word(static_cast<unsigned>(cta_));
    s[ctapipe::kStampSlot] = static_cast<unsigned long long>(static_cast<long long>(slot));
  }

  // The first MMA thread, when the MMA warp groups take the tile (after the previous tile's signal).
  CUTLASS_DEVICE void stamp_compute_start(int tile) { ctahw::stamp_compute_start(pipe().stamps, tile); }

  ctapipe::Params const* pp_ = nullptr;
  int grid_ = 0;
  int cta_ = 0;
  int next_ = 0;
  int tile_ = -1;
};

template <bool Trace, int CM, int CN>
struct CtaPipePersistentTag {};

template <bool Trace, int CM, int CN>
class CtaPipePersistentScheduler : public SchedulerWarp<CtaPipePersistentScheduler<Trace, CM, CN>>, PipeTiles {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;
  using Adapter = SchedulerWarp<CtaPipePersistentScheduler<Trace, CM, CN>>;
  friend Adapter;
  static constexpr int kClusterSize = CM * CN;
  static_assert((CM == 1 && CN == 1) || (CM == 2 && CN == 1), "clusters 1x1, 2x1");

 public:
  using WorkTileInfo = typename Base::WorkTileInfo;
  struct Arguments : Base::Arguments {
    ctapipe::Params pipe{};
  };
  struct Params : Base::Params {
    ctapipe::Params pipe{};
    int grid = 0;
  };

  template <class ProblemShapeMNKL, class TileShape, class ClusterShape>
  static Params to_underlying_arguments(ProblemShapeMNKL problem_shape_mnkl, TileShape tile_shape,
                                        ClusterShape cluster_shape, cutlass::KernelHardwareInfo const& hw_info,
                                        Arguments const& args, void* workspace = nullptr,
                                        const uint32_t epilogue_subtile = 1, uint32_t ktile_align = 1u) {
    Params p = base_scheduler_params<Params>(problem_shape_mnkl, tile_shape, cluster_shape, hw_info, args, workspace,
                                             epilogue_subtile, ktile_align);
    p.pipe = args.pipe;
    int sms = hw_info.sm_count > 0 ? hw_info.sm_count : 132;
    int g = args.pipe.num_tiles < sms ? args.pipe.num_tiles : sms;
    p.grid = (g / kClusterSize) * kClusterSize;
    return p;
  }

  CUTLASS_HOST_DEVICE static bool can_implement(Arguments const& args) {
    return args.pipe.num_tiles > 0 && args.pipe.num_tiles % kClusterSize == 0;
  }

  template <class ProblemShapeMNKL, class BlockShape, class ClusterShape>
  CUTLASS_HOST_DEVICE static dim3 get_grid_shape(Params const& params, ProblemShapeMNKL, BlockShape, ClusterShape,
                                                 cutlass::KernelHardwareInfo, Arguments = Arguments{},
                                                 bool = true) {
    return dim3(static_cast<unsigned>(params.grid), 1, 1);
  }

  CUTLASS_DEVICE explicit CtaPipePersistentScheduler(Params const& params)
      : Adapter(params), PipeTiles(&params.pipe, params.grid) {
#if defined(__CUDA_ARCH__)
    cta_ = ctapipe::cta_linear();
    if (pipe().mode == 0) {
      next_ = cta_;
      int tile = -1, slot = -1;
      take_static(&tile);
      tile_ = tile;
      if constexpr (Trace) {
        if (threadIdx.x == 0) stamp_taken(tile, slot);
      }
    } else if constexpr (kClusterSize == 1) {
      int slot = -1;
      tile_ = ctapipe::acquire_broadcast(
          pipe().cta_tile + cta_,
          [&] {
            int tile = -1;
            ctapipe::claim_pop(pipe(), &tile, &slot);
            return tile;
          },
          [&](int tile) {
            if constexpr (Trace) stamp_taken(tile, slot);
          });
    } else {
      tile_ = -1;  // the launcher refuses a queue with clusters; nothing runs
    }
#endif
  }

  template <class ClusterShape>
  CUTLASS_DEVICE WorkTileInfo initial_work_tile_info(ClusterShape) {
    if constexpr (Trace) stamp_compute_start(tile_);
    return to_work(tile_);
  }

  template <class FrgTensorC>
  CUTLASS_DEVICE static void fixup(Params const& params, WorkTileInfo const& work, FrgTensorC&, uint32_t, uint32_t) {
#if defined(__CUDA_ARCH__)
    if constexpr (Trace) stamp_mainloop_end(params.pipe.stamps, work, pipe_tile_of(params.pipe));
#endif
  }

 private:
  // SchedulerWarp's tile source (scheduler warp): a static order advances on every lane (each keeps its own
  // position), a queue is popped by the elected lane.
  CUTLASS_DEVICE int take_next(bool elected) {
    int tile = -1, slot = -1;
    if (pipe().mode == 0) take_static(&tile);
    if (!elected) return tile;
    if constexpr (kClusterSize == 1) {
      if (pipe().mode != 0) ctapipe::claim_pop(pipe(), &tile, &slot);
    }
    if constexpr (Trace) stamp_taken(tile, slot);
    return tile;
  }

  // Every role, once the next tile is read.
  CUTLASS_DEVICE void fetched(int tile) {
    if constexpr (Trace) stamp_compute_start(tile);
  }

  // MMA/epilogue threads, right after the epilogue issued the tile's TMA stores (as variant (a)).
  CUTLASS_DEVICE void finish_tile(WorkTileInfo const& work) { ctahw::finish_tile_and_signal<Trace>(pipe(), work.M_idx, work.N_idx); }
};


// Second design, for comparison and as a fallback: CUTLASS's static-persistent code path (no scheduler warp, no
// shared-memory pipeline: IsDynamicPersistent = false). Every role calls fetch_next_work once per tile. A static
// order needs no broadcast (each thread computes order[cta + k * grid]); a queue pop is done by lane 0 of the
// mainloop load warp when it has issued the current tile's loads, published in a per-CTA ring of two u64 words
// in global memory ((epoch << 44 | k << 32) | tile, one store), which the MMA/epilogue threads poll (bounded).
// The ring lives after the 2 * num_tiles words of cta_tile (the runner allocates RING_WORDS more).
//
// Its depth: tile k's entry is ring[k % kRingDepth]. The load warp writes the entry of tile k + kRingDepth over tile
// k's once it has issued every load of tiles k .. k + kRingDepth - 1, and the MMA threads release none of tile k's
// mainloop stages before they have read its entry. So an entry cannot be overwritten unread only where those tiles
// need more loads than the mainloop has stages: kRingDepth * ceil(K / tile K) > Stages. Below that (a small K) the
// MMA threads would wait for an entry that is gone, time out, and leave the load warp blocked in CUTLASS's unbounded
// pipeline wait. The launcher refuses such a K for a queue-fed ring kernel (check_ring_depth: -2005); a static order
// does not use the ring.
constexpr int kRingDepth = 2;
static_assert(kRingDepth > 0 && (kRingDepth & (kRingDepth - 1)) == 0, "the entry index is k & (kRingDepth - 1)");
constexpr int kRingWordsPerCta = kRingDepth;  // one u64 word per entry

template <bool Trace, int CM, int CN>
struct CtaPipeRingTag {};

template <bool Trace, int CM, int CN>
class CtaPipeRingScheduler : public cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90, PipeTiles {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;
  static constexpr int kClusterSize = CM * CN;

 public:
  using WorkTileInfo = typename Base::WorkTileInfo;
  using Arguments = typename CtaPipePersistentScheduler<Trace, CM, CN>::Arguments;
  using Params = typename CtaPipePersistentScheduler<Trace, CM, CN>::Params;

  template <class ProblemShapeMNKL, class TileShape, class ClusterShape>
  static Params to_underlying_arguments(ProblemShapeMNKL problem_shape_mnkl, TileShape tile_shape,
                                        ClusterShape cluster_shape, cutlass::KernelHardwareInfo const& hw_info,
                                        Arguments const& args, void* workspace = nullptr,
                                        const uint32_t epilogue_subtile = 1, uint32_t ktile_align = 1u) {
    return CtaPipePersistentScheduler<Trace, CM, CN>::to_underlying_arguments(
        problem_shape_mnkl, tile_shape, cluster_shape, hw_info, args, workspace, epilogue_subtile, ktile_align);
  }
  CUTLASS_HOST_DEVICE static bool can_implement(Arguments const& args) {
    return CtaPipePersistentScheduler<Trace, CM, CN>::can_implement(args);
  }
  template <class ProblemShapeMNKL, class BlockShape, class ClusterShape>
  CUTLASS_HOST_DEVICE static dim3 get_grid_shape(Params const& params, ProblemShapeMNKL, BlockShape, ClusterShape,
                                                 cutlass::KernelHardwareInfo, Arguments = Arguments{},
                                                 bool = true) {
    return dim3(static_cast<unsigned>(params.grid), 1, 1);
  }

  CUTLASS_DEVICE explicit CtaPipeRingScheduler(Params const& params)
      : Base(params), PipeTiles(&params.pipe, params.grid) {
#if defined(__CUDA_ARCH__)
    cta_ = ctapipe::cta_linear();
    next_ = cta_;
    if (pipe().mode == 0) {
      take_static(&tile_);
      if constexpr (Trace) {
        if (threadIdx.x == 0) stamp_taken(tile_, -1);
      }
    } else if constexpr (kClusterSize == 1) {
      int slot = -1;
      tile_ = ctapipe::acquire_broadcast(
          pipe().cta_tile + cta_,
          [&] {
            int tile = -1;
            ctapipe::claim_pop(pipe(), &tile, &slot);
            return tile;
          },
          [&](int tile) {
            if constexpr (Trace) stamp_taken(tile, slot);
          });
    } else {
      tile_ = -1;
    }
#endif
  }

  template <class ClusterShape>
  CUTLASS_DEVICE WorkTileInfo initial_work_tile_info(ClusterShape) {
    if constexpr (Trace) stamp_compute_start(tile_);
    return to_work(tile_);
  }

  template <class TileSchedulerPipeline, class TileSchedulerPipelineState>
  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo work, TileSchedulerPipeline&, TileSchedulerPipelineState) {
    int tile = -1;
#if defined(__CUDA_ARCH__)
    if (work.is_valid()) {
      ++k_;
      if (threadIdx.x >= kThreadsPerWarpGroup) finish_tile(work);
      if (pipe().mode == 0) {
        take_static(&tile);
        if constexpr (Trace) {
          if (threadIdx.x == 0) stamp_taken(tile, -1);
        }
      } else if constexpr (kClusterSize == 1) {
        unsigned long long* ring = reinterpret_cast<unsigned long long*>(pipe().cta_tile + 2 * pipe().num_tiles) +
                                   static_cast<size_t>(cta_) * kRingWordsPerCta + (k_ & (kRingDepth - 1));
        const unsigned long long tag = (static_cast<unsigned long long>(pipe().epoch) << 44) |
                                       (static_cast<unsigned long long>(k_ & 0xfff) << 32);
        if (threadIdx.x < 32) {  // the mainloop load warp
          if (threadIdx.x == 0) {
            int slot = -1;
            ctapipe::claim_pop(pipe(), &tile, &slot);
            if constexpr (Trace) stamp_taken(tile, slot);
            *reinterpret_cast<volatile unsigned long long*>(ring) = tag | static_cast<unsigned>(tile);
          }
          tile = __shfl_sync(0xffffffffu, tile, 0);
        } else {  // MMA/epilogue threads: bounded poll (the load warp always publishes, its pop is bounded)
          const unsigned long long deadline =
              ctapipe::now_ns() + 2ull * static_cast<unsigned long long>(pipe().timeout_ns) + 1000000000ull;
          unsigned long long w;
          for (;;) {
            w = *reinterpret_cast<volatile unsigned long long*>(ring);
            if ((w & ~0xffffffffull) == tag) break;
            if (ctapipe::now_ns() > deadline) {
              if (threadIdx.x == kThreadsPerWarpGroup)
                ctapipe::record_error(pipe(), ctapipe::kPopTimeout, -1 - cta_, w);
              w = tag | 0xffffffffull;
              break;
            }
            __nanosleep(64);
          }
          tile = static_cast<int>(static_cast<unsigned>(w & 0xffffffffull));
        }
      }
      if constexpr (Trace) stamp_compute_start(tile);
    }
#endif
    return cute::make_tuple(to_work(tile), true);
  }

  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo) {
    return cute::make_tuple(WorkTileInfo::invalid_work_tile(), true);
  }

  CUTLASS_DEVICE bool is_last_tile(WorkTileInfo&, uint32_t = 1) const { return false; }

  template <class FrgTensorC>
  CUTLASS_DEVICE static void fixup(Params const& params, WorkTileInfo const& work, FrgTensorC& a, uint32_t x,
                                   uint32_t y) {
    CtaPipePersistentScheduler<Trace, CM, CN>::fixup(params, work, a, x, y);
  }

 private:
  CUTLASS_DEVICE void finish_tile(WorkTileInfo const& work) { ctahw::finish_tile_and_signal<Trace>(pipe(), work.M_idx, work.N_idx); }

  int k_ = 0;
};

}  // namespace ctahw

namespace cutlass::gemm::kernel::detail {
template <bool Trace, int CM, int CN, class ArchTag, class TileShape, class ClusterShape, uint32_t Stages,
          class ProblemShapeType>
struct TileSchedulerSelector<ctahw::CtaPipeRingTag<Trace, CM, CN>, ArchTag, TileShape, ClusterShape, Stages,
                             ProblemShapeType> {
  using Scheduler = ctahw::CtaPipeRingScheduler<Trace, CM, CN>;
};

template <bool Trace, int CM, int CN, class ArchTag, class TileShape, class ClusterShape, uint32_t Stages,
          class ProblemShapeType>
struct TileSchedulerSelector<ctahw::CtaPipePersistentTag<Trace, CM, CN>, ArchTag, TileShape, ClusterShape, Stages,
                             ProblemShapeType> {
  using Scheduler = ctahw::CtaPipePersistentScheduler<Trace, CM, CN>;
};
}  // namespace cutlass::gemm::kernel::detail

namespace ctahw::ctapipe_persistent {

using namespace cute;
namespace cg = ctahw::ctapipe_gemm;

template <int CM, int CN, bool Ring = false>
struct Config {
  using ClusterShape = Shape<Int<CM>, Int<CN>, _1>;
  using CollectiveEpilogue = typename cg::Config<CM, CN>::CollectiveEpilogue;
  using SchedStorage = typename CtaPipePersistentScheduler<false, CM, CN>::SharedStorage;
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cg::ElementA, cg::LayoutA, cg::kAlign, cg::ElementB,
      cg::LayoutB, cg::kAlign, cg::ElementAccumulator, cg::TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage) + sizeof(SchedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
  template <bool Trace>
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue,
                                                      cute::conditional_t<Ring, CtaPipeRingTag<Trace, CM, CN>,
                                                                          CtaPipePersistentTag<Trace, CM, CN>>>;
  template <bool Trace>
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel<Trace>>;
};

template <int CM, int CN, bool Trace, bool Ring>
int run(const void* a, const void* b, void* d, int m, int n, int k, float alpha, const ctapipe::Params& pipe,
        int device, cudaStream_t stream) {
  return cg::launch<typename Config<CM, CN, Ring>::template Gemm<Trace>>(a, b, d, m, n, k, alpha, pipe, device, stream);
}

template <int CM, int CN, bool Ring>
int describe(char* buf, int len) {
  using C = Config<CM, CN, Ring>;
  return snprintf(buf, static_cast<size_t>(len),
                  "cutlass=%d.%d.%d kernel=sm90_tma_ws_cooperative_ctapipe_persistent_%s dtype=bf16 layout=TN "
                  "tile=%dx%dx%d cluster=%dx%dx1 stages=%d sched_stages=%d ring_depth=%d threads=%d smem_bytes=%d",
                  CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, Ring ? "ring" : "smem",
                  int(size<0>(cg::TileShape{})),
                  int(size<1>(cg::TileShape{})), int(size<2>(cg::TileShape{})), CM, CN,
                  int(C::CollectiveMainloop::DispatchPolicy::Stages), Ring ? 0 : kSchedStages, Ring ? kRingDepth : 0,
                  int(C::template Kernel<false>::MaxThreadsPerBlock),
                  int(C::template Kernel<false>::SharedStorageSize));
}

// 0 if the ring design's hand-off ring is deep enough for a queue-fed kernel with this K (the note at kRingDepth),
// else -2005. Host only: no CUDA call, so a launch refused here touches no GPU.
inline int check_ring_depth(int k) {
  constexpr int kTileK = int(size<2>(cg::TileShape{}));
  constexpr int kStages = int(Config<1, 1, true>::CollectiveMainloop::DispatchPolicy::Stages);
  static_assert(kStages == int(Config<2, 1, true>::CollectiveMainloop::DispatchPolicy::Stages),
                "one depth rule for every ring kernel");
  const long long k_tiles = k > 0 ? (static_cast<long long>(k) + kTileK - 1) / kTileK : 0;
  return kRingDepth * k_tiles > kStages ? 0 : -2005;
}

}  // namespace ctahw::ctapipe_persistent

namespace cg = ctahw::ctapipe_gemm;
namespace cp = ctahw::ctapipe_persistent;

extern "C" {


// cluster: 0 = 1x1 (scheduler warp + shared-memory pipeline); kRingCode (4) + 0 / 1 = 1x1 / 2x1 (static order
// only) with the ring design (CUTLASS's static-persistent path). Others (1x2; 2x1 with the smem design): -2003.
constexpr int kRingCode = 4;
int ctahw_ctapipe_describe(int cluster, char* buf, int len) {
  switch (cluster) {
    case 0: return cp::describe<1, 1, false>(buf, len);
    case kRingCode + 0: return cp::describe<1, 1, true>(buf, len);
    case kRingCode + 1: return cp::describe<2, 1, true>(buf, len);
    default: return -2003;
  }
}

// Load the kernel of cluster code `cluster`, trace on or off, into `device`'s context before any launch (ctapipe_gemm.cuh's
// load(): with lazy loading, a first launch beside a spinning consumer on the same GPU could wait for it). Op: 0 only
// (this library fuses no epilogue op; -2006 otherwise). 0, -2003, -2006 or -cudaError.
int ctahw_ctapipe_load(int op, int cluster, int trace, int device) {
  if (op != 0) return -2006;
  switch (cluster) {
    case 0: return trace ? cg::load<cp::Config<1, 1, false>::Gemm<true>>(device)
                         : cg::load<cp::Config<1, 1, false>::Gemm<false>>(device);
    case kRingCode + 0: return trace ? cg::load<cp::Config<1, 1, true>::Gemm<true>>(device)
                                     : cg::load<cp::Config<1, 1, true>::Gemm<false>>(device);
    case kRingCode + 1: return trace ? cg::load<cp::Config<2, 1, true>::Gemm<true>>(device)
                                     : cg::load<cp::Config<2, 1, true>::Gemm<false>>(device);
    default: return -2003;
  }
}

int ctahw_ctapipe_ring_words(int grid) { return grid * ctahw::kRingWordsPerCta * 2; }

// The launcher's ring-depth check for a cluster code, mode and K: 0 where the kernel does not use the ring (the smem
// design, a static order) or the ring is deep enough, else -2005 (cp::check_ring_depth).
int ctahw_ctapipe_ring_check(int cluster, int mode, int k) {
  return cluster >= kRingCode && mode == ctapipe::kModeQueue ? cp::check_ring_depth(k) : 0;
}

int ctahw_ctapipe_gemm(const void* a, const void* b, void* d, int m, int n, int k, float alpha, const long long* desc,
                       int ndesc, int trace, int cluster, int device, cudaStream_t stream) {
  if (ndesc != cg::kDescFields) return -2002;
  const bool ring = cluster >= kRingCode;
  const int shape = ring ? cluster - kRingCode : cluster;
  if (shape != 0 && shape != 1) return -2003;
  ctapipe::Params p = cg::from_desc(desc);
  const int cs = shape == 1 ? 2 : 1;
  if (int c = cg::check_desc(p, trace, cs)) return c;
  if (shape == 1 && p.mode != 0) return -2003;  // a queue needs cluster 1x1 in the persistent kernel
  if (p.mode == ctapipe::kModeWait) return -2003;  // wait consumers: variant (a) only
  if (int c = ctahw_ctapipe_ring_check(cluster, p.mode, k)) return c;  // a queue-fed ring too shallow for K
  if (ring) {
    if (shape == 1)
      return trace ? cp::run<2, 1, true, true>(a, b, d, m, n, k, alpha, p, device, stream)
                   : cp::run<2, 1, false, true>(a, b, d, m, n, k, alpha, p, device, stream);
    return trace ? cp::run<1, 1, true, true>(a, b, d, m, n, k, alpha, p, device, stream)
                 : cp::run<1, 1, false, true>(a, b, d, m, n, k, alpha, p, device, stream);
  }
  if (shape == 1) return -2003;  // smem design with clusters: see the note at the top (it hung on the GPU)
  return trace ? cp::run<1, 1, true, false>(a, b, d, m, n, k, alpha, p, device, stream)
               : cp::run<1, 1, false, false>(a, b, d, m, n, k, alpha, p, device, stream);
}


}  // extern "C"
