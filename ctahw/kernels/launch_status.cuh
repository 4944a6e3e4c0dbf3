// Return codes shared by every ctahw launcher (gemm_sm90_bf16.cu, ctapipe_gemm.cuh and its libraries):
//   0 success; -e a CUDA error e; -1000 - s a CUTLASS status s; <= -2000 the library's own (its status string
//   names them). Also the one can_implement -> initialize -> run sequence of a CUTLASS device adapter.
#pragma once

#include <cstdio>
#include <cuda_runtime.h>

#include "cutlass/cutlass.h"

namespace ctahw::launch {

inline int cuda_code(cudaError_t e) { return e == cudaSuccess ? 0 : -static_cast<int>(e); }
inline int cutlass_code(cutlass::Status s) {
  return s == cutlass::Status::kSuccess ? 0 : -1000 - static_cast<int>(s);
}

// can_implement, initialize (with `workspace`), run on `stream`: the code of the first failure, else 0. A failed
// initialize or run reports the CUDA error behind it when there is one.
template <class Gemm>
int can_initialize_run(Gemm& gemm, typename Gemm::Arguments const& args, void* workspace, cudaStream_t stream) {
  cutlass::Status s = gemm.can_implement(args);
  if (s != cutlass::Status::kSuccess) return cutlass_code(s);
  s = gemm.initialize(args, workspace, stream);
  if (s != cutlass::Status::kSuccess) {
    int c = cuda_code(cudaGetLastError());
    return c ? c : cutlass_code(s);
  }
  s = gemm.run(stream);
  int c = cuda_code(cudaGetLastError());
  if (c) return c;
  return cutlass_code(s);
}

// The message of a CUDA or CUTLASS code (valid until the next call); the library checks its own codes first.
inline const char* status_string(int code) {
  static char buf[256];
  if (code == 0) return "success";
  if (code <= -2000) {
    snprintf(buf, sizeof buf, "ctahw launcher code %d", code);
    return buf;
  }
  if (code <= -1000) {
    snprintf(buf, sizeof buf, "cutlass: %s", cutlassGetStatusString(static_cast<cutlass::Status>(-(code + 1000))));
    return buf;
  }
  snprintf(buf, sizeof buf, "cuda: %s", cudaGetErrorString(static_cast<cudaError_t>(-code)));
  return buf;
}

}  // namespace ctahw::launch
