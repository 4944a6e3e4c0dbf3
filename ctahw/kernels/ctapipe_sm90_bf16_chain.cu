// ctahw: the chain kernel -- intra-GPU CTA-pipelining of a chain of equal-shaped layers in ONE persistent
// CUTLASS 4.2 SM90 bf16 kernel (the layers of a square H x H chain on one GPU).
//
// What it computes: X[l+1] = X[l] @ W[l]^T for the kernel's local layers j = 0 .. L-1, X[l] of M x H, W[l] of
// H x H (row-major bf16, fp32 accumulation). The layers are the batch mode of one CUTLASS GEMM: A = X (batch
// stride M*H), D = `d` (the same stride), B = W (batch stride H*H), so local layer j reads X[j] and writes
// d[j], and one kernel holds the TMA descriptors of every layer. Mainloop, epilogue and the warp-specialized
// cooperative kernel are CUTLASS's, untouched (tile 128x256x64, cluster 1x1); the project's tile scheduler
// decides which tile each CTA runs.
//
// Shapes and ops (ABI 4, 5): a kernel's layers are M x N x K (several layers: N == K, one batch stride); the layer
// before may have another column count (`wait_tiles`: its column tiles, what a row-block's counter reaches). The
// tickets design also fuses one epilogue op (ctapipe_gemm.cuh's CTAPIPE_EPILOGUE_OPS, the fusion operations of
// variant (a): gelu, silu, relu, or the residual D = acc + C for a one-layer kernel), so a ring of one layer per GPU
// runs the MLP block's GEMMs (GeLU after the first, the residual after the second); and (ABI 5) the LayerNorm fold's
// two ops, residual_stats and lnfold_gelu (CTAHW_CHAIN_NORM_OPS below), between two one-layer kernels of a ring.
//
// Placement (ABI 3): the kernel runs the global layers first_layer + j * layer_stride. On one GPU (stride 1)
// d = X + M*H and `signals` = `counters` + tiles_m: layer j writes X[j+1] and signals the counter its successor
// waits on. On a ring of G GPUs (layer l on GPU l mod G, one kernel per GPU) d and `signals` are the next GPU's
// input slots and counters (from slot 1 on the GPU that wraps around to GPU 0): every tile's output is stored
// into the next GPU's memory and its row-block signalled there, at system scope (sys_scope = 1); the waits
// read this GPU's own counters. The host wires it (ctahw.chain.ring_layout).
//
// The protocol (GPU scope on one GPU; system scope on a ring):
//   * tickets: the persistent CTAs take tiles in the order of `order` (a topological order of the chain's
//     tiles, ids g = l * tiles_m * tiles_n + m * tiles_n + n) by an atomic ticket counter. Each CTA takes
//     exactly one ticket past the end (then it leaves), so a run consumes num_tiles + grid tickets and epoch e
//     owns the tickets [(e-1) * (num_tiles + grid), e * (num_tiles + grid)): nothing is reset between runs.
//   * waits: a tile of local layer j whose global layer is > 0, row-block m, needs the whole row-block m of X[j]
//     (K = H: every column tile of the layer before's row m). The thread that took the ticket spins (bounded,
//     ld.acquire at the kernel's scope) on counters[j * tiles_m + m] until it reaches epoch * tiles_n, then
//     fence.proxy.async.global; the load
//     warp runs fence.proxy.async.global again after the tile reached it through the shared-memory pipeline,
//     before its TMA loads.
//   * signals: after the epilogue issued a tile's TMA stores, every storing thread waits for them to complete
//     (cp.async.bulk.wait_group 0) and fences the async proxy, the 256 MMA/epilogue threads meet at a named
//     barrier, and one thread adds 1 to signals[j * tiles_m + m] with red.release at the kernel's scope.
//   * protocol = 0 turns waits and signals off (the same kernel as a plain batched GEMM: the overhead baseline;
//     a chain run so is not correct).
//
// Deadlock freedom (the scheduling rule): a CTA takes its next ticket only while it runs a tile whose
// dependencies are met, tickets are taken in `order`, and every dependency of order[k] lies before k. The
// smallest ticket not yet finished then has all its dependencies finished and is held by a running CTA (it was
// taken, and its holder's earlier tiles are finished), so it finishes: the run always progresses, whatever the
// number of CTAs resident. On a ring every GPU takes its tickets in the restriction of ONE topological order of
// the whole chain: the smallest unfinished tile of that order is then held by a running CTA of its GPU (every
// earlier tile of its GPU is finished), so the argument holds across GPUs. (A CTA holds at most two tickets: the tile it computes and the next one, taken by
// the scheduler warp once the load warp started the current tile; the current tile never waits on the next.)
//
// How the tiles reach the warp roles is variant (b)'s scheduler-warp design, one adapter for both kernels
// (ctapipe_gemm.cuh's SchedulerWarp; this scheduler is its tile source, `take_next`, and sink, `finish_tile`):
// first tile in the scheduler's constructor (thread 0, broadcast through a global word), every further tile by
// the scheduler warp into a 2-stage shared-memory pipeline. Every spin is bounded by timeout_ns: on a timeout
// the CTA records an error and leaves; the host raises.
//
// The descriptor the host fills is the int64 list CTAHW_CHAIN_FIELDS below; ctahw_chain_desc_names() gives its
// names, which ctahw/chain.py checks against its own list when the library loads.

#include <type_traits>

#include "ctapipe_gemm.cuh"

