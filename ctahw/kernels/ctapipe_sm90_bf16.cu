// ctahw: CTA-pipelined CUTLASS 4.2 SM90 bf16 GEMM, variant (a) "classical" (one CTA per tile, tiles from a
// static order or popped from the work-queue), cluster 1x1: a CTA needs no partner, so any plan runs.
// The kernel and its scheduler are in ctapipe_gemm.cuh; the protocol in ctapipe.cuh.
//
// extern "C" launchers for ctypes; codes: 0, -cudaError, -1000 - cutlass::Status, -2000 (workspace needed),
// -2002 (bad descriptor), -2003 (cluster not in this library), -2006 (unknown epilogue op), -2007 (C missing for
// the residual, or given to an op without one).

#define CTAHW_CTAPIPE_LIBRARY           // the shared extern "C" exports of ctapipe_gemm.cuh
#define CTAHW_CTAPIPE_EPILOGUE_LIBRARY  // and the epilogue op names
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

// describe() of epilogue op `op`'s kernel (CTAPIPE_EPILOGUE_OPS; op 0 is ctahw_ctapipe_describe's); -2006 for an
// unknown op, -2003 for a cluster not in this library.
int ctahw_ctapipe_describe_epi(int op, int cluster, char* buf, int len) {
  if (cluster != 0) return -2003;
  return cg::describe_epi<1, 1>(op, buf, len);
}

// D = epilogue_op(A @ W^T [+ C]) with the CTA-pipelining protocol of ctahw_ctapipe_gemm (alpha = 1): op 0 none (the
// kernel of ctahw_ctapipe_gemm), 1 gelu, 2 silu, 3 relu (c = NULL), 4 residual (c: M x N row-major bf16 on this
// device). Checks in order: descriptor size (-2002), cluster (-2003), descriptor (-2002), op (-2006), C (-2007).
int ctahw_ctapipe_gemm_epi(int op, const void* a, const void* b, const void* c, void* d, int m, int n, int k,
                           const long long* desc, int ndesc, int trace, int cluster, int device, cudaStream_t stream) {
  if (ndesc != cg::kDescFields) return -2002;
  if (cluster != 0) return -2003;
  ctapipe::Params p = cg::from_desc(desc);
  if (int rc = cg::check_desc(p, trace, 1)) return rc;
  return cg::run_epi<1, 1>(op, trace != 0, a, b, c, d, m, n, k, p, device, stream);
}


// Load the kernel of op `op` (0: ctahw_ctapipe_gemm's), trace on or off, into `device`'s context before any launch
// (ctapipe_gemm.cuh's load(): lazy loading could otherwise wait for a running consumer). 0, -2003, -2006 or
// -cudaError.
int ctahw_ctapipe_load(int op, int cluster, int trace, int device) {
  if (cluster != 0) return -2003;
  return cg::load_epi<1, 1>(op, trace != 0, device);
}


}  // extern "C"
