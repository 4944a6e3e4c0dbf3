// ctapipe.cuh: the CTA-pipelining protocol's device functions, shared by every kernel variant.
//
// Objects (all in the consumer GPU's memory, one set per ctasim Pipe):
//   counters[dep]  u32, monotonic. A producer tile adds 1 to each counter of its prod_dep row. In epoch e
//                  (1, 2, ...) counter dep is complete when it reaches e * threshold[dep]; the update that
//                  makes it so (old + 1 == e * threshold) pushes the counter's consumer tiles.
//   tail           u32, monotonic: slots reserved so far over all epochs. Epoch e owns the reservations
//                  [(e-1) * capacity, e * capacity); slot = reservation - (e-1) * capacity.
//   slots[capacity] u64 words (epoch << 32) | tile: a slot is published in epoch e when its word carries e.
//   head           u32, monotonic: consumer CTAs claim reservations in the same way.
// Nothing is reset between runs: the host passes the epoch (1 for fresh zeroed objects, then 2, 3, ...).
//
// The no-queue ("wait") consumer (mode 2, ctasim's tile_source "static" for a consumer) walks a fixed tile order
// and waits on each tile's counter instead of popping: its producer then only counts (a release reduction, no
// returned value, no push), and the consumer's CTA reads counters[consumer_dep[tile]] with acquire loads until
// it reaches epoch * threshold.
//
// Ordering (docs/protocol.md; ctasim/protocol):
//   producer: TMA stores of the tile -> cp.async.bulk.wait_group 0 (complete, not .read) and
//   fence.proxy.async.global by every storing thread (complete_stores) -> CTA barrier among them -> one
//   thread: fence.proxy.async.global (again, for its own); atom.acq_rel.sys.add on each
//   counter (release of the tile's data; acquire of the other producers' releases when it completes);
//   the completing update reserves slots (atom.relaxed.sys.add on tail), fence.acq_rel.sys, then relaxed
//   sys-scope stores of the slot words (release pattern: one fence, n stores).
//   consumer: local atomic on head -> ld.acquire.sys spin on its slot (bounded, __nanosleep back-off) ->
//   fence.proxy.async.global before the CTA's TMA loads read the producer's data.
//   wait consumer: producer as above up to the counters, which it updates with red.release.sys.add (nothing to
//   push); consumer: ld.acquire.sys spin on its tile's counter (bounded) -> fence.proxy.async.global.
//
// Every spin is bounded by timeout_ns of %globaltimer: on timeout the CTA writes an error record and
// gives up its tile (the kernel then exits without computing it); the host raises. Error buffer (int32):
//   [0] number of errors, [1] code of the first, [2] its CTA, [3] its counter/slot, [4..5] the value seen
//   (lo, hi), [6] the epoch expected.
// Clusters: a cluster of n CTAs whose tiles come from the queue claims n consecutive slots at once (pop_n);
// its leader pops and the cluster's CTAs meet at a cluster barrier (kernels/ctapipe_gemm.cuh).
#pragma once

#include <cstdint>