namespace ctahw::chain {

// name, C++ type: the descriptor's fields in order (ctahw.chain.DESC_FIELDS must list the same names).
#define CTAHW_CHAIN_FIELDS(X)                                                                                    \
  X(order, const int*)             /* [num_tiles] the ticket order: tile ids, a topological order */            \
  X(num_tiles, int)                /* tiles of all layers */                                                    \
  X(tiles_m, int)                                                                                               \
  X(tiles_n, int)                                                                                               \
  X(layers, int)                                                                                                \
  X(grid, int)                     /* persistent CTAs launched (<= the SM count) */                             \
  X(ticket, unsigned*)             /* u32, monotonic over epochs */                                             \
  X(counters, unsigned*)           /* [layers * tiles_m] u32, monotonic: row-block m of X[j] complete (waits) */ \
  X(signals, unsigned*)            /* [layers * tiles_m] u32: where layer j's row-block m is signalled */        \
  X(first_layer, int)              /* the global layer of local layer 0 */                                      \
  X(layer_stride, int)             /* global layer of local j = first_layer + j * layer_stride */               \
  X(wait_tiles, int)               /* column tiles of the layer before: a row-block of it is complete at this */ \
  X(sys_scope, int)                /* 1: acquire/release at system scope (a ring); 0: GPU scope */              \
  X(protocol, int)                 /* 1: waits and signals; 0: none (overhead baseline) */                      \
  X(epoch, unsigned)                                                                                            \
  X(timeout_ns, long long)                                                                                      \
  X(error, int*)                   /* [8] int32 error record (ctapipe.cuh) */                                   \
  X(stamps, unsigned long long*)   /* [num_tiles][kTileStampWords] when tracing */                              \
  X(stall_row, int)                /* debug: local layer 0's tiles of this row-block never signal */            \
  X(cta_tile, int*)                /* [grid] scratch: each CTA's first tile */ \
  X(stats_out, float*)             /* [2][M] f32: where the op residual_stats adds its rows' sum, sum of squares */ \
  X(stats_in, const float*)        /* [2][M] f32: the row statistics the op lnfold_gelu reads (this epoch's) */ \
  X(stats_clear, float*)           /* [2][M] f32: the other epoch's, zeroed by lnfold_gelu's column-0 tiles */ \
  X(fold_c1, const float*)         /* [N] f32: W' 1, row sums of the N x K gamma-folded weights */           \
  X(fold_c2, const float*)         /* [N] f32: W beta (lnfold_gelu) */                                         \
  X(norm_cols, int)                /* the normalised width (lnfold_gelu: this kernel's K) */

struct Params {
#define CTAHW_CHAIN_MEMBER(name, type) type name{};
  CTAHW_CHAIN_FIELDS(CTAHW_CHAIN_MEMBER)
#undef CTAHW_CHAIN_MEMBER
};

#define CTAHW_CHAIN_COUNT(name, type) +1
constexpr int kDescFields = 0 CTAHW_CHAIN_FIELDS(CTAHW_CHAIN_COUNT);
#undef CTAHW_CHAIN_COUNT

#define CTAHW_CHAIN_NAME(name, type) #name ","
constexpr char kDescNames[] = CTAHW_CHAIN_FIELDS(CTAHW_CHAIN_NAME);
#undef CTAHW_CHAIN_NAME

inline Params from_desc(const long long* f) {
  Params p;
  int i = 0;
#define CTAHW_CHAIN_READ(name, type) p.name = ctahw::ctapipe_gemm::desc_field<type>(f[i++]);
  CTAHW_CHAIN_FIELDS(CTAHW_CHAIN_READ)
#undef CTAHW_CHAIN_READ
  return p;
}

// Tile ids: g = l * per_layer + m * tiles_n + n (l the local layer).
__device__ __forceinline__ int per_layer(const Params& p) { return p.tiles_m * p.tiles_n; }

// A tile's id g (layer-major: layer, then row-block, then column) as CUTLASS's work tile (L = the layer), and back.
using WorkTileInfo = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90::WorkTileInfo;
__device__ __forceinline__ WorkTileInfo to_work(const Params& p, int g) {
  if (g < 0) return WorkTileInfo::invalid_work_tile();
  const int pl = per_layer(p), r = g % pl;
  return {r / p.tiles_n, r % p.tiles_n, g / pl, true};
}
__device__ __forceinline__ int tile_of(const Params& p, WorkTileInfo const& work) {
  return work.L_idx * p.tiles_m * p.tiles_n + work.M_idx * p.tiles_n + work.N_idx;
}

// Whether local layer l's tiles wait for their inputs: every layer but the chain's first.
__device__ __forceinline__ bool waits(const Params& p, int l) { return p.first_layer + l * p.layer_stride > 0; }

// The counters' acquire and release at the kernel's scope. (ctasim.protocol.kernelops reads these `if
// (p.sys_scope) A; else B;` forms to compare each scope's operations with the protocol model's.)
__device__ __forceinline__ unsigned ld_acquire(const Params& p, const unsigned* c) {
  if (p.sys_scope) return ctapipe::ld_acquire_sys_u32(c); else return ctapipe::ld_acquire_gpu_u32(c);
}

__device__ __forceinline__ void red_release(const Params& p, unsigned* c) {
  if (p.sys_scope) ctapipe::red_add_release_sys(c, 1u); else ctapipe::red_add_release_gpu(c, 1u);
}

// Take the next ticket and, for a tile of layer > 0, wait until its row-block of the layer before is complete.
// Returns the tile id; -1 when the order is exhausted or after an error was recorded.
template <bool Trace>
__device__ __forceinline__ int take(const Params& p, unsigned long long* t_taken) {
  const unsigned t = atomicAdd(p.ticket, 1u);
  const long long k = static_cast<long long>(t) -
                      static_cast<long long>(p.epoch - 1) * static_cast<long long>(p.num_tiles + p.grid);
  if (k < 0 || k >= p.num_tiles + p.grid) {
    ctapipe::record_error_at(p.error, p.epoch, ctapipe::kTicketOverflow, static_cast<int>(t), t);
    return -1;
  }
  if (k >= p.num_tiles) return -1;
  const int g = p.order[k];
  if constexpr (Trace) *t_taken = ctapipe::now_ns();
  const int l = g / per_layer(p);
  if (p.protocol && waits(p, l)) {
    const int dep = l * p.tiles_m + (g % per_layer(p)) / p.tiles_n;
    const unsigned target = p.epoch * static_cast<unsigned>(p.wait_tiles);
    const unsigned long long deadline = ctapipe::now_ns() + static_cast<unsigned long long>(p.timeout_ns);
    unsigned sleep_ns = 32;
    unsigned v;
    for (;;) {
      v = ld_acquire(p, p.counters + dep);
      if (v >= target) break;
      if (ctapipe::now_ns() > deadline) {
        ctapipe::record_error_at(p.error, p.epoch, ctapipe::kWaitTimeout, dep, v);
        return -1;
      }
      __nanosleep(sleep_ns);
      if (sleep_ns < 256) sleep_ns *= 2;
    }
    if (v > target) {  // runs are ordered on the host: the next epoch's tiles cannot have signalled
      ctapipe::record_error_at(p.error, p.epoch, ctapipe::kCounterOverrun, dep, v);
      return -1;
    }
    ctapipe::fence_proxy_async_global();
  }
  return g;
}

// The row statistics' reset (op lnfold_gelu, the kernel that reads them): two buffers alternate by epoch; launch e
// reads buffer e mod 2 and zeroes the other, which launch e + 1's producer adds into -- launch e - 1's readers of it
// are finished, and launch e + 1's producer starts after launch e's kernels end (the host orders a ring's runs).
// The column-0 tile of each row-block zeroes that row-block's sums and sums of squares (256 MMA/epilogue threads:
// 128 rows x 2 words). Plain stores: the next launch is ordered after this one by the stream / events.
constexpr int kTileM = int(cute::size<0>(ctahw::ctapipe_gemm::TileShape{}));

// The kernel's rows (M): the length of each row-statistics vector.
CUTLASS_HOST_DEVICE int rows(const Params& p) { return p.tiles_m * kTileM; }

static_assert(kEpilogueThreads == 2 * kTileM, "clear_stats: the epilogue threads zero a tile's rows' two words, one each");
__device__ __forceinline__ void clear_stats(const Params& p, int m_idx) {
  const int t = static_cast<int>(threadIdx.x) - kThreadsPerWarpGroup;  // 0 .. 255
  p.stats_clear[(t / kTileM) * rows(p) + m_idx * kTileM + t % kTileM] = 0.0f;
}

template <bool Trace>
struct ChainTag {};

template <bool Trace>
class ChainScheduler : public SchedulerWarp<ChainScheduler<Trace>> {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;
  using Adapter = SchedulerWarp<ChainScheduler<Trace>>;
  friend Adapter;

