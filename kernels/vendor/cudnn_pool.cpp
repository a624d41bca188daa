// max_pool2d via cuDNN's (legacy, still supported in cuDNN 9) pooling API.
#include "ember/kernels/vendor/cudnn_pool.h"

#include <climits>
#include <type_traits>

#include "ember/common/error.h"
#include "ember/kernels/vendor/check.h"
#include "ember/kernels/vendor/handles.h"

// cuDNN 9 marks the legacy pooling API deprecated; it is the documented way to run one op.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace ember::kernels::vendor {
namespace {

template <class T>
constexpr cudnnDataType_t cudnn_type() {
  return std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

int as_int(int64_t v, const char* what) {
  EMBER_CHECK(v >= 0 && v <= INT_MAX, "max_pool2d (cuDNN): ", what, " ", v, " does not fit cuDNN's int sizes");
  return static_cast<int>(v);
}

// The descriptors of one pooling call: x [N, C, H, W], y [N, C, OH, OW], the max window.
struct PoolDescs {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t pool = nullptr;

  PoolDescs(const Pool2dShape& s, cudnnDataType_t type) {
    // Every size is checked before a descriptor exists, so a throw leaks nothing.
    as_int(s.batch * s.channels * s.in_h * s.in_w, "input element count");
    as_int(s.batch * s.channels * s.out_h() * s.out_w(), "output element count");
    const int n = as_int(s.batch, "batch"), c = as_int(s.channels, "channels");
    const int h = as_int(s.in_h, "height"), w = as_int(s.in_w, "width");
    const int oh = as_int(s.out_h(), "output height"), ow = as_int(s.out_w(), "output width");
    const int kh = as_int(s.kernel_h, "kernel height"), kw = as_int(s.kernel_w, "kernel width");
    const int ph = as_int(s.pad_h, "padding"), pw = as_int(s.pad_w, "padding");
    const int sh = as_int(s.stride_h, "stride"), sw = as_int(s.stride_w, "stride");
    EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
    EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
    EMBER_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pool));
    EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, n, c, h, w));
    EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, n, c, oh, ow));
    EMBER_CUDNN_CHECK(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX_DETERMINISTIC, CUDNN_PROPAGATE_NAN, kh, kw,
                                                  ph, pw, sh, sw));
  }
  ~PoolDescs() {
    cudnnDestroyPoolingDescriptor(pool);
    cudnnDestroyTensorDescriptor(y);
    cudnnDestroyTensorDescriptor(x);
  }
  PoolDescs(const PoolDescs&) = delete;
  PoolDescs& operator=(const PoolDescs&) = delete;
};

}  // namespace

template <class T>
void cudnn_max_pool2d_forward(const T* x, T* y, const Pool2dShape& s, int device, cudaStream_t stream) {
  PoolDescs d(s, cudnn_type<T>());
  cudnnHandle_t handle = cudnn_handle(device, stream);
  const T one = 1, zero = 0;
  EMBER_CUDNN_CHECK(cudnnPoolingForward(handle, d.pool, &one, d.x, x, &zero, d.y, y));
}

template <class T>
void cudnn_max_pool2d_backward(const T* x, const T* y, const T* dy, T* dx, const Pool2dShape& s, int device,
                               cudaStream_t stream) {
  PoolDescs d(s, cudnn_type<T>());
  cudnnHandle_t handle = cudnn_handle(device, stream);
  const T one = 1, zero = 0;
  EMBER_CUDNN_CHECK(cudnnPoolingBackward(handle, d.pool, &one, d.y, y, d.y, dy, d.x, x, &zero, d.x, dx));
}

template void cudnn_max_pool2d_forward<float>(const float*, float*, const Pool2dShape&, int, cudaStream_t);
template void cudnn_max_pool2d_forward<double>(const double*, double*, const Pool2dShape&, int, cudaStream_t);
template void cudnn_max_pool2d_backward<float>(const float*, const float*, const float*, float*, const Pool2dShape&,
                                               int, cudaStream_t);
template void cudnn_max_pool2d_backward<double>(const double*, const double*, const double*, double*,
                                                const Pool2dShape&, int, cudaStream_t);

}  // namespace ember::kernels::vendor
