#include "ember/core/generator.h"

#include "ember/common/philox.h"
#include "ember/core/tensor.h"

namespace ember {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

void Generator::set_offset(uint64_t offset) {
  std::lock_guard lock(mutex_);
  offset_ = offset;
}

uint64_t Generator::reserve(uint64_t n) {
  std::lock_guard lock(mutex_);
  uint64_t start = offset_;
  offset_ += philox::counters_for(n);
  return start;
}

Generator& default_generator() {
  static Generator generator;
  return generator;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

namespace {

// Draws on the CPU (element i takes counter offset + i / 4), then moves to the target device:
// the numbers depend only on (seed, offset, i), never on the device.
template <class Draw>
Tensor random_tensor(Shape shape, TensorOptions options, const char* op, Draw draw) {
  EMBER_CHECK(is_floating(options.dtype), op, ": expected a floating dtype, got ", dtype_name(options.dtype));
  Tensor host = empty(std::move(shape), {.dtype = options.dtype});
  Generator& gen = default_generator();
  uint64_t n = static_cast<uint64_t>(host.numel());
  uint64_t seed = gen.seed(), offset = gen.reserve(n);
  visit_floating(options.dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = host.data<T>();
    for (uint64_t i = 0; i < n; ++i) out[i] = static_cast<T>(draw(seed, offset, i));
  });
  Tensor out = host.to(options.device);
  if (options.requires_grad) out.requires_grad_();
  return out;
}

}  // namespace

Tensor rand(Shape shape, TensorOptions options) {
  // philox::uniform is in (0, 1]; 1 - u maps it onto [0, 1) like torch.rand.
  return random_tensor(std::move(shape), options, "rand", [](uint64_t s, uint64_t o, uint64_t i) {
    return 1.0f - philox::uniform(s, o, i);
  });
}

Tensor randn(Shape shape, TensorOptions options) {
  return random_tensor(std::move(shape), options, "randn", [](uint64_t s, uint64_t o, uint64_t i) {
    return philox::normal(s, o, i);
  });
}

}  // namespace ember
