// cuBLAS and cuDNN are not emulated: in an EMBER_CUDA=EMULATED build the vendor backend's entry
// points (kernels/vendor/*.h) exist, so ember links unchanged, and each throws an error that says
// so. Choosing the backend (EMBER_BACKEND=vendor) therefore fails at the first op it serves.
#include <cstddef>
#include <cstdint>

#include "common/error.h"
#include "kernels/vendor/cublas_gemm.h"
#include "kernels/vendor/cudnn_activation.h"
#include "kernels/vendor/cudnn_conv.h"
#include "kernels/vendor/cudnn_pool.h"

namespace ember::kernels::vendor {

namespace {

[[noreturn]] void unavailable(const char* op, const char* library) {
  throw Error(detail::str(op, ": the vendor backend (", library, ") is not available in an emulated CUDA build "
                          "(EMBER_CUDA=EMULATED emulates ember's own kernels only); use the hand-written backend "
                          "(EMBER_BACKEND=handwritten) or a build with the CUDA toolkit"));
}

}  // namespace

template <class T>
void gemm(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, int64_t, cudaStream_t) {
  unavailable("gemm", "cuBLAS");
}
template <class T>
void gemm_batched(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, int64_t, const T*, int64_t, int64_t, T,
                  T*, int64_t, int64_t, int64_t, cudaStream_t) {
  unavailable("gemm_batched", "cuBLAS");
}
template <class T>
void cudnn_relu_forward(const T*, T*, int64_t, int, cudaStream_t) {
  unavailable("relu", "cuDNN");
}
template <class T>
void cudnn_relu_backward(const T*, const T*, T*, int64_t, int, cudaStream_t) {
  unavailable("relu backward", "cuDNN");
}
template <class T>
size_t conv2d_forward_workspace(const Conv2dShape&, cudaStream_t) {
  unavailable("conv2d", "cuDNN");
}
template <class T>
size_t conv2d_backward_input_workspace(const Conv2dShape&, cudaStream_t) {
  unavailable("conv2d backward", "cuDNN");
}
template <class T>
size_t conv2d_backward_weight_workspace(const Conv2dShape&, cudaStream_t) {
  unavailable("conv2d backward", "cuDNN");
}
template <class T>
void conv2d_forward(const T*, const T*, const T*, T*, const Conv2dShape&, void*, size_t, cudaStream_t) {
  unavailable("conv2d", "cuDNN");
}
template <class T>
void conv2d_backward_input(const T*, const T*, T*, const Conv2dShape&, void*, size_t, cudaStream_t) {
  unavailable("conv2d backward", "cuDNN");
}
template <class T>
void conv2d_backward_weight(const T*, const T*, T*, T*, const Conv2dShape&, void*, size_t, cudaStream_t) {
  unavailable("conv2d backward", "cuDNN");
}
template <class T>
void cudnn_max_pool2d_forward(const T*, T*, const Pool2dShape&, int, cudaStream_t) {
  unavailable("max_pool2d", "cuDNN");
}
template <class T>
void cudnn_max_pool2d_backward(const T*, const T*, const T*, T*, const Pool2dShape&, int, cudaStream_t) {
  unavailable("max_pool2d backward", "cuDNN");
}

#define EMBER_VENDOR_UNAVAILABLE(T)                                                                              \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*,   \
                        int64_t, cudaStream_t);                                                                   \
  template void gemm_batched<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, int64_t, const T*,  \
                                int64_t, int64_t, T, T*, int64_t, int64_t, int64_t, cudaStream_t);               \
  template void cudnn_relu_forward<T>(const T*, T*, int64_t, int, cudaStream_t);                                 \
  template void cudnn_relu_backward<T>(const T*, const T*, T*, int64_t, int, cudaStream_t);                      \
  template size_t conv2d_forward_workspace<T>(const Conv2dShape&, cudaStream_t);                                 \
  template size_t conv2d_backward_input_workspace<T>(const Conv2dShape&, cudaStream_t);                          \
  template size_t conv2d_backward_weight_workspace<T>(const Conv2dShape&, cudaStream_t);                         \
  template void conv2d_forward<T>(const T*, const T*, const T*, T*, const Conv2dShape&, void*, size_t, cudaStream_t); \
  template void conv2d_backward_input<T>(const T*, const T*, T*, const Conv2dShape&, void*, size_t, cudaStream_t); \
  template void conv2d_backward_weight<T>(const T*, const T*, T*, T*, const Conv2dShape&, void*, size_t,         \
                                          cudaStream_t);                                                          \
  template void cudnn_max_pool2d_forward<T>(const T*, T*, const Pool2dShape&, int, cudaStream_t);                \
  template void cudnn_max_pool2d_backward<T>(const T*, const T*, const T*, T*, const Pool2dShape&, int, cudaStream_t);
EMBER_VENDOR_UNAVAILABLE(float)
EMBER_VENDOR_UNAVAILABLE(double)
#undef EMBER_VENDOR_UNAVAILABLE

}  // namespace ember::kernels::vendor