namespace ctapipe {

enum ErrorCode : int {
  kOk = 0,
  kPopTimeout = 1,      // a consumer CTA waited timeout_ns for its slot: index = slot, seen = slot word
  kHeadOverflow = 2,    // more pops than capacity in this epoch: index = head reservation
  kSlotFromFuture = 3,  // a slot word carried a later epoch than expected (missing host ordering)
  kCounterOverrun = 4,  // a counter went past epoch * threshold: index = dep, seen = counter value
  kTailOverflow = 5,    // more pushes than capacity in this epoch: index = tail reservation
  kTooManyDeps = 6,     // one producer tile completed more counters than signal() can hold: index = dep
  kClusterMismatch = 7, // a cluster's popped tiles cannot share a multicast operand: index = slot, seen = tiles
  kWaitTimeout = 8,     // a wait consumer's counter never completed: index = dep, seen = counter value
  kTicketOverflow = 9,  // a chain kernel's ticket outside this epoch's range: index = ticket, seen = ticket
};

// Per-tile stamp record (u64 words) written when tracing is compiled in.
enum TileStamp : int {
  kStampStart = 0,        // CTA began (before the pop / static lookup)
  kStampAcquire = 1,      // tile id known (slot read with acquire), inputs visible
  kStampMainloopEnd = 2,  // mainloop (wgmma) done, before the epilogue
  kStampEpilogue = 3,     // epilogue math done, TMA stores issued
  kStampStoreEnd = 4,     // the tile's stores complete (wait_group 0 + CTA barrier)
  kStampSignal = 5,       // counter updates (and pushes they completed) issued
  kStampWhere = 6,        // (smid << 32) | cta_linear()
  kStampSlot = 7,         // work-queue slot popped, or ~0 for a static tile
  kTileStampWords = 8,
};

// Everything one kernel needs to take part in the protocol: the launcher's int64 descriptor, one field per entry of
// this list, in this order (name, type, default). The host fills it from a ctasim Plan (ctahw/runner.py, whose
// DESC_FIELDS is read from this list; a loaded library's ctahw_ctapipe_desc_names() must match it by name).
#define CTAPIPE_DESC_FIELDS(X)                                                                                   \
  X(mode, int, 0)                            /* 0 static (order[cta_linear()]); 1 pop the inbound queue; 2 wait */ \
  X(order, const int*, nullptr)              /* static tile order (modes 0 and 2) */                             \
  X(num_tiles, int, 0)                                                                                           \
  X(tiles_n, int, 1)                                                                                             \
  X(in_slots, unsigned long long*, nullptr)  /* inbound (this kernel consumes): on this GPU */                    \
  X(in_head, unsigned*, nullptr)                                                                                 \
  X(in_capacity, int, 0)                                                                                         \
  X(out_counters, unsigned*, nullptr)        /* outbound (this kernel produces): on the consumer GPU */          \
  X(out_slots, unsigned long long*, nullptr)                                                                     \
  X(out_tail, unsigned*, nullptr)                                                                                \
  X(out_capacity, int, 0)                                                                                        \
  X(prod_dep_ptr, const int*, nullptr)                                                                           \
  X(prod_dep_idx, const int*, nullptr)                                                                           \
  X(threshold, const int*, nullptr)                                                                              \
  X(dep_tile_ptr, const int*, nullptr)                                                                           \
  X(dep_tile_idx, const int*, nullptr)                                                                           \
  X(epoch, unsigned, 1)                                                                                          \
  X(timeout_ns, long long, 2000000000LL)                                                                         \
  X(error, int*, nullptr)                    /* on this GPU */                                                   \
  X(stamps, unsigned long long*, nullptr)    /* [num_tiles][kTileStampWords], on this GPU */                     \
  X(push_stamps, unsigned long long*, nullptr) /* [consumer tiles][2]: t_push, slot (outbound), on this GPU */   \
  X(zero_stamps, unsigned long long*, nullptr) /* [deps]: counter completed (outbound), on this GPU */           \
  X(stall_row, int, -1)                      /* debug: producer tiles of this row-block never signal */          \
  X(cta_tile, int*, nullptr)                 /* [2 * num_tiles] scratch: each CTA's tile id and slot */          \
  X(in_counters, const unsigned*, nullptr)   /* inbound counters of a wait consumer (mode 2): on this GPU */     \
  X(in_threshold, const int*, nullptr)                                                                           \
  X(in_consumer_dep, const int*, nullptr)    /* [num_tiles]: the counter each tile waits on */

struct Params {
#define CTAPIPE_MEMBER(name, type, init) type name = init;
  CTAPIPE_DESC_FIELDS(CTAPIPE_MEMBER)
#undef CTAPIPE_MEMBER
};

enum Mode : int { kModeStatic = 0, kModeQueue = 1, kModeWait = 2 };

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

__device__ __forceinline__ unsigned ld_acquire_gpu_u32(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A release reduction at GPU scope: producer and consumer CTAs on the same GPU (the chain kernel).
__device__ __forceinline__ void red_add_release_gpu(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ unsigned long long ld_acquire_sys(const unsigned long long* p) {
  unsigned long long v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ unsigned ld_acquire_sys_u32(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// A release reduction: the update is ordered after this thread's (and, cumulatively, what it observed of its
// CTA's) writes, and nothing comes back, so the thread does not wait for the NVLink round trip.
__device__ __forceinline__ void red_add_release_sys(unsigned* p, unsigned v) {
  asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void st_relaxed_sys(unsigned long long* p, unsigned long long v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned atom_add_acq_rel_sys(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.acq_rel.sys.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

__device__ __forceinline__ unsigned atom_add_relaxed_sys(unsigned* p, unsigned v) {
  unsigned old;
  asm volatile("atom.relaxed.sys.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}

__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

// Generic-proxy <-> async-proxy (TMA) ordering for global memory.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// Wait until every bulk async-group (TMA store) this thread committed has completed its writes.
__device__ __forceinline__ void bulk_wait_all_complete() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// Every thread that issued a tile's TMA stores, before it meets the signalling thread: wait until its stores are
// complete, then fence the async proxy itself (docs/protocol.md: the thread that issued the bulk stores runs the
// proxy fence; a no-op pair for threads that issued none).
__device__ __forceinline__ void complete_stores() {
  bulk_wait_all_complete();
  fence_proxy_async_global();
}

// The CTA's index in tile order: blockIdx.x for a 1-D grid, blockIdx.x * gridDim.y + blockIdx.y for a
// grid whose y dimension holds the CTAs of a 1xN cluster.
__device__ __forceinline__ int cta_linear() {
  return static_cast<int>(blockIdx.x * gridDim.y + blockIdx.y);
}

// The first error of a run wins the record; later ones only count.
__device__ __forceinline__ void record_error_at(int* error, unsigned epoch, int code, int index,
                                                unsigned long long seen) {
  if (error == nullptr) return;
  int n = atomicAdd(error, 1);
  if (n == 0) {
    error[1] = code;
    error[2] = cta_linear();
    error[3] = index;
    error[4] = static_cast<int>(seen & 0xffffffffULL);
    error[5] = static_cast<int>(seen >> 32);
    error[6] = static_cast<int>(epoch);
    __threadfence_system();
  }
}

__device__ __forceinline__ void record_error(const Params& p, int code, int index, unsigned long long seen) {
  record_error_at(p.error, p.epoch, code, index, seen);
}

// Wait (one thread) until the slots slot0 .. slot0 + n - 1 are published in this epoch, and return their tile ids in
// tiles[0..n) and the slots in slots[0..n); then fence the async proxy for the CTA's TMA loads. On error (recorded: a
// timeout, or a word of a later epoch) returns false with every tiles[i] = -1 (all or none: a cluster must never run
// half of its tiles). The acquire of every queue consumer (pop_n, claim_pop).
__device__ __forceinline__ bool acquire_slots(const Params& p, long long slot0, int n, int* tiles, int* slots) {
  const unsigned long long deadline = now_ns() + static_cast<unsigned long long>(p.timeout_ns);
  for (int i = 0; i < n; ++i) {
    const long long slot = slot0 + i;
    unsigned sleep_ns = 32;
    unsigned long long w;
    for (;;) {
      w = ld_acquire_sys(p.in_slots + slot);
      unsigned e = static_cast<unsigned>(w >> 32);
      if (e == p.epoch) break;
      if (e > p.epoch || now_ns() > deadline) {
        record_error(p, e > p.epoch ? kSlotFromFuture : kPopTimeout, static_cast<int>(slot), w);
        for (int j = 0; j < n; ++j) tiles[j] = -1;
        return false;
      }
      __nanosleep(sleep_ns);
      if (sleep_ns < 256) sleep_ns *= 2;
    }
    tiles[i] = static_cast<int>(w & 0xffffffffULL);
    slots[i] = static_cast<int>(slot);
  }
  fence_proxy_async_global();  // the CTAs' TMA loads (async proxy) read what the acquires made visible
  return true;
}

// Consumer prologue (one thread): claim the next n head reservations at once (n = CTAs of a cluster that
// run popped tiles together), wait until each of their slots is published in this epoch, and return the
// tile ids in tiles[0..n) and the slots in slots[0..n). On error (recorded) returns false.
__device__ __forceinline__ bool pop_n(const Params& p, int n, int* tiles, int* slots) {
  unsigned h = atomicAdd(p.in_head, static_cast<unsigned>(n));
  long long slot0 = static_cast<long long>(h) - static_cast<long long>(p.epoch - 1) * p.in_capacity;
  for (int i = 0; i < n; ++i) {
    tiles[i] = -1;
    slots[i] = -1;
  }
  if (slot0 < 0 || slot0 + n > p.in_capacity) {
    record_error(p, kHeadOverflow, static_cast<int>(h), h);
    return false;
  }
  return acquire_slots(p, slot0, n, tiles, slots);
}

// A persistent consumer's pop (variant (b), one thread): claim the next head reservation of this epoch with a bounded
// compare-and-swap that never passes epoch * capacity (so a CTA that finds the queue exhausted leaves the head at
// exactly epoch * capacity for the next run), then acquire its slot as pop_n does. 1: claimed (tile, slot out);
// 0: the queue is exhausted for this epoch; -1: error recorded.
__device__ __forceinline__ int claim_pop(const Params& p, int* tile, int* slot) {
  *tile = -1;
  *slot = -1;
  const unsigned lo = (p.epoch - 1) * static_cast<unsigned>(p.in_capacity);
  const unsigned hi = p.epoch * static_cast<unsigned>(p.in_capacity);
  unsigned h = *reinterpret_cast<volatile unsigned*>(p.in_head);
  for (int tries = 0;; ++tries) {
    if (h >= hi) return 0;
    if (h < lo) {  // the previous epoch's pops are not all done: runs not ordered on the host
      record_error(p, kHeadOverflow, static_cast<int>(h), h);
      return -1;
    }
    unsigned prev = atomicCAS(p.in_head, h, h + 1);
    if (prev == h) break;
    h = prev;
    if (tries > (1 << 20)) {
      record_error(p, kHeadOverflow, static_cast<int>(h), h);
      return -1;
    }
  }
  return acquire_slots(p, static_cast<long long>(h - lo), 1, tile, slot) ? 1 : -1;
}

// Wait consumer prologue (one thread): the tiles order[first .. first+n) of the CTAs first .. first+n-1 (a
// cluster's CTAs), each once its inbound counter reached epoch * threshold. Returns false after recording an
// error, with every tiles[i] = -1 (all or none, as pop_n). slots[i] = -1 (no queue).
__device__ __forceinline__ bool wait_n(const Params& p, int first, int n, int* tiles, int* slots) {
  const unsigned long long deadline = now_ns() + static_cast<unsigned long long>(p.timeout_ns);
  for (int i = 0; i < n; ++i) {
    tiles[i] = first + i < p.num_tiles ? p.order[first + i] : -1;
    slots[i] = -1;
  }
  for (int i = 0; i < n; ++i) {
    if (tiles[i] < 0) continue;
    const int dep = p.in_consumer_dep[tiles[i]];
    const unsigned target = p.epoch * static_cast<unsigned>(p.in_threshold[dep]);
    unsigned sleep_ns = 32;
    unsigned v;
    for (;;) {
      v = ld_acquire_sys_u32(p.in_counters + dep);
      if (v >= target) break;
      if (now_ns() > deadline) {
        record_error(p, kWaitTimeout, dep, v);
        for (int j = 0; j < n; ++j) tiles[j] = -1;
        return false;
      }
      __nanosleep(sleep_ns);
      if (sleep_ns < 256) sleep_ns *= 2;
    }
    if (v > target) {  // runs are ordered on the host: the next epoch's producer cannot have started
      record_error(p, kCounterOverrun, dep, v);
      for (int j = 0; j < n; ++j) tiles[j] = -1;
      return false;
    }
  }
  fence_proxy_async_global();  // the CTAs' TMA loads (async proxy) read what the acquires made visible
  return true;
}

// The tile-acquire prologue of every scheduler whose CTA's first tile one thread takes (a pop, a wait, a ticket),
// called by every thread of the CTA before any role split: thread 0 runs take_tile() (the tile id, or -1 for none or
// after a recorded error), writes it to the CTA's scratch word, then runs stamp_tile(tile); the CTA meets at
// __syncthreads and every thread returns the word. The word is global memory (Params::cta_tile + the CTA), not a
// static __shared__ variable: static shared memory shifts CUTLASS's dynamic shared storage off the alignment its
// swizzled TMA buffers need (ctapipe_gemm.cuh). (The parameters' names are no function's: ctasim.protocol.kernelops
// expands calls by name.)
template <class TakeTile, class StampTile>
__device__ __forceinline__ int acquire_broadcast(int* word, TakeTile take_tile, StampTile stamp_tile) {
  volatile int* s_tile = word;
  if (threadIdx.x == 0) {
    const int tile = take_tile();
    *s_tile = tile;
    stamp_tile(tile);
  }
  __syncthreads();
  return *s_tile;
}

// One CTA's pop: the tile id, or -1 after recording an error. *slot_out gets the slot.
__device__ __forceinline__ int pop(const Params& p, int* slot_out) {
  int tile;
  pop_n(p, 1, &tile, slot_out);
  return tile;
}

// Push counter dep's consumer tiles into the outbound queue (one thread, after the completing update).
template <bool Trace>
__device__ __forceinline__ void push(const Params& p, int dep) {
  const int b = p.dep_tile_ptr[dep], n = p.dep_tile_ptr[dep + 1] - b;
  if (n <= 0) return;
  unsigned t = atom_add_relaxed_sys(p.out_tail, static_cast<unsigned>(n));
  long long base = static_cast<long long>(t) - static_cast<long long>(p.epoch - 1) * p.out_capacity;
  if (base < 0 || base + n > p.out_capacity) {
    record_error(p, kTailOverflow, static_cast<int>(t), t);
    return;
  }
  fence_acq_rel_sys();  // release: everything acquired by the completing update, before the slot words
  // Stamp before the stores: a slot can be seen (and popped) as soon as its store lands, before the loop ends.
  unsigned long long tp = 0;
  if constexpr (Trace) tp = now_ns();
  const unsigned long long tag = static_cast<unsigned long long>(p.epoch) << 32;
  for (int i = 0; i < n; ++i) {
    int tile = p.dep_tile_idx[b + i];
    st_relaxed_sys(p.out_slots + base + i, tag | static_cast<unsigned>(tile));
  }
  if constexpr (Trace) {
    for (int i = 0; i < n; ++i) {
      int tile = p.dep_tile_idx[b + i];
      p.push_stamps[2 * tile] = tp;
      p.push_stamps[2 * tile + 1] = static_cast<unsigned long long>(base + i);
    }
  }
}

// Producer epilogue (one thread, after the tile's stores completed and the storing threads met): fence the
// async-proxy writes, count the tile on each of its counters, then push what became complete. Returns the
// time the counter updates took effect (the tile's t_signal; also the completion time of the counters it
// completed), 0 when not tracing.
template <bool Trace>
__device__ __forceinline__ unsigned long long signal(const Params& p, int tile) {
  constexpr int kMaxDeps = 8;  // counters one tile may complete (a producer row-block spans few consumer ones)
  int done[kMaxDeps];
  int ndone = 0;
  fence_proxy_async_global();
  if (p.out_slots == nullptr) {  // the consumer waits on the counters (mode 2): count, nothing to push
    for (int j = p.prod_dep_ptr[tile]; j < p.prod_dep_ptr[tile + 1]; ++j)
      red_add_release_sys(p.out_counters + p.prod_dep_idx[j], 1u);
    return Trace ? now_ns() : 0ULL;
  }
  for (int j = p.prod_dep_ptr[tile]; j < p.prod_dep_ptr[tile + 1]; ++j) {
    const int dep = p.prod_dep_idx[j];
    const unsigned target = p.epoch * static_cast<unsigned>(p.threshold[dep]);
    unsigned old = atom_add_acq_rel_sys(p.out_counters + dep, 1u);
    if (old + 1 == target) {
      if (ndone < kMaxDeps) {
        done[ndone++] = dep;
      } else {
        record_error(p, kTooManyDeps, dep, ndone);
      }
    } else if (old + 1 > target) {
      record_error(p, kCounterOverrun, dep, old + 1);
    }
  }
  unsigned long long t = 0;
  if constexpr (Trace) {
    t = now_ns();
    for (int i = 0; i < ndone; ++i) p.zero_stamps[done[i]] = t;
  }
  for (int i = 0; i < ndone; ++i) push<Trace>(p, done[i]);
  return t;
}

}  // namespace ctapipe
