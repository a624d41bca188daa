// Every CUDA kernel entry point of kernels/cuda/*.h in a build without CUDA (EMBER_CUDA=OFF):
// declared in every build so that the ops above dispatch without #if, each throws the one
// cuda_not_built error here. In practice they are never reached: such a build has no CUDA
// device, so no CUDA tensor exists to reach them (core/cuda/runtime_stub.cpp throws first).
// Changing an entry point's signature means changing it here too (the CUDA-off build fails to
// link otherwise).
#include "ember/kernels/cuda_unavailable.h"

#include "ember/common/error.h"
#include "ember/kernels/cuda/activation.h"
#include "ember/kernels/cuda/batch_norm.h"
#include "ember/kernels/cuda/conv2d.h"
#include "ember/kernels/cuda/copy.h"
#include "ember/kernels/cuda/dropout.h"
#include "ember/kernels/cuda/elementwise.h"
#include "ember/kernels/cuda/gemm.h"
#include "ember/kernels/cuda/index.h"
#include "ember/kernels/cuda/layer_norm.h"
#include "ember/kernels/cuda/linear.h"
#include "ember/kernels/cuda/loss.h"
#include "ember/kernels/cuda/pool.h"
#include "ember/kernels/cuda/reduce.h"
#include "ember/kernels/cuda/optimizer_step.h"

namespace ember::kernels {

void cuda_not_built(const char* op) {
  throw Error(detail::str(op, ": this build of ember has no CUDA support (configured with EMBER_CUDA=OFF or "
                          "without nvcc); rebuild with -DEMBER_CUDA=ON (CUDA toolkit) or -DEMBER_CUDA=EMULATED "
                          "(ember's emulated GPUs), or run on the CPU (Device::cpu())"));
}

void vendor_not_built(const char* op, const char*) { cuda_not_built(op); }

}  // namespace ember::kernels

