// ctahw: small probe kernels for `ctahw calibrate` and bench/hw (no CUTLASS; compiles in seconds).
//
// Each launcher is extern "C", takes the stream last, sets nothing global, and returns 0 or -cudaError_t
// (the launch error, checked with cudaGetLastError right after the launch). Every spin-wait is bounded by a
// %globaltimer deadline and reports a timeout through `err` instead of hanging.

#include <cuda.h>  // CUtensorMap and its enums (types only: the encoder comes through the runtime's entry point)
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace {

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

int launch_code() {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : -static_cast<int>(e);
}

// Grid-stride 16-byte stores of a non-zero pattern into dst (local or peer memory).
__global__ void store_kernel(uint4* dst, size_t n16, unsigned seed) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride) {
    unsigned v = seed ^ static_cast<unsigned>(i);
    dst[i] = make_uint4(v, v + 1u, v + 2u, v + 3u);
  }
}

// Flag ping-pong between two GPUs, one thread each. Role 0 (the initiator) writes round i into the peer's flag
// and waits for round i to come back in its own flag; role 1 waits for round i and sends it back.
// use_atomic = 0: volatile store + __threadfence_system; 1: atomicAdd_system on the peer flag (flag counts up).
// stamps (role 0): [2*i] send time, [2*i+1] receive time; (role 1): [i] time round i arrived.
__global__ void pingpong_kernel(volatile unsigned* my_flag, unsigned* peer_flag, int iters, int role,
                                int use_atomic, unsigned long long* stamps, unsigned long long timeout_ns,
                                int* err) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long deadline = globaltimer() + timeout_ns;
  for (int i = 1; i <= iters; ++i) {
    if (role == 0) {
      unsigned long long t0 = globaltimer();
      if (use_atomic) {
        atomicAdd_system(peer_flag, 1u);
      } else {
        *reinterpret_cast<volatile unsigned*>(peer_flag) = static_cast<unsigned>(i);
        __threadfence_system();
      }
      while (*my_flag < static_cast<unsigned>(i)) {
        if (globaltimer() > deadline) { *err = 1; return; }
      }
      unsigned long long t1 = globaltimer();
      stamps[2 * (i - 1)] = t0;
      stamps[2 * (i - 1) + 1] = t1;
    } else {
      while (*my_flag < static_cast<unsigned>(i)) {
        if (globaltimer() > deadline) { *err = 2; return; }
      }
      stamps[i - 1] = globaltimer();
      if (use_atomic) {
        atomicAdd_system(peer_flag, 1u);
      } else {
        *reinterpret_cast<volatile unsigned*>(peer_flag) = static_cast<unsigned>(i);
        __threadfence_system();
      }
    }
  }
}

// One thread: iters x (volatile store to target; optional __threadfence_system). out[0] = elapsed ns.
__global__ void fence_kernel(unsigned* target, int iters, int do_fence, unsigned long long* out) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned long long t0 = globaltimer();
  for (int i = 0; i < iters; ++i) {
    *reinterpret_cast<volatile unsigned*>(target) = static_cast<unsigned>(i);
    if (do_fence) __threadfence_system();
  }
  out[0] = globaltimer() - t0;
}

// One thread: iters x returning atomicAdd_system on target (local or peer): out[0] = elapsed ns.
__global__ void atomic_latency_kernel(unsigned* target, int iters, unsigned long long* out, unsigned* sink) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  unsigned acc = 0;
  unsigned long long t0 = globaltimer();
  for (int i = 0; i < iters; ++i) acc += atomicAdd_system(target, 1u + (acc & 1u));  // dependent chain
  out[0] = globaltimer() - t0;
  sink[0] = acc;
}

// One thread reads %globaltimer n times back to back.
__global__ void timer_kernel(unsigned long long* out, int n) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  for (int i = 0; i < n; ++i) out[i] = globaltimer();
}

