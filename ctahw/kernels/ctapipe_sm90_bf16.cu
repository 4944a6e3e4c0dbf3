// ctahw: CTA-pipelined CUTLASS 4.2 SM90 bf16 GEMM, variant (a) "classical" (one CTA per tile, tiles from a
// static order or popped from the work-queue), cluster 1x1: a CTA needs no partner, so any plan runs.
// The kernel and its scheduler are in ctapipe_gemm.cuh; the protocol in ctapipe.cuh.
//
// extern "C" launchers for ctypes; codes: 0, -cudaError, -1000 - cutlass::Status, -2000 (workspace needed),
// -2002 (bad descriptor), -2003 (cluster not in this library).

#define CTAHW_CTAPIPE_LIBRARY  // the shared extern "C" exports of ctapipe_gemm.cuh
#include "ctapipe_gemm.cuh"

namespace cg = ctahw::ctapipe_gemm;

extern "C" {


// cluster: 0 = 1x1 (the only one in this library).
int ctahw_ctapipe_describe(int cluster, char* buf, int len) {
  if (cluster != 0) return -2003;
  return cg::describe<1, 1>(buf, len);
}

// D = alpha * A @ W^T with the CTA-pipelining protocol described by `desc` (kDescFields int64 values).
int ctahw_ctapipe_gemm(const void* a, const void* b, void* d, int m, int n, int k, float alpha, const long long* desc,
                       int ndesc, int trace, int cluster, int device, cudaStream_t stream) {
  if (ndesc != cg::kDescFields) return -2002;
  if (cluster != 0) return -2003;
  ctapipe::Params p = cg::from_desc(desc);
  if (int c = cg::check_desc(p, trace, 1)) return c;
  return trace ? cg::run<1, 1, true>(a, b, d, m, n, k, alpha, p, device, stream)
               : cg::run<1, 1, false>(a, b, d, m, n, k, alpha, p, device, stream);
}


}  // extern "C"
