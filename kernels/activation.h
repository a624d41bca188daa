// What the CPU and CUDA activation kernels share: the activation codes and which tensor each
// backward reads. kernels/cpu/activation.h and kernels/cuda/activation.h declare the same entry
// points over these.
// defines: ember::kernels::{Activation, backward_reads_output, activation_name}
#pragma once

namespace ember::kernels {

// The element-wise activations after PyTorch's formulas (1.13, aten/src/ATen/native/cpu):
//   Sigmoid    1 / (1 + exp(-x))
//   Tanh       tanh(x)
//   Gelu       x/2 * (1 + erf(x / sqrt(2)))                        (approximate="none")
//   GeluTanh   x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))   (approximate="tanh")
//   Silu       x / (1 + exp(-x))
//   LeakyRelu  x > 0 ? x : param * x                               (param: negative_slope)
//   Elu        x > 0 ? x : param * (exp(x) - 1)                    (param: alpha)
//   Hardswish  x * min(max(x + 3, 0), 6) / 6
// Relu has kernels of its own (relu_forward / relu_backward). Hardswish's gradient at x = 3 is dy
// (x < 3 takes the middle piece x/3 + 1/2), as PyTorch 1.13's vectorised CPU kernel, which every
// tensor of 8 floats or more takes; its scalar tail and its CUDA kernel give 1.5 dy there.
enum class Activation { Sigmoid, Tanh, Gelu, GeluTanh, Silu, LeakyRelu, Elu, Hardswish };

// Sigmoid's and tanh's backward read the forward's output y (as PyTorch's sigmoid_backward and
// tanh_backward do); every other backward reads the forward's input x.
constexpr bool backward_reads_output(Activation op) { return op == Activation::Sigmoid || op == Activation::Tanh; }

// The op's name in error messages.
constexpr const char* activation_name(Activation op) {
  switch (op) {
    case Activation::Sigmoid: return "sigmoid";
    case Activation::Tanh: return "tanh";
    case Activation::Gelu:
    case Activation::GeluTanh: return "gelu";
    case Activation::Silu: return "silu";
    case Activation::LeakyRelu: return "leaky_relu";
    case Activation::Elu: return "elu";
    case Activation::Hardswish: return "hardswish";
  }
  return "activation";
}

}  // namespace ember::kernels