 public:
  using WorkTileInfo = typename Base::WorkTileInfo;

  struct Arguments : Base::Arguments {
    chain::Params chain{};
  };
  struct Params : Base::Params {
    chain::Params chain{};
  };

  template <class ProblemShapeMNKL, class TileShape, class ClusterShape>
  static Params to_underlying_arguments(ProblemShapeMNKL problem_shape_mnkl, TileShape tile_shape,
                                        ClusterShape cluster_shape, cutlass::KernelHardwareInfo const& hw_info,
                                        Arguments const& args, void* workspace = nullptr,
                                        const uint32_t epilogue_subtile = 1, uint32_t ktile_align = 1u) {
    Params p = base_scheduler_params<Params>(problem_shape_mnkl, tile_shape, cluster_shape, hw_info, args, workspace,
                                             epilogue_subtile, ktile_align);
    p.chain = args.chain;
    return p;
  }

  CUTLASS_HOST_DEVICE static bool can_implement(Arguments const& args) {
    return args.chain.num_tiles > 0 && args.chain.grid > 0;
  }

  template <class ProblemShapeMNKL, class BlockShape, class ClusterShape>
  CUTLASS_HOST_DEVICE static dim3 get_grid_shape(Params const& params, ProblemShapeMNKL, BlockShape, ClusterShape,
                                                 cutlass::KernelHardwareInfo, Arguments = Arguments{},
                                                 bool = true) {
    return dim3(static_cast<unsigned>(params.chain.grid), 1, 1);
  }

  CUTLASS_DEVICE explicit ChainScheduler(Params const& params) : Adapter(params), pp_(&params.chain) {
#if defined(__CUDA_ARCH__)
    unsigned long long t0 = 0;
    tile_ = ctapipe::acquire_broadcast(
        chain().cta_tile + blockIdx.x, [&] { return take<Trace>(chain(), &t0); },
        [&](int tile) {
          if constexpr (Trace) stamp_taken(tile, t0);
        });
#endif
  }

  template <class ClusterShape>
  CUTLASS_DEVICE WorkTileInfo initial_work_tile_info(ClusterShape) {
#if defined(__CUDA_ARCH__)
    // The load warp fences the async proxy itself before its first tile's TMA loads, as for every later tile
    // (thread 0's fence in take() acts on the CTA under the protocol model; this one does not depend on that).
    if (threadIdx.x < 32 && tile_ >= 0 && chain().protocol) ctapipe::fence_proxy_async_global();
#endif
    if constexpr (Trace) stamp_compute_start(tile_);
    return to_work(tile_);
  }

  template <class FrgTensorC>
  CUTLASS_DEVICE static void fixup(Params const& params, WorkTileInfo const& work, FrgTensorC&, uint32_t, uint32_t) {
#if defined(__CUDA_ARCH__)
    if constexpr (Trace) {
      const chain::Params& c = params.chain;
      stamp_mainloop_end(c.stamps, work, [&c](WorkTileInfo const& w) { return tile_of(c, w); });
    }
#endif
  }

 private:
  CUTLASS_DEVICE chain::Params const& chain() const { return *pp_; }

  // SchedulerWarp's tile source (scheduler warp): the elected lane takes the next ticket, waiting for its inputs.
  CUTLASS_DEVICE int take_next(bool elected) {
    if (!elected) return -1;
    unsigned long long t0 = 0;
    const int tile = take<Trace>(chain(), &t0);
    if constexpr (Trace) stamp_taken(tile, t0);
    return tile;
  }

  // Every role, once the next tile is read. The mainloop load warp issues the tile's TMA loads: it fences the async
  // proxy itself, after it synchronised (mbarrier) with the thread whose acquire made the inputs visible.
  CUTLASS_DEVICE void fetched(int tile) {
    if (threadIdx.x < 32 && tile >= 0 && chain().protocol) ctapipe::fence_proxy_async_global();
    if constexpr (Trace) stamp_compute_start(tile);
  }

  CUTLASS_DEVICE WorkTileInfo to_work(int g) const { return chain::to_work(chain(), g); }

  CUTLASS_DEVICE void finish_tile(WorkTileInfo const& work) { finish(chain(), work); }