// One thread writes %globaltimer into slot[0]: an almost empty kernel that says when it ran.
__global__ void stamp_kernel(unsigned long long* slot) {
  if (threadIdx.x == 0 && blockIdx.x == 0) slot[0] = globaltimer();
}

// One thread spins until %globaltimer has advanced by ns (capped at 1 s): holds a stream while the host
// enqueues the work to be timed behind it, so that host launch overhead stays out of the timed region.
__global__ void sleep_kernel(unsigned long long ns) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  if (ns > 1000000000ull) ns = 1000000000ull;
  unsigned long long end = globaltimer() + ns;
  while (globaltimer() < end) {
  }
}

// ---- The L2-to-SM read rate (ctahw.l2rate): bulk copies (TMA) of an L2-resident buffer into shared memory ----
//
// One thread per CTA runs a `stages`-deep ring of shared-memory stages of own_bytes + shared_bytes each, as a GEMM
// mainloop's producer does, with nothing consuming the data: each stage's own part is one bulk copy this CTA issues
// for itself (one copy, or two: an A part and a W part of w_bytes); its shared part is split over the CLUSTER CTAs of
// the cluster, each copying its 1/CLUSTER share with
// .multicast::cluster into every CTA of it (a 2x1 GEMM's W tile, a 1x2's A tile). Every CTA of a cluster hands a
// stage back to every other one (the `empty` barrier, count CLUSTER) before any CTA refills it, as CUTLASS's
// pipelines do. A stage's source is a slot of the buffer chosen from the iteration and a key: the own part's key is
// blockIdx.x / share (share > 1: groups of CTAs read the same lines at about the same time, as a panel's sharers do),
// the W part's (groups > 0) blockIdx.x % groups + kL2RateWKey (share = groups = N tiles a row: a row-order GEMM's first
// wave, A shared along a row-block, W down a column), the shared part's the cluster's id. Every wait is bounded by a
// %globaltimer deadline (err[0] = 1 + stage).
// After the ring, the CTA compares its last stage with the buffer (err[1] += words that differ: a multicast that
// landed in the wrong place shows there). stamps, per CTA: start ns, end ns, SM id.
constexpr int kL2RateMaxStages = 8;
constexpr unsigned kL2RateSlotKey = 37u;  // slots between the keys' first reads (a prime: the keys spread)
constexpr unsigned kL2RateWKey = 7919u;   // the W part's keys start here: not the A part's

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

__device__ __forceinline__ bool mbar_done(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}

// Bounded wait for the phase of parity `parity` to complete; false at the deadline.
__device__ __forceinline__ bool mbar_wait(unsigned bar, unsigned parity, unsigned long long deadline) {
  while (!mbar_done(bar, parity)) {
    if (globaltimer() > deadline) return false;
  }
  return true;
}

// Arrive on the barrier at the same shared-memory offset in CTA `rank` of this cluster.
__device__ __forceinline__ void mbar_arrive_rank(unsigned bar, unsigned rank) {
  asm volatile(
      "{\n\t.reg .b32 ra;\n\t"
      "mapa.shared::cluster.u32 ra, %0, %1;\n\t"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n\t}" ::"r"(bar),
      "r"(rank)
      : "memory");
}

__device__ __forceinline__ void bulk_copy(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

__device__ __forceinline__ void bulk_copy_multicast(unsigned dst, const void* src, unsigned bytes, unsigned bar,
                                                    unsigned short mask) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], "
      "%4;" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "h"(mask)
      : "memory");
}

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned cluster_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
  return r;
}

__device__ __forceinline__ unsigned sm_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// The byte offset in the buffer of slot (key * kL2RateSlotKey + iter) mod (buf_bytes / bytes) of `bytes` each.
__device__ __forceinline__ unsigned long long slot_offset(unsigned key, long long iter, unsigned bytes,
                                                          unsigned long long buf_bytes) {
  unsigned long long slots = buf_bytes / bytes;
  return ((static_cast<unsigned long long>(key) * kL2RateSlotKey + static_cast<unsigned long long>(iter)) % slots) *
         bytes;
}