namespace ember::kernels::cuda {

// --- activation.h, dropout.h ---
template <class T>
void relu_forward(const T*, T*, int64_t, Stream) { cuda_not_built("relu"); }
template <class T>
void relu_backward(const T*, const T*, T*, int64_t, Stream) { cuda_not_built("relu"); }
template <class T>
void activation_forward(Activation op, double, const T*, T*, int64_t, Stream) { cuda_not_built(activation_name(op)); }
template <class T>
void activation_backward(Activation op, double, const T*, const T*, T*, int64_t, Stream) {
  cuda_not_built(activation_name(op));
}
template <class T>
void dropout_forward(const T*, T*, uint8_t*, int64_t, double, uint64_t, uint64_t, Stream) { cuda_not_built("dropout"); }
template <class T>
void dropout_backward(const T*, const uint8_t*, T*, int64_t, double, Stream) { cuda_not_built("dropout"); }

// --- conv2d.h, pool.h ---
template <class T>
void conv2d_forward(const T*, const T*, const T*, T*, const Conv2dShape&, Stream) { cuda_not_built("conv2d"); }
template <class T>
void conv2d_backward_input(const T*, const T*, T*, const Conv2dShape&, Stream) { cuda_not_built("conv2d"); }
int64_t conv2d_backward_weight_workspace(const Conv2dShape&) { cuda_not_built("conv2d"); }
template <class T>
void conv2d_backward_weight(const T*, const T*, T*, T*, const Conv2dShape&, T*, Stream) { cuda_not_built("conv2d"); }
template <class T>
void max_pool2d_forward(const T*, T*, int64_t*, const Pool2dShape&, Stream) { cuda_not_built("max_pool2d"); }
template <class T>
void max_pool2d_backward(const T*, const int64_t*, T*, const Pool2dShape&, Stream) { cuda_not_built("max_pool2d"); }
template <class T>
void avg_pool2d_forward(const T*, T*, const Pool2dShape&, bool, int64_t, Stream) { cuda_not_built("avg_pool2d"); }
template <class T>
void avg_pool2d_backward(const T*, T*, const Pool2dShape&, bool, int64_t, Stream) { cuda_not_built("avg_pool2d"); }
template <class T>
void adaptive_avg_pool2d_forward(const T*, T*, const AdaptivePool2dShape&, Stream) { cuda_not_built("adaptive_avg_pool2d"); }
template <class T>
void adaptive_avg_pool2d_backward(const T*, T*, const AdaptivePool2dShape&, Stream) { cuda_not_built("adaptive_avg_pool2d"); }
template <class T>
void adaptive_max_pool2d_forward(const T*, T*, int64_t*, const AdaptivePool2dShape&, Stream) {
  cuda_not_built("adaptive_max_pool2d");
}
template <class T>
void adaptive_max_pool2d_backward(const T*, const int64_t*, T*, const AdaptivePool2dShape&, Stream) {
  cuda_not_built("adaptive_max_pool2d");
}

// --- copy.h, elementwise.h, reduce.h ---
void copy_cast(void*, int, const void*, int, const StridedLoop<2>&, Stream) { cuda_not_built("copy"); }
void copy_strided(void*, const StridedLayout&, int, const void*, const StridedLayout&, int, int64_t, Stream) {
  cuda_not_built("copy");
}
void fill(void*, int, int64_t, double, Stream) { cuda_not_built("fill_"); }
void binary(BinaryOp, int, void*, const void*, const void*, const StridedLoop<3>&, double, Stream,
            const char* name) {
  cuda_not_built(name);
}
void unary(UnaryOp, int, void*, const void*, const StridedLoop<2>&, double, Stream, const char* name) {
  cuda_not_built(name);
}
void where(int, void*, const uint8_t*, const void*, const void*, const StridedLoop<4>&, Stream) {
  cuda_not_built("where");
}
void clamp(int, void*, const void*, const StridedLoop<2>&, const ClampBounds<double>&, Stream) {
  cuda_not_built("clamp");
}
void clamp_backward(int, void*, const void*, const void*, const StridedLoop<3>&, const ClampBounds<double>&, Stream) {
  cuda_not_built("clamp");
}
size_t sum_workspace_bytes(const ReduceLoop&) { cuda_not_built("sum"); }
void sum(void*, int, const void*, int, const ReduceLoop&, void*, size_t, Stream) { cuda_not_built("sum"); }
size_t extremum_workspace_bytes(const ReduceLoop&, int) { cuda_not_built("max"); }
void extremum(bool, void*, int64_t*, const void*, int, const ReduceLoop&, void*, size_t, Stream) {
  cuda_not_built("max");
}

// --- gemm.h, linear.h, loss.h, optimizer_step.h ---
template <class T>
void gemm(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, int64_t, Stream) {
  cuda_not_built("matmul");
}
template <class T>
void gemm_batched(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, int64_t, const T*, int64_t, int64_t,
                  T, T*, int64_t, int64_t, int64_t, Stream) {
  cuda_not_built("matmul");
}
template <class T>
void broadcast_rows(const T*, int64_t, int64_t, T*, Stream) { cuda_not_built("linear"); }
template <class T>
void column_sums(const T*, int64_t, int64_t, T*, Stream) { cuda_not_built("linear"); }
template <class T>
void softmax_forward(const T*, T*, const SoftmaxShape&, Stream) { cuda_not_built("softmax"); }
template <class T>
void softmax_backward(const T*, const T*, T*, const SoftmaxShape&, Stream) { cuda_not_built("softmax"); }
template <class T>
void nll_loss_forward(const T*, const int64_t*, const T*, T*, T*, const ClassLossShape&, Stream) {
  cuda_not_built("nll_loss");
}
template <class T>
void nll_loss_backward(const T*, const int64_t*, const T*, T*, const ClassLossShape&, Stream) {
  cuda_not_built("nll_loss");
}
template <class T>
void cross_entropy_forward(const T*, const int64_t*, const T*, T*, T*, T*, const ClassLossShape&, Stream) {
  cuda_not_built("cross_entropy");
}
template <class T>
void cross_entropy_backward(const T*, const int64_t*, const T*, const T*, const T*, T*, const ClassLossShape&,
                            Stream) {
  cuda_not_built("cross_entropy");
}
template <class T>
void mse_loss_forward(const T*, const T*, T*, int64_t, bool, double, Stream) { cuda_not_built("mse_loss"); }
template <class T>
void mse_loss_backward(const T*, const T*, const T*, bool, double, T*, T*, int64_t, Stream) {
  cuda_not_built("mse_loss");
}
template <class T>
void sgd_step(const OptimizerTensor<T>*, size_t, const SgdRule<T>&, Stream) { cuda_not_built("SGD"); }
template <class T>
void adam_step(const OptimizerTensor<T>*, size_t, const AdamRule<T>&, Stream) { cuda_not_built("Adam"); }
template <class T>
void rmsprop_step(const OptimizerTensor<T>*, size_t, const RmspropRule<T>&, Stream) { cuda_not_built("RMSprop"); }
template <class T>
void adagrad_step(const OptimizerTensor<T>*, size_t, const AdagradRule<T>&, Stream) { cuda_not_built("Adagrad"); }

#define EMBER_INSTANTIATE(T)                                                                                    \
  template void relu_forward<T>(const T*, T*, int64_t, Stream);                                                 \
  template void relu_backward<T>(const T*, const T*, T*, int64_t, Stream);                                      \
  template void activation_forward<T>(Activation, double, const T*, T*, int64_t, Stream);                       \
  template void activation_backward<T>(Activation, double, const T*, const T*, T*, int64_t, Stream);            \
  template void dropout_forward<T>(const T*, T*, uint8_t*, int64_t, double, uint64_t, uint64_t, Stream);        \
  template void dropout_backward<T>(const T*, const uint8_t*, T*, int64_t, double, Stream);                     \
  template void conv2d_forward<T>(const T*, const T*, const T*, T*, const Conv2dShape&, Stream);                \
  template void conv2d_backward_input<T>(const T*, const T*, T*, const Conv2dShape&, Stream);                   \
  template void conv2d_backward_weight<T>(const T*, const T*, T*, T*, const Conv2dShape&, T*, Stream);          \
  template void max_pool2d_forward<T>(const T*, T*, int64_t*, const Pool2dShape&, Stream);                     \
  template void max_pool2d_backward<T>(const T*, const int64_t*, T*, const Pool2dShape&, Stream);               \
  template void avg_pool2d_forward<T>(const T*, T*, const Pool2dShape&, bool, int64_t, Stream);                \
  template void avg_pool2d_backward<T>(const T*, T*, const Pool2dShape&, bool, int64_t, Stream);               \
  template void adaptive_avg_pool2d_forward<T>(const T*, T*, const AdaptivePool2dShape&, Stream);              \
  template void adaptive_avg_pool2d_backward<T>(const T*, T*, const AdaptivePool2dShape&, Stream);             \
  template void adaptive_max_pool2d_forward<T>(const T*, T*, int64_t*, const AdaptivePool2dShape&, Stream);    \
  template void adaptive_max_pool2d_backward<T>(const T*, const int64_t*, T*, const AdaptivePool2dShape&, Stream); \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*,  \
                        int64_t, Stream);                                                                       \
  template void gemm_batched<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, int64_t, const T*, \
                                int64_t, int64_t, T, T*, int64_t, int64_t, int64_t, Stream);                    \
  template void broadcast_rows<T>(const T*, int64_t, int64_t, T*, Stream);                                      \
  template void column_sums<T>(const T*, int64_t, int64_t, T*, Stream);                                         \
  template void softmax_forward<T>(const T*, T*, const SoftmaxShape&, Stream);                                 \
  template void softmax_backward<T>(const T*, const T*, T*, const SoftmaxShape&, Stream);                      \
  template void nll_loss_forward<T>(const T*, const int64_t*, const T*, T*, T*, const ClassLossShape&, Stream); \
  template void nll_loss_backward<T>(const T*, const int64_t*, const T*, T*, const ClassLossShape&, Stream);    \
  template void cross_entropy_forward<T>(const T*, const int64_t*, const T*, T*, T*, T*, const ClassLossShape&, \
                                         Stream);                                                               \
  template void cross_entropy_backward<T>(const T*, const int64_t*, const T*, const T*, const T*, T*,           \
                                          const ClassLossShape&, Stream);                                       \
  template void mse_loss_forward<T>(const T*, const T*, T*, int64_t, bool, double, Stream);                     \
  template void mse_loss_backward<T>(const T*, const T*, const T*, bool, double, T*, T*, int64_t, Stream);      \
  template void sgd_step<T>(const OptimizerTensor<T>*, size_t, const SgdRule<T>&, Stream);                   \
  template void adam_step<T>(const OptimizerTensor<T>*, size_t, const AdamRule<T>&, Stream);                 \
  template void rmsprop_step<T>(const OptimizerTensor<T>*, size_t, const RmspropRule<T>&, Stream);           \
  template void adagrad_step<T>(const OptimizerTensor<T>*, size_t, const AdagradRule<T>&, Stream);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