 public:
  // The MMA/epilogue threads, right after the epilogue issued the tile's TMA stores (both designs).
  CUTLASS_DEVICE static void finish(chain::Params const& c, WorkTileInfo const& work) {
    const int g = tile_of(c, work);
    const bool leader = threadIdx.x == kThreadsPerWarpGroup;
    unsigned long long* s = nullptr;
    if constexpr (Trace) {
      s = tile_stamps(c.stamps, g);
      if (leader) s[ctapipe::kStampEpilogue] = ctapipe::now_ns();
    }
    if (c.stats_clear != nullptr && work.N_idx == 0) clear_stats(c, work.M_idx);
    if (c.protocol) {
      ctapipe::complete_stores();  // no-op for threads that issued no stores
      asm volatile("bar.sync %0, %1;" ::"n"(kSignalBarrier), "n"(kEpilogueThreads) : "memory");
    }
    if (leader) {
      unsigned long long t_store = 0;
      if constexpr (Trace) t_store = ctapipe::now_ns();
      if (c.protocol && !(work.L_idx == 0 && work.M_idx == c.stall_row))
        red_release(c, c.signals + work.L_idx * c.tiles_m + work.M_idx);
      if constexpr (Trace) {
        s[ctapipe::kStampStoreEnd] = t_store;
        s[ctapipe::kStampSignal] = ctapipe::now_ns();
      }
    }
  }

 private:

  // The thread that took the ticket: kStampStart = the tile's ticket taken, kStampAcquire (set by
  // stamp_compute_start) = the MMA warp groups begin it; the slot word holds the time its inputs were visible
  // (the wait returned) for a tile that waited, as a time stamp.
  CUTLASS_DEVICE void stamp_taken(int g, unsigned long long t_taken) {
    if (g < 0) return;
    unsigned long long* s = tile_stamps(chain().stamps, g);
    s[ctapipe::kStampStart] = t_taken;
    s[ctapipe::kStampSlot] = ctapipe::now_ns();
    s[ctapipe::kStampWhere] = where_word(blockIdx.x);
  }

  CUTLASS_DEVICE void stamp_compute_start(int g) { ctahw::stamp_compute_start(chain().stamps, g); }

  // The kernel's parameters are __grid_constant__: a pointer keeps the producer warp group's registers low.
  chain::Params const* pp_ = nullptr;
  int tile_ = -1;
};

// The static design: CUTLASS's static-persistent path (no scheduler warp): CTA i runs order[i], order[i + grid],
// ... (every role computes the sequence itself), so a 2x1 cluster's CTAs take consecutive order entries -- a pair
// of row-blocks of one column, sharing W by multicast. Only the mainloop load warp waits for a tile's inputs (it
// issues the tile's TMA loads, so it runs the acquire and the proxy fence itself); the MMA warps follow it through
// the mainloop's shared-memory pipeline. Deadlock freedom needs every CTA resident at once (the launcher sizes the
// grid by cudaOccupancyMaxActiveClusters): the smallest unfinished order index then has its inputs finished and a
// running CTA, whose earlier tiles need nothing from it; a cluster's two tiles are of one layer, so neither waits
// on the other. After any recorded error every wait is skipped (the kernel drains; the host raises).
template <bool Trace, int CM>
struct ChainStaticTag {};

template <bool Trace, int CM>
class ChainStaticScheduler : public cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90 {
  using Base = cutlass::gemm::kernel::detail::PersistentTileSchedulerSm90;

 public:
  using WorkTileInfo = typename Base::WorkTileInfo;
  using Arguments = typename ChainScheduler<Trace>::Arguments;
  using Params = typename ChainScheduler<Trace>::Params;

  template <class ProblemShapeMNKL, class TileShape, class ClusterShape>
  static Params to_underlying_arguments(ProblemShapeMNKL problem_shape_mnkl, TileShape tile_shape,
                                        ClusterShape cluster_shape, cutlass::KernelHardwareInfo const& hw_info,
                                        Arguments const& args, void* workspace = nullptr,
                                        const uint32_t epilogue_subtile = 1, uint32_t ktile_align = 1u) {
    return ChainScheduler<Trace>::to_underlying_arguments(problem_shape_mnkl, tile_shape, cluster_shape, hw_info,
                                                          args, workspace, epilogue_subtile, ktile_align);
  }
  CUTLASS_HOST_DEVICE static bool can_implement(Arguments const& args) {
    return args.chain.num_tiles > 0 && args.chain.grid > 0 && args.chain.grid % CM == 0 &&
           args.chain.num_tiles % CM == 0;
  }
  template <class ProblemShapeMNKL, class BlockShape, class ClusterShape>
  CUTLASS_HOST_DEVICE static dim3 get_grid_shape(Params const& params, ProblemShapeMNKL, BlockShape, ClusterShape,
                                                 cutlass::KernelHardwareInfo, Arguments = Arguments{},
                                                 bool = true) {
    return dim3(static_cast<unsigned>(params.chain.grid), 1, 1);
  }

  CUTLASS_DEVICE explicit ChainStaticScheduler(Params const& params) : Base(params), pp_(&params.chain) {
#if defined(__CUDA_ARCH__)
    next_ = static_cast<int>(blockIdx.x);
    tile_ = take();
#endif
  }

  template <class ClusterShape>
  CUTLASS_DEVICE WorkTileInfo initial_work_tile_info(ClusterShape) {
#if defined(__CUDA_ARCH__)
    if (threadIdx.x < 32) wait_inputs(tile_);
    if constexpr (Trace) stamp_compute_start(tile_);
#endif
    return to_work(tile_);
  }