template <int CLUSTER>
__device__ void l2_rate_body(const unsigned char* buf, unsigned long long buf_bytes, unsigned own_bytes,
                             unsigned shared_bytes, int stages, long long iters, int share, unsigned w_bytes,
                             int groups, unsigned long long timeout_ns, unsigned long long* stamps, int* err) {
  extern __shared__ __align__(128) unsigned char ring[];
  __shared__ __align__(8) unsigned long long full[kL2RateMaxStages], empty[kL2RateMaxStages];
  const unsigned rank = CLUSTER > 1 ? cluster_rank() : 0u;
  const unsigned cid = CLUSTER > 1 ? cluster_id() : blockIdx.x;
  const unsigned own_key = blockIdx.x / static_cast<unsigned>(share);
  const unsigned w_key = groups > 0 ? blockIdx.x % static_cast<unsigned>(groups) + kL2RateWKey : 0u;
  const unsigned a_bytes = own_bytes - w_bytes;  // the launcher checks w_bytes <= own_bytes (0 without groups)
  const unsigned stage_bytes = own_bytes + shared_bytes;
  const unsigned part = shared_bytes / CLUSTER;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(smem_addr(&full[s]), 1u);
      mbar_init(smem_addr(&empty[s]), static_cast<unsigned>(CLUSTER));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (CLUSTER > 1) cluster_sync();  // every CTA's barriers are initialized before any multicast or remote arrive
  const unsigned long long t0 = globaltimer();
  if (threadIdx.x == 0) {
    const unsigned long long deadline = t0 + timeout_ns;
    const unsigned base = smem_addr(ring);
    auto issue = [&](long long i) {
      const int s = static_cast<int>(i % stages);
      const unsigned dst = base + static_cast<unsigned>(s) * stage_bytes, bar = smem_addr(&full[s]);
      mbar_expect_tx(bar, stage_bytes);
      if (a_bytes) bulk_copy(dst, buf + slot_offset(own_key, i, a_bytes, buf_bytes), a_bytes, bar);
      if (w_bytes) bulk_copy(dst + a_bytes, buf + slot_offset(w_key, i, w_bytes, buf_bytes), w_bytes, bar);
      if (shared_bytes) {
        const unsigned char* src = buf + slot_offset(cid, i, shared_bytes, buf_bytes) + rank * part;
        if (CLUSTER > 1) {
          bulk_copy_multicast(dst + own_bytes + rank * part, src, part, bar,
                              static_cast<unsigned short>((1u << CLUSTER) - 1u));
        } else {
          bulk_copy(dst + own_bytes, src, part, bar);
        }
      }
    };
    for (long long i = 0; i < stages && i < iters; ++i) issue(i);
    for (long long i = 0; i < iters; ++i) {
      const int s = static_cast<int>(i % stages);
      const unsigned parity = static_cast<unsigned>((i / stages) & 1);
      if (!mbar_wait(smem_addr(&full[s]), parity, deadline)) {
        atomicCAS(err, 0, 1 + s);
        break;
      }
      for (unsigned r = 0; r < static_cast<unsigned>(CLUSTER); ++r) {  // this CTA first
        mbar_arrive_rank(smem_addr(&empty[s]), (rank + r) % static_cast<unsigned>(CLUSTER));
      }
      if (i + stages < iters) {
        if (!mbar_wait(smem_addr(&empty[s]), parity, deadline)) {
          atomicCAS(err, 0, 1 + s);
          break;
        }
        issue(i + stages);
      }
    }
    stamps[3 * blockIdx.x] = t0;
    stamps[3 * blockIdx.x + 1] = globaltimer();
    stamps[3 * blockIdx.x + 2] = sm_id();
  }
  __shared__ int failed;
  if (threadIdx.x == 0) failed = *reinterpret_cast<volatile int*>(err);  // one read: every lane takes one branch
  __syncthreads();
  if (failed == 0 && iters > 0) {  // the last stage against the buffer
    const long long last = iters - 1;
    const unsigned char* stage = ring + static_cast<unsigned>(last % stages) * stage_bytes;
    const uint4* own = reinterpret_cast<const uint4*>(buf + slot_offset(own_key, last, a_bytes ? a_bytes : 16u,
                                                                        buf_bytes));
    const uint4* wpart = reinterpret_cast<const uint4*>(buf + slot_offset(w_key, last, w_bytes ? w_bytes : 16u,
                                                                          buf_bytes));
    const uint4* shared = reinterpret_cast<const uint4*>(
        buf + slot_offset(cid, last, shared_bytes ? shared_bytes : 16u, buf_bytes));
    int bad = 0;
    for (unsigned w = threadIdx.x; w < stage_bytes / 16; w += blockDim.x) {
      const uint4 got = reinterpret_cast<const uint4*>(stage)[w];
      const uint4 want = w < a_bytes / 16     ? own[w]
                         : w < own_bytes / 16 ? wpart[w - a_bytes / 16]
                                              : shared[w - own_bytes / 16];
      bad += (got.x != want.x) | (got.y != want.y) | (got.z != want.z) | (got.w != want.w);
    }
    if (bad) atomicAdd(err + 1, bad);
  }
  __syncthreads();
  if (CLUSTER > 1) cluster_sync();  // no CTA leaves while another may still arrive on its barriers
}

