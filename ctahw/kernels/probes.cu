// ctahw: small probe kernels for `ctahw calibrate` (no CUTLASS; compiles in seconds).
//
// Each launcher is extern "C", takes the stream last, sets nothing global, and returns 0 or -cudaError_t
// (the launch error, checked with cudaGetLastError right after the launch). Every spin-wait is bounded by a
// %globaltimer deadline and reports a timeout through `err` instead of hanging.

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

}  // namespace

extern "C" {

int ctahw_probes_abi_version() { return 1; }

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

}  // extern "C"