  template <class TileSchedulerPipeline, class TileSchedulerPipelineState>
  CUTLASS_DEVICE auto fetch_next_work(WorkTileInfo work, TileSchedulerPipeline&, TileSchedulerPipelineState) {
    int tile = -1;
#if defined(__CUDA_ARCH__)
    if (work.is_valid()) {
      if (threadIdx.x >= kThreadsPerWarpGroup) finish_tile(work);
      tile = take();
      if (threadIdx.x < 32) wait_inputs(tile);
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
    ChainScheduler<Trace>::fixup(params, work, a, x, y);
  }

 private:
  CUTLASS_DEVICE chain::Params const& chain() const { return *pp_; }

  CUTLASS_DEVICE int take() {
    const int t = next_ < chain().num_tiles ? chain().order[next_] : -1;
    next_ += chain().grid;
    return t;
  }

  CUTLASS_DEVICE WorkTileInfo to_work(int g) const { return chain::to_work(chain(), g); }

  // The mainloop load warp, before it issues tile g's loads: lane 0 waits (bounded) until g's row-block of the
  // layer before is complete; then every lane fences the async proxy (the TMA-issuing lane among them).
  CUTLASS_DEVICE void wait_inputs(int g) {
    const chain::Params& c = chain();
    if (g < 0 || !c.protocol || !waits(c, g / per_layer(c))) return;
    if (threadIdx.x == 0) {
      unsigned long long t_taken = 0;
      if constexpr (Trace) t_taken = ctapipe::now_ns();
      const int dep = (g / per_layer(c)) * c.tiles_m + (g % per_layer(c)) / c.tiles_n;
      const unsigned target = c.epoch * static_cast<unsigned>(c.wait_tiles);
      const unsigned long long deadline = ctapipe::now_ns() + static_cast<unsigned long long>(c.timeout_ns);
      unsigned sleep_ns = 32;
      for (;;) {
        const unsigned v = ld_acquire(c, c.counters + dep);
        if (v == target) break;
        if (v > target) {
          ctapipe::record_error_at(c.error, c.epoch, ctapipe::kCounterOverrun, dep, v);
          break;
        }
        if (*reinterpret_cast<volatile int*>(c.error) != 0) break;  // another CTA failed: drain
        if (ctapipe::now_ns() > deadline) {
          ctapipe::record_error_at(c.error, c.epoch, ctapipe::kWaitTimeout, dep, v);
          break;
        }
        __nanosleep(sleep_ns);
        if (sleep_ns < 256) sleep_ns *= 2;
      }
      if constexpr (Trace) {
        unsigned long long* s = tile_stamps(c.stamps, g);
        s[ctapipe::kStampStart] = t_taken;
        s[ctapipe::kStampSlot] = ctapipe::now_ns();
      }
    }
    __syncwarp();
    ctapipe::fence_proxy_async_global();
  }

  // Layer-0 tiles (no wait) and every tile's place: the first MMA thread, when the MMA warp groups begin it.
  CUTLASS_DEVICE void stamp_compute_start(int g) {
    if (g < 0 || threadIdx.x != kThreadsPerWarpGroup) return;
    const chain::Params& c = chain();
    unsigned long long* s = tile_stamps(c.stamps, g);
    const unsigned long long t = ctapipe::now_ns();
    s[ctapipe::kStampAcquire] = t;
    s[ctapipe::kStampWhere] = where_word(blockIdx.x);
    if (!waits(c, g / per_layer(c)) || !c.protocol) {
      s[ctapipe::kStampStart] = t;
      s[ctapipe::kStampSlot] = t;
    }
  }

  CUTLASS_DEVICE void finish_tile(WorkTileInfo const& work) { ChainScheduler<Trace>::finish(chain(), work); }

  chain::Params const* pp_ = nullptr;
  int next_ = 0;
  int tile_ = -1;
};

}  // namespace ctahw::chain

namespace cutlass::gemm::kernel::detail {
template <bool Trace, class ArchTag, class TileShape, class ClusterShape, uint32_t Stages, class ProblemShapeType>
struct TileSchedulerSelector<ctahw::chain::ChainTag<Trace>, ArchTag, TileShape, ClusterShape, Stages,
                             ProblemShapeType> {
  using Scheduler = ctahw::chain::ChainScheduler<Trace>;
};
template <bool Trace, int CM, class ArchTag, class TileShape, class ClusterShape, uint32_t Stages,
          class ProblemShapeType>
struct TileSchedulerSelector<ctahw::chain::ChainStaticTag<Trace, CM>, ArchTag, TileShape, ClusterShape, Stages,
                             ProblemShapeType> {
  using Scheduler = ctahw::chain::ChainStaticScheduler<Trace, CM>;
};
}  // namespace cutlass::gemm::kernel::detail

namespace ctahw::chain {

using namespace cute;
namespace cg = ctahw::ctapipe_gemm;

// Designs: 0 = tickets (scheduler warp, cluster 1x1); 1 = static order, 1x1; 2 = static order, 2x1 (W multicast).
constexpr int kDesigns = 3;

// Epilogue op `Op` (CTAPIPE_EPILOGUE_OPS of ctapipe_gemm.cuh: the same fusion operations as variant (a); then this
// library's own CTAHW_CHAIN_NORM_OPS below); op 0 for every design, ops 1.. for the tickets design only (kOpDesign),
// which keeps the library small.
constexpr int kOpDesign = 0;

// LayerNorm with no pass of its own, as two fused ops of one-layer kernels on a ring (a layer and the next one):
//
//   op 5 residual_stats  D = acc + C (the residual, as op 4), and every row's partial sum and sum of squares of D
//                         over the tile's columns added into stats_out[0][row], stats_out[1][row] (fp32,
//                         red.relaxed.sys: the sums live in the next GPU's memory); the row-block's signal is
//                         issued after them (the adds happen in the epilogue, before the stores complete and the
//                         epilogue threads meet at the signal barrier -- the release covers them, as for the tile).
//   op 6 lnfold_gelu      D = GELU(rstd_r * (acc - mean_r * c1) + c2), mean_r and rstd_r from stats_in (sums over
//                         norm_cols columns, eps 1e-5, the variance as E[x^2] - mean^2), c1 = 1^T (diag(gamma) W^T),
//                         c2 = beta^T W^T: LayerNorm(x) W^T with gamma folded into W by the host
//                         (ctahw.chain.layernorm_fold). The statistics are read after the tile's wait (the acquire on
//                         its row-block's counter, which completes only after every producer tile's adds).
//
// The CUTLASS epilogue visitor trees (fusion callbacks given to the collective builder in place of an operation):
// op 5 = First(ColReduction<sum>(X), ColReduction<sum>(X * X)) with X = acc + C (X evaluated per use; C is loaded
// once); op 6 = Compute<LnFoldGelu>(acc, ColBroadcast(sum), ColBroadcast(sum of squares), RowBroadcast(c1),
// RowBroadcast(c2)). Both are built for one-layer kernels only (the vectors have no batch stride).
#define CTAHW_CHAIN_NORM_OPS(X) X(5, residual_stats) X(6, lnfold_gelu)

namespace fusion = cutlass::epilogue::fusion;
constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

// The row statistics' adds: fp32 reductions at system scope (relaxed; the counter's release orders them).
template <class T>
struct AtomicAddSys {
  CUTLASS_DEVICE void operator()(T* ptr, T const& v) const {
    static_assert(std::is_same_v<T, float>, "row statistics are fp32");
    asm volatile("red.relaxed.sys.global.add.f32 [%0], %1;" ::"l"(ptr), "f"(v) : "memory");
  }
};

}  // namespace ctahw::chain

// CUTLASS's column reduction takes the atomic path for reductions it knows as atomic.
template <class T>
struct cutlass::is_atomic<ctahw::chain::AtomicAddSys<T>> : cutlass::platform::true_type {};

namespace ctahw::chain {

template <class T>
struct TakeFirst {
  CUTLASS_HOST_DEVICE T operator()(T const& a, T const&) const { return a; }
};

constexpr float kNormEps = 1e-5f;  // LayerNorm's epsilon (torch.nn.LayerNorm's default); ctahw.chain.NORM_EPS

struct LnFoldArgs {
  float inv_n = 0.0f;  // 1 / norm_cols
};

template <class T>
struct LnFoldGelu {
  using Arguments = LnFoldArgs;
  CUTLASS_HOST_DEVICE T operator()(T const& acc, T const& s1, T const& s2, T const& c1, T const& c2,
                                   Arguments const& a) const {
    T out;
    cutlass::epilogue::thread::GELU<float> gelu;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < T::kElements; ++i) {
      const float mean = s1[i] * a.inv_n;
      const float var = fmaxf(s2[i] * a.inv_n - mean * mean, 0.0f);
      const float rstd = rsqrtf(var + kNormEps);
      out[i] = gelu(rstd * (acc[i] - mean * c1[i]) + c2[i]);
    }
    return out;
  }
};

// CUTLASS's column reduction (per row, over the tile's columns) with atomic adds, less its workspace step: with an
// atomic reduction CUTLASS zeroes the output vector on the host's stream at every launch (a driver memset). The row
// statistics are zeroed by the protocol instead (the reader's column-0 tiles, one launch ahead; the host zeroes both
// buffers once), so that step is replaced by nothing.
using AtomicRowSum = fusion::Sm90ColReduction<cutlass::plus, cutlass::plus, AtomicAddSys, 0, cg::TileShape, float,
                                               float, kRound>;
struct RowStatsReduction : AtomicRowSum {
  using Base = AtomicRowSum;
  using Base::Base;
  template <class ProblemShape>
  static cutlass::Status initialize_workspace(ProblemShape const&, typename Base::Arguments const&, void*,
                                              cudaStream_t, cutlass::CudaHostAdapter* = nullptr) {
    return cutlass::Status::kSuccess;
  }
};

template <int Op>
struct NormOp;

template <>
struct NormOp<5> {
  static constexpr const char* name = "residual_stats";
  using ElementC = cutlass::bfloat16_t;
  using X = fusion::Sm90EVT<fusion::Sm90Compute<cutlass::plus, float, float, kRound>, fusion::Sm90AccFetch,
                            fusion::Sm90SrcFetch<ElementC>>;
  using Square = fusion::Sm90EVT<fusion::Sm90Compute<cutlass::multiplies, float, float, kRound>, X, X>;
  using RowSum = RowStatsReduction;
  using Fusion = fusion::Sm90EVT<fusion::Sm90Compute<TakeFirst, cg::ElementD, float, kRound>,
                                 fusion::Sm90EVT<RowSum, X>, fusion::Sm90EVT<RowSum, Square>>;
  static bool usable(const Params& p, int) { return p.layers == 1 && p.stats_out != nullptr; }
  template <class A>
  static void arguments(A& t, const Params& p) {
    typename X::Arguments x{{}, {}, {}};
    t = {{x, {p.stats_out, 0.0f, {}}}, {{x, x, {}}, {p.stats_out + rows(p), 0.0f, {}}}, {}};
  }
};

template <>
struct NormOp<6> {
  static constexpr const char* name = "lnfold_gelu";
  using ElementC = void;
  using ColVec = fusion::Sm90ColBroadcast<0, cg::TileShape, float, float, Stride<_1, _0, int64_t>>;
  using RowVec = fusion::Sm90RowBroadcast<0, cg::TileShape, float, float, Stride<_0, _1, int64_t>>;
  using Fusion = fusion::Sm90EVT<fusion::Sm90Compute<LnFoldGelu, cg::ElementD, float, kRound>, fusion::Sm90AccFetch,
                                 ColVec, ColVec, RowVec, RowVec>;
  static bool usable(const Params& p, int k) {
    return p.layers == 1 && p.stats_in != nullptr && p.stats_clear != nullptr && p.stats_clear != p.stats_in &&
           p.fold_c1 != nullptr && p.fold_c2 != nullptr && p.norm_cols == k;
  }
  template <class A>
  static void arguments(A& t, const Params& p) {
    t = {{}, {p.stats_in, 0.0f, {}}, {p.stats_in + rows(p), 0.0f, {}}, {p.fold_c1, 0.0f, {}}, {p.fold_c2, 0.0f, {}},
         {1.0f / static_cast<float>(p.norm_cols)}};
  }
};

#define CTAHW_CHAIN_IS_NORM(code, name) || op == code
constexpr bool is_norm_op(int op) { return false CTAHW_CHAIN_NORM_OPS(CTAHW_CHAIN_IS_NORM); }
#undef CTAHW_CHAIN_IS_NORM

#define CTAHW_CHAIN_CHECK_OP(code, op) \
  static_assert(cg::same_name(NormOp<code>::name, #op), "NormOp<" #code "> is not " #op);
CTAHW_CHAIN_NORM_OPS(CTAHW_CHAIN_CHECK_OP)
#undef CTAHW_CHAIN_CHECK_OP
#define CTAHW_CHAIN_OP_NAME(code, op) #op ","
// The chain library's op names by code: ctapipe_gemm.cuh's list, then this library's (codes continue it).
constexpr char kOpNames[] = CTAPIPE_EPILOGUE_OPS(CTAHW_CHAIN_OP_NAME) CTAHW_CHAIN_NORM_OPS(CTAHW_CHAIN_OP_NAME);
#undef CTAHW_CHAIN_OP_NAME
static_assert(sizeof(cg::kEpilogueCodes) / sizeof(int) == 5, "the norm ops' codes continue CTAPIPE_EPILOGUE_OPS (5 ops)");

// The fused op's epilogue: ctapipe_gemm.cuh's for codes 0-4, NormOp's for 5 and 6.
template <int Op, bool Norm = is_norm_op(Op)>
struct ChainOp {
  using Epi = cg::EpilogueOp<Op>;
  using ElementC = typename Epi::ElementC;
  using Fusion = typename Epi::Fusion;
  static constexpr const char* name = Epi::name;
};
template <int Op>
struct ChainOp<Op, true> : NormOp<Op> {};

// Calls f(integral_constant<int, Op>) for any of the library's op codes (CTAPIPE_EPILOGUE_OPS, then
// CTAHW_CHAIN_NORM_OPS), or returns -2006.
using ChainOpCodes = std::integer_sequence<int CTAPIPE_EPILOGUE_OPS(CTAPIPE_OP_SEQ) CTAHW_CHAIN_NORM_OPS(CTAPIPE_OP_SEQ)>;
template <class F>
int dispatch_chain_op(int op, F&& f) {
  return cg::dispatch_code(ChainOpCodes{}, op, std::forward<F>(f));
}

template <int Design, int Op = 0>
struct Config {
  static_assert(Op == 0 || Design == kOpDesign, "fused epilogue ops are built for the tickets design only");
  static constexpr int CM = Design == 2 ? 2 : 1;
  using ClusterShape = Shape<Int<CM>, _1, _1>;
  using Epi = ChainOp<Op>;
  using CollectiveEpilogue = cg::EpilogueFor<ClusterShape, Epi>;
  using SchedStorage = typename ChainScheduler<false>::SharedStorage;  // carved out for every design (small)
  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, cg::ElementA, cg::LayoutA, cg::kAlign, cg::ElementB,
      cg::LayoutB, cg::kAlign, cg::ElementAccumulator, cg::TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage) + sizeof(SchedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
  template <bool Trace>
  using Kernel = cutlass::gemm::kernel::GemmUniversal<
      Shape<int, int, int, int>, CollectiveMainloop, CollectiveEpilogue,
      cute::conditional_t<Design == 0, ChainTag<Trace>, ChainStaticTag<Trace, CM>>>;
  template <bool Trace>
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel<Trace>>;
};

// Calls f(integral_constant<int, Design>, integral_constant<int, Op>, bool_constant<Trace>) for the kernel that
// (design, op, trace) names -- every kernel the library builds, named once for the launcher and the loader -- or
// returns -2003 (unknown design) / -2006 (unknown op, or an op on a design built without ops).
template <class F>
int dispatch(int design, int op, bool trace, F&& f) {
  auto traced = [&](auto d, auto o) {
    return trace ? f(d, o, std::true_type{}) : f(d, o, std::false_type{});
  };
  if (design == kOpDesign) {
    return dispatch_chain_op(op, [&](auto code) { return traced(std::integral_constant<int, kOpDesign>{}, code); });
  }
  if (design < 0 || design >= kDesigns) return -2003;
  if (op != 0) return -2006;
  static_assert(kOpDesign == 0 && kDesigns == 3, "the designs without ops are 1 and 2");
  return design == 1 ? traced(std::integral_constant<int, 1>{}, std::integral_constant<int, 0>{})
                     : traced(std::integral_constant<int, 2>{}, std::integral_constant<int, 0>{});
}

// 0 if the descriptor is usable, else -2002 (every spin is bounded and reports through the error buffer). A kernel
// of several layers needs n == k (layer j + 1 reads what layer j wrote, one batch stride).
inline int check_desc(const Params& p, int trace, int m, int n, int k, int sm_count) {
  const long long per = static_cast<long long>(p.tiles_m) * p.tiles_n;
  if (p.order == nullptr || p.ticket == nullptr || p.error == nullptr || p.cta_tile == nullptr || p.epoch == 0 ||
      p.timeout_ns <= 0 || p.layers <= 0 || p.tiles_m <= 0 || p.tiles_n <= 0 || p.num_tiles != per * p.layers ||
      p.grid <= 0 || p.grid > sm_count || p.grid > p.num_tiles || (p.protocol != 0 && p.protocol != 1) ||
      (p.protocol && (p.counters == nullptr || p.signals == nullptr)) || (trace && p.stamps == nullptr) ||
      p.first_layer < 0 || p.layer_stride < 1 || (p.sys_scope != 0 && p.sys_scope != 1) || p.wait_tiles < 1 ||
      rows(p) != m || p.tiles_n * size<1>(cg::TileShape{}) != n || k <= 0 ||
      k % size<2>(cg::TileShape{}) != 0 || (p.layers > 1 && n != k))
    return -2002;
  return 0;
}

// CTAs of design `Design` that can be resident at once on `device` (clusters x cluster size), 0 if unknown. The
// static designs are deadlock-free only with every CTA resident, so their grid must not exceed this.
template <int Design>
int resident_ctas(int device) {
  using K = typename Config<Design>::template Kernel<false>;
  void const* fn = reinterpret_cast<void const*>(cutlass::device_kernel<K>);
  int prev = 0;
  if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) return 0;
  int n = 0;
  if (cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, int(K::SharedStorageSize)) == cudaSuccess) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(Config<Design>::CM, 1, 1);
    cfg.blockDim = dim3(K::MaxThreadsPerBlock, 1, 1);
    cfg.dynamicSmemBytes = K::SharedStorageSize;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = Config<Design>::CM;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    if (cudaOccupancyMaxActiveClusters(&n, fn, &cfg) != cudaSuccess) n = 0;
  }
  cudaGetLastError();
  cudaSetDevice(prev);
  return n * Config<Design>::CM;
}