__global__ void l2_rate_kernel_1(const unsigned char* buf, unsigned long long buf_bytes, unsigned own_bytes,
                                 unsigned shared_bytes, int stages, long long iters, int share, unsigned w_bytes,
                                 int groups, unsigned long long timeout_ns, unsigned long long* stamps, int* err) {
  l2_rate_body<1>(buf, buf_bytes, own_bytes, shared_bytes, stages, iters, share, w_bytes, groups, timeout_ns, stamps,
                  err);
}

__global__ void __cluster_dims__(2, 1, 1)
    l2_rate_kernel_2(const unsigned char* buf, unsigned long long buf_bytes, unsigned own_bytes, unsigned shared_bytes,
                     int stages, long long iters, int share, unsigned w_bytes, int groups,
                     unsigned long long timeout_ns, unsigned long long* stamps, int* err) {
  l2_rate_body<2>(buf, buf_bytes, own_bytes, shared_bytes, stages, iters, share, w_bytes, groups, timeout_ns, stamps,
                  err);
}

// ---- The row-order first wave by TMA tensor copies (ctahw.l2rate's tile cases) ----
//
// As the 128x256x64 bf16 GEMM's mainloop loads: per k-step one 2-D tensor copy of A's box (64 x 128 elements: 16 KiB)
// and one of W's (64 x 256: 32 KiB) into a 48 KiB stage, 128-byte swizzled, a `stages`-deep ring that one thread
// refills as soon as a stage lands (nothing consumes it). CTA b reads its A box from row-block b / a_div of an A matrix
// and its W box from column b % w_mod of a W matrix (a_div = w_mod = n: tile (b / n, b % n) of a row-order first wave
// with n tiles a row; a_div = 1 or w_mod = blocks: no CTA shares its A or its W), CTA b's k-step starting at
// b x k_phase (0: every CTA in step with the others, its sharers reading each line at once), the k-step
// cycling through k_elems / 64 steps (the buffers stay in L2). After the ring, the sum of the last stage's words (a
// swizzle permutes them, a sum does not mind) is compared with the sum of its source boxes (err[1] counts the CTAs
// whose sums differ); every wait bounded (err[0] = 1 + stage). stamps as l2_rate_body's.
constexpr int kTileK = 64;                                   // elements a k-step: one 128-byte swizzled row
constexpr int kTileA = 128, kTileW = 256;                    // rows of the A and W boxes
constexpr unsigned kTileStage = (kTileA + kTileW) * kTileK * 2;  // 48 KiB
constexpr int kTileMaxStages = 4;                            // 4 x 48 KiB + the 1 KiB alignment in 227 KiB

