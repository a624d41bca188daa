// cuDNN convolution: descriptors per call, algorithms per shape from cuDNN's heuristics.
#include "ember/kernels/vendor/cudnn_conv.h"

#include <array>
#include <climits>
#include <map>
#include <type_traits>

#include "ember/common/cuda_check.h"
#include "ember/kernels/vendor/check.h"
#include "ember/kernels/vendor/handles.h"

namespace ember::kernels::vendor {

namespace {

enum class Pass { Forward, BackwardInput, BackwardWeight };

template <class T>
constexpr cudnnDataType_t data_type() {
  return std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;
}

int to_int(int64_t v, const char* what) {
  EMBER_CHECK(v >= 0 && v <= INT_MAX, "conv2d (cuDNN): ", what, " = ", v, " does not fit cuDNN's 32-bit int");
  return static_cast<int>(v);
}

// x [N, C, H, W], w [K, C, R, S], y [N, K, P, Q], bias [1, K, 1, 1] and the convolution, for one
// call. Requires s.batch >= 1.
struct Descriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

  Descriptors(const Conv2dShape& s, cudnnDataType_t type) {
    try {
      const int n = to_int(s.batch, "batch"), c = to_int(s.in_channels, "in_channels");
      const int h = to_int(s.in_h, "height"), wd = to_int(s.in_w, "width");
      const int k = to_int(s.out_channels, "out_channels");
      const int r = to_int(s.kernel_h, "kernel_h"), sw = to_int(s.kernel_w, "kernel_w");
      const int p = to_int(s.out_h(), "out_h"), q = to_int(s.out_w(), "out_w");
      EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&x));
      EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&y));
      EMBER_CUDNN_CHECK(cudnnCreateTensorDescriptor(&bias));
      EMBER_CUDNN_CHECK(cudnnCreateFilterDescriptor(&w));
      EMBER_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
      EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, n, c, h, wd));
      EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, n, k, p, q));
      EMBER_CUDNN_CHECK(cudnnSetTensor4dDescriptor(bias, CUDNN_TENSOR_NCHW, type, 1, k, 1, 1));
      // Grouped: the filter is [K, C / groups, R, S] and the descriptor carries the group count.
      const int c_group = to_int(s.group_in(), "in_channels / groups");
      EMBER_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, k, c_group, r, sw));
      EMBER_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
          conv, to_int(s.pad_h, "pad_h"), to_int(s.pad_w, "pad_w"), to_int(s.stride_h, "stride_h"),
          to_int(s.stride_w, "stride_w"), to_int(s.dilation_h, "dilation_h"), to_int(s.dilation_w, "dilation_w"),
          CUDNN_CROSS_CORRELATION, type));
      EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));
      EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv, to_int(s.groups, "groups")));
    } catch (...) {
      release();
      throw;
    }
  }
  ~Descriptors() { release(); }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  void release() {
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (x) cudnnDestroyTensorDescriptor(x);
    conv = nullptr, w = nullptr, bias = nullptr, y = nullptr, x = nullptr;
  }
};

struct Choice {
  int algo = 0;
  size_t workspace = 0;
};

using Key = std::array<int64_t, 17>;

Key key_of(const Conv2dShape& s, Pass pass, cudnnDataType_t type, int device) {
  return {static_cast<int64_t>(pass), static_cast<int64_t>(type), device, s.batch, s.in_channels, s.in_h,
          s.in_w, s.out_channels, s.kernel_h, s.kernel_w, s.stride_h, s.stride_w, s.pad_h, s.pad_w,
          s.dilation_h, s.dilation_w, s.groups};
}

// The first heuristic result that succeeded without tensor-core math. The call then runs with the
// descriptor's FMA math type, so even a DEFAULT-math pick cannot round FP32 through TF32.
template <class Perf>
const Perf* pick(const Perf* results, int count, const char* pass) {
  for (int i = 0; i < count; ++i) {
    if (results[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (results[i].mathType == CUDNN_FMA_MATH || results[i].mathType == CUDNN_DEFAULT_MATH) return &results[i];
  }
  throw Error(detail::str("conv2d (cuDNN): no FMA-math algorithm for the ", pass, " pass"));
}

template <class T>
Choice choose(const Conv2dShape& s, Pass pass, cudnnHandle_t handle, const Descriptors& d) {
  thread_local std::map<Key, Choice> cache;
  int device = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  const Key key = key_of(s, pass, data_type<T>(), device);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  Choice choice;
  constexpr int kMax = 16;
  int returned = 0;
  switch (pass) {
    case Pass::Forward: {
      cudnnConvolutionFwdAlgoPerf_t results[kMax];
      EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, d.x, d.w, d.conv, d.y, kMax, &returned,
                                                               results));
      const auto* best = pick(results, returned, "forward");
      choice.algo = best->algo;
      EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(handle, d.x, d.w, d.conv, d.y, best->algo,
                                                                &choice.workspace));
      break;
    }
    case Pass::BackwardInput: {
      cudnnConvolutionBwdDataAlgoPerf_t results[kMax];
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, d.w, d.y, d.conv, d.x, kMax,
                                                                    &returned, results));
      const auto* best = pick(results, returned, "backward-input");
      choice.algo = best->algo;
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle, d.w, d.y, d.conv, d.x, best->algo,
                                                                     &choice.workspace));
      break;
    }
    case Pass::BackwardWeight: {
      cudnnConvolutionBwdFilterAlgoPerf_t results[kMax];
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, d.x, d.y, d.conv, d.w, kMax,
                                                                      &returned, results));
      const auto* best = pick(results, returned, "backward-weight");
      choice.algo = best->algo;
      EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, d.x, d.y, d.conv, d.w,
                                                                       best->algo, &choice.workspace));
      break;
    }
  }
  cache.emplace(key, choice);
  return choice;
}