// --- batch_norm.h ---
template <class T>
void batch_norm_forward_training(const T*, const T*, const T*, T*, T*, T*, T*, T*, double, double,
                                 const BatchNormShape&, Stream) {
  cuda_not_built("batch_norm");
}
template <class T>
void batch_norm_forward_eval(const T*, const T*, const T*, const T*, const T*, T*, T*, double, const BatchNormShape&,
                             Stream) {
  cuda_not_built("batch_norm");
}
template <class T>
void batch_norm_backward(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, bool, const BatchNormShape&,
                         Stream) {
  cuda_not_built("batch_norm");
}
#define EMBER_INSTANTIATE(T)                                                                                    \
  template void batch_norm_forward_training<T>(const T*, const T*, const T*, T*, T*, T*, T*, T*, double, double, \
                                               const BatchNormShape&, Stream);                                 \
  template void batch_norm_forward_eval<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, double,      \
                                           const BatchNormShape&, Stream);                                     \
  template void batch_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, bool,       \
                                       const BatchNormShape&, Stream);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

// --- index.h ---
void index_select(const void*, const int64_t*, void*, size_t, const IndexShape&, Stream) {
  cuda_not_built("index_select");
}
void gather(const void*, const int64_t*, void*, size_t, const GatherShape&, Stream) { cuda_not_built("gather"); }
template <class T>
void index_add(const T*, const int64_t*, T*, int64_t, const IndexShape&, Stream) {
  cuda_not_built("index_add");
}
template void index_add<float>(const float*, const int64_t*, float*, int64_t, const IndexShape&, Stream);
template void index_add<double>(const double*, const int64_t*, double*, int64_t, const IndexShape&, Stream);

// --- layer_norm.h ---
template <class T>
void layer_norm_forward(const T*, const T*, const T*, T*, T*, T*, double, const LayerNormShape&, Stream) {
  cuda_not_built("layer_norm");
}
template <class T>
void layer_norm_backward(const T*, const T*, const T*, const T*, const T*, T*, T*, T*, const LayerNormShape&,
                         Stream) {
  cuda_not_built("layer_norm");
}
#define EMBER_INSTANTIATE(T)                                                                                   \
  template void layer_norm_forward<T>(const T*, const T*, const T*, T*, T*, T*, double, const LayerNormShape&, \
                                      Stream);                                                                 \
  template void layer_norm_backward<T>(const T*, const T*, const T*, const T*, const T*, T*, T*, T*,           \
                                       const LayerNormShape&, Stream);
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember::kernels::cuda
