#include "ember/optim/sgd.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/kernel_context.h"
#include "ember/kernels/cpu/sgd.h"
#include "ember/kernels/cuda/sgd.h"

namespace ember::optim {

namespace {

void check_options(const SGDOptions& o) {
  EMBER_CHECK(o.lr >= 0, "SGD: learning rate must be >= 0, got ", o.lr);
  EMBER_CHECK(o.momentum >= 0, "SGD: momentum must be >= 0, got ", o.momentum);
  EMBER_CHECK(o.weight_decay >= 0, "SGD: weight_decay must be >= 0, got ", o.weight_decay);
  EMBER_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
              "SGD: nesterov momentum requires momentum > 0 and dampening 0, got momentum ", o.momentum,
              " and dampening ", o.dampening);
}

// The index in "<prefix><digits><suffix>", or nullopt when `key` does not have that form.
std::optional<size_t> parse_index(const std::string& key, const std::string& prefix, const std::string& suffix) {
  if (key.size() <= prefix.size() + suffix.size() || key.compare(0, prefix.size(), prefix) != 0 ||
      key.compare(key.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  std::string digits = key.substr(prefix.size(), key.size() - prefix.size() - suffix.size());
  if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return static_cast<size_t>(std::stoul(digits));
}

// One parameter waiting for its group's update.
struct PendingUpdate {
  Tensor param, grad, momentum;
  size_t buffer_index = 0;
  bool first_step = false;
};

// Updates `pending` (parameters of one device and dtype, one param group) in one kernel call:
// the CUDA kernel updates many tensors per launch, the CPU one loops over them.
void update(std::vector<PendingUpdate>& pending, const SGDOptions& o) {
  const kernels::SgdHyper hyper{.lr = o.lr, .momentum = o.momentum, .dampening = o.dampening,
                                .weight_decay = o.weight_decay, .nesterov = o.nesterov};
  KernelContext on(pending.front().param);
  visit_floating(pending.front().param.dtype(), "SGD", [&](auto tag) {
    using T = typename decltype(tag)::type;
    std::vector<kernels::SgdTensor<T>> tensors;
    tensors.reserve(pending.size());
    for (PendingUpdate& u : pending) {
      tensors.push_back({.param = u.param.template mutable_data<T>("SGD"), .grad = u.grad.template data<T>(),
                         .momentum_buffer = o.momentum != 0 ? u.momentum.template data<T>() : nullptr,
                         .numel = u.param.numel(), .first_step = u.first_step});
    }
    if (on.cpu()) {
      kernels::cpu::sgd_update_multi<T>(tensors.data(), tensors.size(), hyper);
    } else {
      kernels::cuda::sgd_update_multi<T>(tensors.data(), tensors.size(), hyper, on.stream());
    }
  });
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options) : SGD(std::vector<SGDParamGroup>{{std::move(params), options}}) {}

SGD::SGD(std::vector<SGDParamGroup> groups) {
  for (auto& group : groups) add_param_group(std::move(group));
}

void SGD::add_param_group(SGDParamGroup group) {
  check_options(group.options);
  for (const Tensor& p : group.params) {
    EMBER_CHECK(p.defined() && p.requires_grad() && p.is_leaf(), "SGD: every parameter must be a leaf tensor that "
                "requires grad");
  }
  buffers_.resize(buffers_.size() + group.params.size());
  groups_.push_back(std::move(group));
}

std::vector<Tensor> SGD::parameters() const {
  std::vector<Tensor> out;
  for (const auto& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

void SGD::step() {
  NoGradGuard no_grad;
  size_t index = 0;
  for (const SGDParamGroup& group : groups_) {
    const SGDOptions& o = group.options;
    // This group's parameters by device (-1 for the CPU) and dtype: each bucket is one kernel call.
    std::map<std::pair<int, DType>, std::vector<PendingUpdate>> buckets;
    for (const Tensor& param : group.params) {
      Tensor& buffer = buffers_[index++];
      Tensor grad = param.grad();
      if (!grad.defined()) continue;
      EMBER_CHECK(grad.device() == param.device() && grad.sizes() == param.sizes() && grad.dtype() == param.dtype(),
                  "SGD: parameter ", index - 1, " is ", param.sizes(), " ", dtype_name(param.dtype()), " on ",
                  param.device(), " but its gradient is ", grad.sizes(), " ", dtype_name(grad.dtype()), " on ",
                  grad.device());
      // The state follows its parameter: model.to() after the optimizer was built just works.
      if (buffer.defined() && (buffer.device() != param.device() || buffer.dtype() != param.dtype())) {
        buffer = buffer.to(param.device(), param.dtype());
      }
      EMBER_CHECK(param.is_contiguous(), "SGD: parameters must be contiguous, got strides ", param.strides());
      const bool first_step = !buffer.defined();
      // A new buffer is kept only once the kernel has filled it (a first step initialises it).
      Tensor momentum = buffer;
      if (o.momentum != 0 && first_step) momentum = empty_like(param);
      const int device = param.device().is_cpu() ? -1 : param.device().index();
      buckets[{device, param.dtype()}].push_back(
          {.param = param, .grad = grad.contiguous(), .momentum = momentum, .buffer_index = index - 1,
           .first_step = first_step});
    }
    for (auto& [key, pending] : buckets) {
      update(pending, o);
      for (const PendingUpdate& u : pending) buffers_[u.buffer_index] = u.momentum;
    }
  }
}

std::map<std::string, Tensor> SGD::state_dict() const {
  std::map<std::string, Tensor> out;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (buffers_[i].defined()) out["state." + std::to_string(i) + ".momentum_buffer"] = buffers_[i];
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    out["group." + std::to_string(g) + ".lr"] = tensor(std::vector<double>{groups_[g].options.lr});
  }
  return out;
}

void SGD::load_state_dict(const std::map<std::string, Tensor>& state) {
  std::vector<Tensor> params = parameters();
  std::vector<Tensor> buffers(params.size());
  std::vector<double> rates = learning_rates();
  for (const auto& [key, value] : state) {
    EMBER_CHECK(value.defined(), "SGD::load_state_dict: \"", key, "\" is undefined");
    if (auto param_index = parse_index(key, "state.", ".momentum_buffer")) {
      const size_t index = *param_index;
      EMBER_CHECK(index < params.size(), "SGD::load_state_dict: \"", key, "\" names parameter ", index, " but there are ",
                  params.size());
      EMBER_CHECK(value.sizes() == params[index].sizes(), "SGD::load_state_dict: \"", key, "\" has shape ",
                  value.sizes(), " but parameter ", index, " is ", params[index].sizes());
      buffers[index] = value.to(params[index].device(), params[index].dtype()).clone();
    } else if (auto group_index = parse_index(key, "group.", ".lr")) {
      const size_t index = *group_index;
      EMBER_CHECK(value.numel() == 1, "SGD::load_state_dict: \"", key, "\" must hold one number, got shape ",
                  value.sizes());
      EMBER_CHECK(index < rates.size(), "SGD::load_state_dict: \"", key, "\" names group ", index, " but there are ",
                  rates.size());
      rates[index] = value.item<double>();
      EMBER_CHECK(rates[index] >= 0, "SGD::load_state_dict: \"", key, "\" is a negative learning rate ", rates[index]);
    } else {
      throw Error(detail::str("SGD::load_state_dict: unexpected key \"", key, "\""));
    }
  }
  buffers_ = std::move(buffers);
  set_learning_rates(rates);
}

void SGD::to(Device device) {
  for (Tensor& b : buffers_) {
    if (b.defined()) b = b.to(device);
  }
}

std::vector<double> SGD::learning_rates() const {
  std::vector<double> out;
  for (const auto& g : groups_) out.push_back(g.options.lr);
  return out;
}

void SGD::set_learning_rates(const std::vector<double>& rates) {
  EMBER_CHECK(rates.size() == groups_.size(), "SGD: ", rates.size(), " learning rates for ", groups_.size(), " groups");
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options.lr = rates[g];
}

}  // namespace ember::optim