cudnnHandle_t current_handle(cudaStream_t stream) {
  int device = 0;
  EMBER_CUDA_CHECK(cudaGetDevice(&device));
  return cudnn_handle(device, stream);
}

template <class T>
size_t workspace_for(const Conv2dShape& s, Pass pass, cudaStream_t stream) {
  if (s.batch == 0) return 0;
  cudnnHandle_t handle = current_handle(stream);
  Descriptors d(s, data_type<T>());
  return choose<T>(s, pass, handle, d).workspace;
}

void check_workspace(const Choice& c, size_t bytes, const char* pass) {
  EMBER_CHECK(bytes >= c.workspace, "conv2d (cuDNN): the ", pass, " pass needs a workspace of ", c.workspace,
              " bytes, got ", bytes);
}

}  // namespace

template <class T>
size_t conv2d_forward_workspace(const Conv2dShape& s, cudaStream_t stream) {
  return workspace_for<T>(s, Pass::Forward, stream);
}
template <class T>
size_t conv2d_backward_input_workspace(const Conv2dShape& s, cudaStream_t stream) {
  return workspace_for<T>(s, Pass::BackwardInput, stream);
}
template <class T>
size_t conv2d_backward_weight_workspace(const Conv2dShape& s, cudaStream_t stream) {
  return workspace_for<T>(s, Pass::BackwardWeight, stream);
}

template <class T>
void conv2d_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                    void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (s.batch == 0) return;
  cudnnHandle_t handle = current_handle(stream);
  Descriptors d(s, data_type<T>());
  const Choice c = choose<T>(s, Pass::Forward, handle, d);
  check_workspace(c, workspace_bytes, "forward");
  const T one = 1, zero = 0;
  EMBER_CUDNN_CHECK(cudnnConvolutionForward(handle, &one, d.x, x, d.w, w, d.conv,
                                            static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), workspace,
                                            workspace_bytes, &zero, d.y, y));
  if (bias_or_null != nullptr) {
    EMBER_CUDNN_CHECK(cudnnAddTensor(handle, &one, d.bias, bias_or_null, &one, d.y, y));
  }
}

template <class T>
void conv2d_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, void* workspace,
                           size_t workspace_bytes, cudaStream_t stream) {
  if (s.batch == 0) return;
  cudnnHandle_t handle = current_handle(stream);
  Descriptors d(s, data_type<T>());
  const Choice c = choose<T>(s, Pass::BackwardInput, handle, d);
  check_workspace(c, workspace_bytes, "backward-input");
  const T one = 1, zero = 0;
  EMBER_CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &one, d.w, w, d.y, dy, d.conv,
                                                 static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), workspace,
                                                 workspace_bytes, &zero, d.x, dx));
}

template <class T>
void conv2d_backward_weight(const T* dy, const T* x, T* dw, T* dbias_or_null, const Conv2dShape& s,
                            void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (s.batch == 0) {  // no images: the gradients are zero
    const size_t weights = static_cast<size_t>(s.out_channels * s.in_channels * s.kernel_h * s.kernel_w);
    EMBER_CUDA_CHECK(cudaMemsetAsync(dw, 0, weights * sizeof(T), stream));
    if (dbias_or_null != nullptr) {
      EMBER_CUDA_CHECK(cudaMemsetAsync(dbias_or_null, 0, static_cast<size_t>(s.out_channels) * sizeof(T), stream));
    }
    return;
  }
  cudnnHandle_t handle = current_handle(stream);
  Descriptors d(s, data_type<T>());
  const Choice c = choose<T>(s, Pass::BackwardWeight, handle, d);
  check_workspace(c, workspace_bytes, "backward-weight");
  const T one = 1, zero = 0;
  EMBER_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &one, d.x, x, d.y, dy, d.conv,
                                                   static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), workspace,
                                                   workspace_bytes, &zero, d.w, dw));
  if (dbias_or_null != nullptr) {
    EMBER_CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, &one, d.y, dy, &zero, d.bias, dbias_or_null));
  }
}

#define EMBER_CUDNN_CONV_INSTANTIATE(T)                                                                    \
  template size_t conv2d_forward_workspace<T>(const Conv2dShape&, cudaStream_t);                          \
  template size_t conv2d_backward_input_workspace<T>(const Conv2dShape&, cudaStream_t);                   \
  template size_t conv2d_backward_weight_workspace<T>(const Conv2dShape&, cudaStream_t);                  \
  template void conv2d_forward<T>(const T*, const T*, const T*, T*, const Conv2dShape&, void*, size_t,    \
                                  cudaStream_t);                                                          \
  template void conv2d_backward_input<T>(const T*, const T*, T*, const Conv2dShape&, void*, size_t,       \
                                         cudaStream_t);                                                   \
  template void conv2d_backward_weight<T>(const T*, const T*, T*, T*, const Conv2dShape&, void*, size_t,  \
                                          cudaStream_t);
EMBER_CUDNN_CONV_INSTANTIATE(float)
EMBER_CUDNN_CONV_INSTANTIATE(double)
#undef EMBER_CUDNN_CONV_INSTANTIATE

}  // namespace ember::kernels::vendor
