// cuBLAS and cuDNN are not emulated: in an EMBER_CUDA=EMULATED build the vendor backend's entry
// points exist (kernels/vendor_unavailable.cpp), so ember links unchanged, and each throws this
// error. Choosing the backend (EMBER_BACKEND=vendor) therefore fails at the first op it serves.
#include "ember/common/error.h"
#include "ember/kernels/cuda_unavailable.h"

namespace ember::kernels {

void vendor_not_built(const char* op, const char* library) {
  throw Error(detail::str(op, ": the vendor backend (", library, ") is not available in an emulated CUDA build "
                          "(EMBER_CUDA=EMULATED emulates ember's own kernels only); use the hand-written backend "
                          "(EMBER_BACKEND=handwritten) or a build with the CUDA toolkit"));
}

}  // namespace ember::kernels