inline int resident(int design, int device) {
  const int n = dispatch(design, 0, false, [&](auto dc, auto, auto) { return resident_ctas<decltype(dc)::value>(device); });
  return n > 0 ? n : 0;
}

template <int Design, int Op, bool Trace>
int run(void* x, void* d, const void* c, const void* w, int m, int n, int k, const Params& chain, int device,
        cudaStream_t stream) {
  using Cfg = Config<Design, Op>;
  using Gemm = typename Cfg::template Gemm<Trace>;
  using K = typename Gemm::GemmKernel;
  static_assert(protocol_roles_match<K>(), "the protocol's signalling thread and barrier do not fit this kernel");
  using PtrC = typename K::CollectiveEpilogue::ElementC const*;  // void const* where there is no C
  constexpr bool has_c = !std::is_void_v<typename Cfg::Epi::ElementC>;
  if constexpr (is_norm_op(Op)) {  // the LayerNorm fold's buffers, checked before any CUDA call
    if (!Cfg::Epi::usable(chain, k)) return -2008;
  }
  cutlass::KernelHardwareInfo hw;
  hw.device_id = device;
  hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(device);
  if (int e = check_desc(chain, Trace ? 1 : 0, m, n, k, hw.sm_count)) return e;
  if (d == nullptr) return -2002;
  if (has_c != (c != nullptr) || (has_c && chain.layers != 1)) return -2007;  // C: one layer's residual
  if (Design != 0) {  // static order: every CTA resident, whole clusters, a cluster's tiles in one layer
    const int cm = Config<Design>::CM;
    const int res = resident_ctas<Design>(device);
    if (res <= 0 || chain.grid > res) return -2004;
    if (chain.grid % cm || (chain.tiles_m * chain.tiles_n) % cm) return -2002;
  }
  const int L = chain.layers;
  auto sa = cutlass::make_cute_packed_stride(typename K::StrideA{}, make_shape(m, k, L));
  auto sb = cutlass::make_cute_packed_stride(typename K::StrideB{}, make_shape(n, k, L));
  auto sc = cutlass::make_cute_packed_stride(typename K::StrideC{}, make_shape(m, n, L));
  auto sd = cutlass::make_cute_packed_stride(typename K::StrideD{}, make_shape(m, n, L));
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k, L},
                                {static_cast<cg::ElementA*>(x), sa, static_cast<const cg::ElementB*>(w), sb},
                                {{}, static_cast<PtrC>(c), sc, static_cast<cg::ElementA*>(d), sd},
                                hw};
  if constexpr (is_norm_op(Op)) {
    Cfg::Epi::arguments(args.epilogue.thread, chain);
  } else {
    args.epilogue.thread.alpha = 1.0f;
    args.epilogue.thread.beta = has_c ? 1.0f : 0.0f;  // a sourceless (void-C) epilogue requires beta == 0
  }
  args.scheduler.chain = chain;
  if (Gemm::get_workspace_size(args) != 0) return -2000;
  Gemm gemm;
  return ctahw::launch::can_initialize_run(gemm, args, nullptr, stream);
}

