// ctahw: CTA-pipelined CUTLASS 4.2 SM90 bf16 GEMM, variant (a) "classical", clusters of two CTAs that share
// a multicast operand: 2x1 (same column: W is multicast) and 1x2 (same row: A is multicast). A static
// kernel's order must pair such tiles; a queue kernel pops two consecutive slots per cluster, which holds
// for row-block dependencies whose tiles are pushed in column order (1x2). See ctapipe_gemm.cuh.
//
// Same C ABI as ctapipe_sm90_bf16.cu; cluster: 1 = 2x1, 2 = 1x2. Every epilogue op is built for both shapes.

#define CTAHW_CTAPIPE_LIBRARY           // the shared extern "C" exports of ctapipe_gemm.cuh
#define CTAHW_CTAPIPE_EPILOGUE_LIBRARY  // and the epilogue op names
#include "ctapipe_gemm.cuh"

namespace cg = ctahw::ctapipe_gemm;

extern "C" {


int ctahw_ctapipe_describe(int cluster, char* buf, int len) {
  if (cluster == 1) return cg::describe<2, 1>(buf, len);
  if (cluster == 2) return cg::describe<1, 2>(buf, len);
  return -2003;
}

int ctahw_ctapipe_gemm(const void* a, const void* b, void* d, int m, int n, int k, float alpha, const long long* desc,
                       int ndesc, int trace, int cluster, int device, cudaStream_t stream) {
  if (ndesc != cg::kDescFields) return -2002;
  if (cluster != 1 && cluster != 2) return -2003;
  ctapipe::Params p = cg::from_desc(desc);
  if (int c = cg::check_desc(p, trace, 2)) return c;
  if (cluster == 1)
    return trace ? cg::run<2, 1, true>(a, b, d, m, n, k, alpha, p, device, stream)
                 : cg::run<2, 1, false>(a, b, d, m, n, k, alpha, p, device, stream);
  return trace ? cg::run<1, 2, true>(a, b, d, m, n, k, alpha, p, device, stream)
               : cg::run<1, 2, false>(a, b, d, m, n, k, alpha, p, device, stream);
}

int ctahw_ctapipe_describe_epi(int op, int cluster, char* buf, int len) {
  if (cluster == 1) return cg::describe_epi<2, 1>(op, buf, len);
  if (cluster == 2) return cg::describe_epi<1, 2>(op, buf, len);
  return -2003;
}

int ctahw_ctapipe_gemm_epi(int op, const void* a, const void* b, const void* c, void* d, int m, int n, int k,
                           const long long* desc, int ndesc, int trace, int cluster, int device, cudaStream_t stream) {
  if (ndesc != cg::kDescFields) return -2002;
  if (cluster != 1 && cluster != 2) return -2003;
  ctapipe::Params p = cg::from_desc(desc);
  if (int rc = cg::check_desc(p, trace, 2)) return rc;
  if (cluster == 1) return cg::run_epi<2, 1>(op, trace != 0, a, b, c, d, m, n, k, p, device, stream);
  return cg::run_epi<1, 2>(op, trace != 0, a, b, c, d, m, n, k, p, device, stream);
}


// Load the kernel of op `op` (0: ctahw_ctapipe_gemm's) for cluster code `cluster`, trace on or off, into
// `device`'s context before any launch (ctapipe_gemm.cuh's load()). 0, -2003, -2006 or -cudaError.
int ctahw_ctapipe_load(int op, int cluster, int trace, int device) {
  if (cluster == 1) return cg::load_epi<2, 1>(op, trace != 0, device);
  if (cluster == 2) return cg::load_epi<1, 2>(op, trace != 0, device);
  return -2003;
}


}  // extern "C"
