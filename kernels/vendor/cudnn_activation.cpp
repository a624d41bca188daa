// relu via cuDNN's (legacy, still supported in cuDNN 9) activation API, on flat 1x1x1xN views.
#include "ember/kernels/vendor/cudnn_activation.h"

#include <algorithm>
#include <type_traits>

#include "ember/kernels/vendor/check.h"
#include "ember/kernels/vendor/handles.h"

// cuDNN 9 marks the legacy activation API deprecated; it is the documented way to run one op.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace ember::kernels::vendor {
namespace {

// cuDNN dimensions are int: longer buffers go through in pieces of this many elements.
constexpr int64_t kPiece = int64_t{1} << 30;

template <class T>
constexpr cudnnDataType_t cudnn_type() {
  return std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

struct TensorDesc {
  cudnnTensorDescriptor_t desc = nullptr;
  TensorDesc() { EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc)); }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(desc); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

struct ReluDesc {
  cudnnActivationDescriptor_t desc = nullptr;
  ReluDesc() {
    EMBER_CUDNN_CHECK(cudnnCreateActivationDescriptor(&desc));
    EMBER_CUDNN_CHECK(cudnnSetActivationDescriptor(desc, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  }
  ~ReluDesc() { cudnnDestroyActivationDescriptor(desc); }
  ReluDesc(const ReluDesc&) = delete;
  ReluDesc& operator=(const ReluDesc&) = delete;
};

}  // namespace

template <class T>
void cudnn_relu_forward(const T* x, T* y, int64_t n, int device, cudaStream_t stream) {
  if (n <= 0) return;
  cudnnHandle_t handle = cudnn_handle(device, stream);
  ReluDesc relu;
  TensorDesc desc;
  const T one = 1, zero = 0;  // alpha / beta in the data type (float for float, double for double)
  for (int64_t start = 0; start < n; start += kPiece) {
    const int len = static_cast<int>(std::min(kPiece, n - start));
    EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc.desc, CUDNN_TENSOR_NCHW, cudnn_type<T>(), 1, 1, 1, len));
    EMBER_CUDNN_CHECK(cudnnActivationForward(handle, relu.desc, &one, desc.desc, x + start, &zero, desc.desc,
                                             y + start));
  }
}

template <class T>
void cudnn_relu_backward(const T* dy, const T* y, T* dx, int64_t n, int device, cudaStream_t stream) {
  if (n <= 0) return;
  cudnnHandle_t handle = cudnn_handle(device, stream);
  ReluDesc relu;
  TensorDesc desc;
  const T one = 1, zero = 0;
  for (int64_t start = 0; start < n; start += kPiece) {
    const int len = static_cast<int>(std::min(kPiece, n - start));
    EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc.desc, CUDNN_TENSOR_NCHW, cudnn_type<T>(), 1, 1, 1, len));
    EMBER_CUDNN_CHECK(cudnnActivationBackward(handle, relu.desc, &one, desc.desc, y + start, desc.desc, dy + start,
                                              desc.desc, y + start, &zero, desc.desc, dx + start));
  }
}

template void cudnn_relu_forward<float>(const float*, float*, int64_t, int, cudaStream_t);
template void cudnn_relu_forward<double>(const double*, double*, int64_t, int, cudaStream_t);
template void cudnn_relu_backward<float>(const float*, const float*, float*, int64_t, int, cudaStream_t);
template void cudnn_relu_backward<double>(const double*, const double*, double*, int64_t, int, cudaStream_t);

}  // namespace ember::kernels::vendor
