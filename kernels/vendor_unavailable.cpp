// Every vendor entry point of kernels/vendor/*.h (cuBLAS, cuDNN) in a build without them: a
// CUDA-off build (EMBER_CUDA=OFF) and an emulated one (EMBER_CUDA=EMULATED, which emulates ember's
// own kernels only). Each throws the build's vendor_not_built error. Changing an entry point's
// signature means changing it here too (those builds fail to link otherwise).
#include "ember/kernels/cuda_unavailable.h"
#include "ember/kernels/vendor/cublas_gemm.h"
#include "ember/kernels/vendor/cudnn_activation.h"
#include "ember/kernels/vendor/cudnn_conv.h"
#include "ember/kernels/vendor/cudnn_pool.h"

namespace ember::kernels::vendor {

template <class T>
void gemm(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, int64_t, Stream) {
  vendor_not_built("matmul", "cuBLAS");
}
template <class T>
void gemm_batched(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, int64_t, const T*, int64_t, int64_t,
                  T, T*, int64_t, int64_t, int64_t, Stream) {
  vendor_not_built("matmul", "cuBLAS");
}
template <class T>
void cudnn_relu_forward(const T*, T*, int64_t, int, Stream) { vendor_not_built("relu", "cuDNN"); }
template <class T>
void cudnn_relu_backward(const T*, const T*, T*, int64_t, int, Stream) { vendor_not_built("relu", "cuDNN"); }
template <class T>
size_t conv2d_forward_workspace(const Conv2dShape&, Stream) { vendor_not_built("conv2d", "cuDNN"); }
template <class T>
size_t conv2d_backward_input_workspace(const Conv2dShape&, Stream) { vendor_not_built("conv2d", "cuDNN"); }
template <class T>
size_t conv2d_backward_weight_workspace(const Conv2dShape&, Stream) { vendor_not_built("conv2d", "cuDNN"); }
template <class T>
void conv2d_forward(const T*, const T*, const T*, T*, const Conv2dShape&, void*, size_t, Stream) {
  vendor_not_built("conv2d", "cuDNN");
}
template <class T>
void conv2d_backward_input(const T*, const T*, T*, const Conv2dShape&, void*, size_t, Stream) {
  vendor_not_built("conv2d", "cuDNN");
}
template <class T>
void conv2d_backward_weight(const T*, const T*, T*, T*, const Conv2dShape&, void*, size_t, Stream) {
  vendor_not_built("conv2d", "cuDNN");
}
template <class T>
void cudnn_max_pool2d_forward(const T*, T*, const Pool2dShape&, int, Stream) { vendor_not_built("max_pool2d", "cuDNN"); }
template <class T>
void cudnn_max_pool2d_backward(const T*, const T*, const T*, T*, const Pool2dShape&, int, Stream) {
  vendor_not_built("max_pool2d", "cuDNN");
}

#define EMBER_INSTANTIATE(T)                                                                                    \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*,  \
                        int64_t, Stream);                                                                       \
  template void gemm_batched<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, int64_t, const T*, \
                                int64_t, int64_t, T, T*, int64_t, int64_t, int64_t, Stream);                    \
  template void cudnn_relu_forward<T>(const T*, T*, int64_t, int, Stream);                                      \
  template void cudnn_relu_backward<T>(const T*, const T*, T*, int64_t, int, Stream);                           \
  template size_t conv2d_forward_workspace<T>(const Conv2dShape&, Stream);                                      \
  template size_t conv2d_backward_input_workspace<T>(const Conv2dShape&, Stream);                               \
  template size_t conv2d_backward_weight_workspace<T>(const Conv2dShape&, Stream);                              \
  template void conv2d_forward<T>(const T*, const T*, const T*, T*, const Conv2dShape&, void*, size_t, Stream); \
  template void conv2d_backward_input<T>(const T*, const T*, T*, const Conv2dShape&, void*, size_t, Stream);    \
  template void conv2d_backward_weight<T>(const T*, const T*, T*, T*, const Conv2dShape&, void*, size_t,        \
                                          Stream);                                                              \
  template void cudnn_max_pool2d_forward<T>(const T*, T*, const Pool2dShape&, int, Stream);                     \
  template void cudnn_max_pool2d_backward<T>(const T*, const T*, const T*, T*, const Pool2dShape&, int, Stream);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::vendor