__device__ __forceinline__ void tensor_copy_2d(unsigned dst, const CUtensorMap* map, int c0, int c1, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::
          "r"(dst),
      "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// The sum of the words of rows [row0, row0 + rows) x elements [k, k + 64) of a bf16 matrix k_elems wide, over a warp.
__device__ unsigned box_sum(const unsigned* words, int k_elems, int row0, int rows, int k) {
  unsigned sum = 0;
  for (int w = threadIdx.x; w < rows * (kTileK / 2); w += blockDim.x) {
    const int r = w / (kTileK / 2), c = w % (kTileK / 2);
    sum += words[static_cast<size_t>(row0 + r) * (k_elems / 2) + k / 2 + c];
  }
  return sum;
}

__global__ void __launch_bounds__(32) l2_tile_kernel(const __grid_constant__ CUtensorMap a_map,
                                                     const __grid_constant__ CUtensorMap w_map, const unsigned* a_words,
                                                     const unsigned* w_words, int k_elems, int a_div, int w_mod,
                                                     int k_phase, int stages,
                                                     long long iters, unsigned long long timeout_ns,
                                                     unsigned long long* stamps, int* err) {
  extern __shared__ unsigned char tile_raw[];
  unsigned char* ring = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(tile_raw) + 1023) &
                                                         ~static_cast<uintptr_t>(1023));  // 128B swizzle: 1 KiB
  __shared__ __align__(8) unsigned long long full[kTileMaxStages];
  __shared__ int failed;
  const int row = static_cast<int>(blockIdx.x) / a_div, col = static_cast<int>(blockIdx.x) % w_mod;
  const int ksteps = k_elems / kTileK;
  const long long phase = static_cast<long long>(blockIdx.x) * k_phase % ksteps;  // this CTA's first k-step
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) mbar_init(smem_addr(&full[s]), 1u);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();
  const unsigned long long t0 = globaltimer();
  if (threadIdx.x == 0) {
    const unsigned long long deadline = t0 + timeout_ns;
    const unsigned base = smem_addr(ring);
    auto issue = [&](long long i) {
      const int s = static_cast<int>(i % stages);
      const unsigned dst = base + static_cast<unsigned>(s) * kTileStage, bar = smem_addr(&full[s]);
      const int k = static_cast<int>((i + phase) % ksteps) * kTileK;
      mbar_expect_tx(bar, kTileStage);
      tensor_copy_2d(dst, &a_map, k, row * kTileA, bar);
      tensor_copy_2d(dst + kTileA * kTileK * 2, &w_map, k, col * kTileW, bar);
    };
    for (long long i = 0; i < stages && i < iters; ++i) issue(i);
    for (long long i = 0; i < iters; ++i) {
      const int s = static_cast<int>(i % stages);
      if (!mbar_wait(smem_addr(&full[s]), static_cast<unsigned>((i / stages) & 1), deadline)) {
        atomicCAS(err, 0, 1 + s);
        break;
      }
      if (i + stages < iters) issue(i + stages);
    }
    stamps[3 * blockIdx.x] = t0;
    stamps[3 * blockIdx.x + 1] = globaltimer();
    stamps[3 * blockIdx.x + 2] = sm_id();
    failed = *reinterpret_cast<volatile int*>(err);
  }
  __syncthreads();
  if (failed == 0) {  // the last stage's words against its source boxes, as sums
    const long long last = iters - 1;
    const int k = static_cast<int>((last + phase) % ksteps) * kTileK;
    const unsigned* stage = reinterpret_cast<const unsigned*>(ring + static_cast<unsigned>(last % stages) * kTileStage);
    unsigned got = 0;
    for (unsigned w = threadIdx.x; w < kTileStage / 4; w += blockDim.x) got += stage[w];
    unsigned want = box_sum(a_words, k_elems, row * kTileA, kTileA, k) + box_sum(w_words, k_elems, col * kTileW,
                                                                               kTileW, k);
    for (int o = 16; o > 0; o >>= 1) {
      got += __shfl_xor_sync(0xffffffffu, got, o);
      want += __shfl_xor_sync(0xffffffffu, want, o);
    }
    if (threadIdx.x == 0 && got != want) atomicAdd(err + 1, 1);
  }
}

}  // namespace