template <int Design>
int describe(char* buf, int len) {
  using C = Config<Design>;
  return snprintf(buf, static_cast<size_t>(len),
                  "cutlass=%d.%d.%d kernel=sm90_tma_ws_cooperative_ctapipe_chain_%s dtype=bf16 layout=TN "
                  "tile=%dx%dx%d cluster=%dx1x1 stages=%d sched_stages=%d threads=%d smem_bytes=%d",
                  CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, Design == 0 ? "tickets" : "static",
                  int(size<0>(cg::TileShape{})), int(size<1>(cg::TileShape{})), int(size<2>(cg::TileShape{})), C::CM,
                  int(C::CollectiveMainloop::DispatchPolicy::Stages), Design == 0 ? kSchedStages : 0,
                  int(C::template Kernel<false>::MaxThreadsPerBlock),
                  int(C::template Kernel<false>::SharedStorageSize));
}

}  // namespace ctahw::chain

namespace ch = ctahw::chain;

extern "C" {

// 2: designs (tickets; static 1x1; static 2x1); 3: placement (d, signals); 4: shapes (m, n, k), epilogue ops, C;
// 5: the LayerNorm fold's ops (residual_stats, lnfold_gelu) and their descriptor fields, status -2008
int ctahw_chain_abi_version() { return 5; }
int ctahw_chain_desc_fields() { return ch::kDescFields; }
const char* ctahw_chain_desc_names() { return ch::kDescNames; }
int ctahw_chain_tile_stamp_words() { return ctapipe::kTileStampWords; }
int ctahw_chain_designs() { return ch::kDesigns; }
const char* ctahw_chain_epilogue_names() { return ch::kOpNames; }

int ctahw_chain_describe(int design, char* buf, int len) {
  return ch::dispatch(design, 0, false, [&](auto dc, auto, auto) { return ch::describe<decltype(dc)::value>(buf, len); });
}

// CTAs of `design` resident at once on `device` (the static designs' grid limit), 0 if unknown.
int ctahw_chain_resident_ctas(int design, int device) { return ch::resident(design, device); }

// X: [layers][m][k] bf16, local layer j's input X[j]; D: [layers][m][n] bf16, layer j writes D[j] (one GPU:
// D = X + m * k); W: [layers][n][k] bf16; C: [m][n] bf16, the residual of op `residual` (one layer), else null.
// Epilogue op `op` (ctahw_chain_epilogue_names) fused; ops other than none for the tickets design only (-2006).
int ctahw_chain_gemm(void* x, void* d, const void* c, const void* w, int m, int n, int k, const long long* desc,
                     int ndesc, int trace, int design, int op, int device, cudaStream_t stream) {
  if (ndesc != ch::kDescFields) return -2002;
  const ch::Params p = ch::from_desc(desc);
  return ch::dispatch(design, op, trace != 0, [&](auto dc, auto oc, auto tc) {
    return ch::run<decltype(dc)::value, decltype(oc)::value, decltype(tc)::value>(x, d, c, w, m, n, k, p, device,
                                                                                 stream);
  });
}

// Load the kernel of (design, op, trace) into device `device`'s context now (ctapipe_gemm.cuh's load: with CUDA's
// lazy loading a kernel loads at its first launch, which may wait for the kernels already running there -- a ring's
// kernel spinning on a counter would keep a later kernel of another function on the same device from loading).
// 0, -2003 / -2006 for an unknown design / op, or -cudaError.
int ctahw_chain_load(int design, int op, int trace, int device) {
  return ch::dispatch(design, op, trace != 0, [&](auto d, auto o, auto t) {
    using Cfg = ch::Config<decltype(d)::value, decltype(o)::value>;
    return ctahw::ctapipe_gemm::load<typename Cfg::template Gemm<decltype(t)::value>>(device);
  });
}

const char* ctahw_chain_status_string(int code) {
  if (code == -2004) return "the static chain kernel's grid exceeds the CTAs that can be resident at once (deadlock)";
  if (code == -2008)
    return "the LayerNorm fold's ops run one-layer kernels with their buffers: residual_stats needs stats_out, "
           "lnfold_gelu stats_in, another stats_clear, fold_c1, fold_c2 and norm_cols = K";
  return ctahw::ctapipe_gemm::status_string(code);
}

}  // extern "C"