extern "C" {

int ctahw_probes_abi_version() { return 6; }

int ctahw_probe_store(void* dst, long long bytes, int blocks, int threads, unsigned seed, cudaStream_t stream) {
  store_kernel<<<blocks, threads, 0, stream>>>(static_cast<uint4*>(dst), static_cast<size_t>(bytes) / 16, seed);
  return launch_code();
}

int ctahw_probe_pingpong(void* my_flag, void* peer_flag, int iters, int role, int use_atomic, void* stamps,
                         unsigned long long timeout_ns, void* err, cudaStream_t stream) {
  pingpong_kernel<<<1, 32, 0, stream>>>(static_cast<volatile unsigned*>(my_flag), static_cast<unsigned*>(peer_flag),
                                        iters, role, use_atomic, static_cast<unsigned long long*>(stamps),
                                        timeout_ns, static_cast<int*>(err));
  return launch_code();
}

int ctahw_probe_fence(void* target, int iters, int do_fence, void* out, cudaStream_t stream) {
  fence_kernel<<<1, 32, 0, stream>>>(static_cast<unsigned*>(target), iters, do_fence,
                                     static_cast<unsigned long long*>(out));
  return launch_code();
}

int ctahw_probe_atomic_latency(void* target, int iters, void* out, void* sink, cudaStream_t stream) {
  atomic_latency_kernel<<<1, 32, 0, stream>>>(static_cast<unsigned*>(target), iters,
                                              static_cast<unsigned long long*>(out), static_cast<unsigned*>(sink));
  return launch_code();
}

int ctahw_probe_timer(void* out, int n, cudaStream_t stream) {
  timer_kernel<<<1, 32, 0, stream>>>(static_cast<unsigned long long*>(out), n);
  return launch_code();
}

int ctahw_probe_sleep(unsigned long long ns, cudaStream_t stream) {
  sleep_kernel<<<1, 32, 0, stream>>>(ns);
  return launch_code();
}

int ctahw_probe_stamp(void* slot, cudaStream_t stream) {
  stamp_kernel<<<1, 32, 0, stream>>>(static_cast<unsigned long long*>(slot));
  return launch_code();
}

// The L2-to-SM read rate probe (l2_rate_body above). Returns -cudaErrorInvalidValue for a case it cannot run:
// cluster not 1 or 2, blocks not a positive multiple of it, stages not in 1..8, a part not a positive multiple of
// 16 bytes (own_bytes may be 0, shared_bytes / cluster may be 0, not both), a stage larger than the buffer, share < 1,
// iters < 1, groups < 0, or a W part (w_bytes) that is not a multiple of 16 within own_bytes, or is given without
// groups or groups without it. Sets the kernel's dynamic shared-memory limit to the ring's size (stages x stage bytes).
int ctahw_probe_l2_rate(const void* buf, unsigned long long buf_bytes, int own_bytes, int shared_bytes, int cluster,
                        int stages, long long iters, int share, int w_bytes, int groups, int blocks,
                        unsigned long long timeout_ns,
                        void* stamps, void* err, cudaStream_t stream) {
  const bool parts_ok = own_bytes >= 0 && shared_bytes >= 0 && own_bytes % 16 == 0 &&
                        (cluster == 1 || cluster == 2) && shared_bytes % (16 * cluster) == 0 &&
                        own_bytes + shared_bytes > 0;
  if (!parts_ok || blocks < 1 || blocks % cluster || stages < 1 || stages > kL2RateMaxStages || share < 1 ||
      iters < 1 || static_cast<unsigned long long>(own_bytes) > buf_bytes ||
      static_cast<unsigned long long>(shared_bytes) > buf_bytes || groups < 0 || w_bytes < 0 || w_bytes % 16 ||
      w_bytes > own_bytes || (groups > 0) != (w_bytes > 0)) {
    return -static_cast<int>(cudaErrorInvalidValue);
  }
  const int smem = stages * (own_bytes + shared_bytes);
  auto kernel = cluster == 2 ? l2_rate_kernel_2 : l2_rate_kernel_1;
  cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return -static_cast<int>(e);
  kernel<<<blocks, 32, smem, stream>>>(static_cast<const unsigned char*>(buf), buf_bytes,
                                       static_cast<unsigned>(own_bytes), static_cast<unsigned>(shared_bytes), stages,
                                       iters, share, static_cast<unsigned>(w_bytes), groups, timeout_ns,
                                       static_cast<unsigned long long*>(stamps),
                                       static_cast<int*>(err));
  return launch_code();
}

// The row-order first wave by TMA tensor copies (l2_tile_kernel above): a and w are bf16 matrices k_elems wide with
// ceil(blocks / a_div) x 128 and w_mod x 256 rows. Returns -cudaErrorInvalidValue for a case it cannot run (a_div or
// w_mod < 1, blocks < 1,
// k_elems not a positive multiple of 64, stages not in 1..4, iters < 1), before any CUDA call; the tensor maps are
// encoded through cudaGetDriverEntryPointByVersion (the library does not link libcuda); a failed encode returns
// -cudaErrorInvalidValue too. Sets the kernel's dynamic shared-memory limit to the ring's size.
int ctahw_probe_l2_tile(const void* a, const void* w, int k_elems, int a_div, int w_mod, int k_phase, int blocks,
                        int stages, long long iters, unsigned long long timeout_ns, void* stamps, void* err,
                        cudaStream_t stream) {
  if (a_div < 1 || w_mod < 1 || k_phase < 0 || blocks < 1 || k_elems < kTileK || k_elems % kTileK || stages < 1 ||
      stages > kTileMaxStages || iters < 1) {
    return -static_cast<int>(cudaErrorInvalidValue);
  }
  static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
  if (encode == nullptr) {
    cudaDriverEntryPointQueryResult q;
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&encode),
                                                     12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || encode == nullptr) {
      encode = nullptr;
      return e != cudaSuccess ? -static_cast<int>(e) : -static_cast<int>(cudaErrorInvalidValue);
    }
  }
  const cuuint64_t rows_a = static_cast<cuuint64_t>((blocks + a_div - 1) / a_div) * kTileA;
  const cuuint64_t rows_w = static_cast<cuuint64_t>(w_mod) * kTileW;
  CUtensorMap a_map, w_map;
  const cuuint32_t strides1[2] = {1, 1};
  auto make = [&](CUtensorMap* map, const void* base, cuuint64_t rows, cuuint32_t box_rows) {
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k_elems), rows};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k_elems) * 2};
    const cuuint32_t box[2] = {static_cast<cuuint32_t>(kTileK), box_rows};
    return encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, strides, box, strides1,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  };
  if (make(&a_map, a, rows_a, kTileA) != CUDA_SUCCESS || make(&w_map, w, rows_w, kTileW) != CUDA_SUCCESS) {
    return -static_cast<int>(cudaErrorInvalidValue);
  }
  const int smem = stages * static_cast<int>(kTileStage) + 1024;
  cudaError_t e = cudaFuncSetAttribute(l2_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (e != cudaSuccess) return -static_cast<int>(e);
  l2_tile_kernel<<<blocks, 32, smem, stream>>>(a_map, w_map, static_cast<const unsigned*>(a),
                                               static_cast<const unsigned*>(w), k_elems, a_div, w_mod, k_phase,
                                               stages, iters,
                                               timeout_ns,
                                               static_cast<unsigned long long*>(stamps), static_cast<int*>(err));
  return launch_code();
}

}  // extern "C"
