#include "ember/optim/param_group_optimizer.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <utility>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/ops.h"

namespace ember::optim {

namespace {

// The index and the rest of "<prefix><digits>.<rest>", or nullopt when `key` does not have that form.
std::optional<std::pair<size_t, std::string>> parse_key(const std::string& key, const std::string& prefix) {
  if (key.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot + 1 == key.size()) return std::nullopt;
  const std::string digits = key.substr(prefix.size(), dot - prefix.size());
  if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return std::make_pair(static_cast<size_t>(std::stoul(digits)), key.substr(dot + 1));
}

}  // namespace

void ParamGroupOptimizer::add_group_params(const std::vector<Tensor>& params) {
  for (const Tensor& p : params) {
    EMBER_CHECK(p.defined() && p.requires_grad() && p.is_leaf(), name_, ": every parameter must be a leaf tensor "
                "that requires grad");
  }
  state_.resize(state_.size() + params.size());
}

Tensor ParamGroupOptimizer::initial_state(size_t, size_t, const Tensor& param) const { return zeros_like(param); }

std::vector<Tensor> ParamGroupOptimizer::parameters() const {
  std::vector<Tensor> out;
  for (size_t g = 0; g < group_count(); ++g) {
    const auto& params = group_params(g);
    out.insert(out.end(), params.begin(), params.end());
  }
  return out;
}

void ParamGroupOptimizer::step() {
  NoGradGuard no_grad;
  size_t index = 0;
  for (size_t g = 0; g < group_count(); ++g) {
    const auto names = state_names(g);
    // This group's parameters by device (-1 for the CPU) and dtype: each bucket is one kernel call.
    std::map<std::pair<int, DType>, std::vector<ParamUpdate>> buckets;
    std::map<std::pair<int, DType>, std::vector<size_t>> owners;  // each update's parameter index
    for (const Tensor& param : group_params(g)) {
      ParamState& state = state_[index++];
      const Tensor grad = param.grad();
      if (!grad.defined()) continue;
      EMBER_CHECK(grad.device() == param.device() && grad.sizes() == param.sizes() && grad.dtype() == param.dtype(),
                  name_, ": parameter ", index - 1, " is ", param.sizes(), " ", dtype_name(param.dtype()), " on ",
                  param.device(), " but its gradient is ", grad.sizes(), " ", dtype_name(grad.dtype()), " on ",
                  grad.device());
      EMBER_CHECK(param.is_contiguous(), name_, ": parameters must be contiguous, got strides ", param.strides());
      ParamUpdate u{.param = param, .grad = grad.contiguous(), .buffers = {}, .step = state.step + 1,
                    .first_step = false};
      for (size_t slot = 0; slot < kMaxStateBuffers; ++slot) {
        if (names[slot].empty()) continue;
        Tensor& buffer = state.buffers[slot];
        // The state follows its parameter: model.to() after the optimizer was built just works.
        if (buffer.defined() && (buffer.device() != param.device() || buffer.dtype() != param.dtype())) {
          buffer = buffer.to(param.device(), param.dtype());
        }
        // A new buffer is kept only once the kernel has run (SGD's first step fills it).
        if (buffer.defined()) {
          u.buffers[slot] = buffer;
        } else {
          u.buffers[slot] = initial_state(g, slot, param);
          u.first_step = true;
        }
      }
      const std::pair<int, DType> key{param.device().is_cpu() ? -1 : param.device().index(), param.dtype()};
      buckets[key].push_back(std::move(u));
      owners[key].push_back(index - 1);
    }
    for (auto& [key, bucket] : buckets) {
      update(g, bucket);
      const std::vector<size_t>& which = owners[key];
      for (size_t k = 0; k < bucket.size(); ++k) {
        ParamState& state = state_[which[k]];
        state.step = bucket[k].step;
        for (size_t slot = 0; slot < kMaxStateBuffers; ++slot) {
          if (bucket[k].buffers[slot].defined()) state.buffers[slot] = bucket[k].buffers[slot];
        }
      }
    }
  }
}

size_t ParamGroupOptimizer::group_of(size_t index) const {
  EMBER_CHECK(index < state_.size(), name_, ": parameter ", index, " but there are ", state_.size());
  size_t group = 0, first = 0;
  while (first + group_params(group).size() <= index) first += group_params(group++).size();
  return group;
}

Tensor ParamGroupOptimizer::state(size_t index, const std::string& name) const {
  const auto names = state_names(group_of(index));
  for (size_t slot = 0; slot < kMaxStateBuffers; ++slot) {
    if (!names[slot].empty() && names[slot] == name) return state_[index].buffers[slot];
  }
  throw Error(detail::str(name_, ": parameter ", index, " has no state \"", name, "\""));
}

std::map<std::string, Tensor> ParamGroupOptimizer::state_dict() const {
  std::map<std::string, Tensor> out;
  size_t index = 0;
  for (size_t g = 0; g < group_count(); ++g) {
    const auto names = state_names(g);
    for (size_t k = 0; k < group_params(g).size(); ++k, ++index) {
      const ParamState& state = state_[index];
      const std::string prefix = "state." + std::to_string(index) + ".";
      for (size_t slot = 0; slot < kMaxStateBuffers; ++slot) {
        if (!names[slot].empty() && state.buffers[slot].defined()) out[prefix + names[slot]] = state.buffers[slot];
      }
      if (counts_steps_ && state.step > 0) out[prefix + "step"] = tensor(std::vector<int64_t>{state.step});
    }
  }
  const std::vector<double> rates = learning_rates(), moms = momenta();
  for (size_t g = 0; g < group_count(); ++g) {
    out["group." + std::to_string(g) + ".lr"] = tensor(std::vector<double>{rates[g]});
    if (!moms.empty()) out["group." + std::to_string(g) + ".momentum"] = tensor(std::vector<double>{moms[g]});
  }
  return out;
}

void ParamGroupOptimizer::load_state_dict(const std::map<std::string, Tensor>& state) {
  const std::string op = name_ + "::load_state_dict";
  const std::vector<Tensor> params = parameters();
  std::vector<size_t> group_of;
  for (size_t g = 0; g < group_count(); ++g) group_of.insert(group_of.end(), group_params(g).size(), g);
  // Everything is checked and built aside first, then swapped in: a bad key changes nothing.
  std::vector<ParamState> loaded(params.size());
  std::vector<double> rates = learning_rates(), moms = momenta();
  auto one_number = [&](const std::string& key, const Tensor& value) {
    EMBER_CHECK(value.numel() == 1, op, ": \"", key, "\" must hold one number, got shape ", value.sizes());
    return value.to(Device::cpu(), kFloat64).item<double>();
  };
  for (const auto& [key, value] : state) {
    EMBER_CHECK(value.defined(), op, ": \"", key, "\" is undefined");
    if (auto entry = parse_key(key, "state.")) {
      const auto& [index, what] = *entry;
      EMBER_CHECK(index < params.size(), op, ": \"", key, "\" names parameter ", index, " but there are ",
                  params.size());
      if (counts_steps_ && what == "step") {
        const double step = one_number(key, value);
        EMBER_CHECK(step >= 0 && step == static_cast<double>(static_cast<int64_t>(step)), op, ": \"", key,
                    "\" must be a step count >= 0, got ", step);
        loaded[index].step = static_cast<int64_t>(step);
        continue;
      }
      const auto names = state_names(group_of[index]);
      const auto slot = std::find(names.begin(), names.end(), what);
      EMBER_CHECK(!what.empty() && slot != names.end(), op, ": unexpected key \"", key, "\"");
      EMBER_CHECK(value.sizes() == params[index].sizes(), op, ": \"", key, "\" has shape ", value.sizes(),
                  " but parameter ", index, " is ", params[index].sizes());
      loaded[index].buffers[slot - names.begin()] = value.to(params[index].device(), params[index].dtype()).clone();
    } else if (auto group = parse_key(key, "group.")) {
      const auto& [index, what] = *group;
      EMBER_CHECK(index < rates.size(), op, ": \"", key, "\" names group ", index, " but there are ", rates.size());
      if (what == "lr") {
        rates[index] = one_number(key, value);
        EMBER_CHECK(rates[index] >= 0, op, ": \"", key, "\" is a negative learning rate ", rates[index]);
      } else if (what == "momentum" && !moms.empty()) {
        moms[index] = one_number(key, value);
        EMBER_CHECK(moms[index] >= 0, op, ": \"", key, "\" is a negative momentum ", moms[index]);
      } else {
        throw Error(detail::str(op, ": unexpected key \"", key, "\""));
      }
    } else {
      throw Error(detail::str(op, ": unexpected key \"", key, "\""));
    }
  }
  state_ = std::move(loaded);
  set_learning_rates(rates);
  if (!moms.empty()) set_momenta(moms);
}

void ParamGroupOptimizer::to(Device device) {
  for (ParamState& state : state_) {
    for (Tensor& b : state.buffers) {
      if (b.defined()) b = b.to(device);
    }
  }
}

std::vector<double> ParamGroupOptimizer::learning_rates() const {
  std::vector<double> out;
  for (size_t g = 0; g < group_count(); ++g) out.push_back(group_lr(g));
  return out;
}

void ParamGroupOptimizer::set_learning_rates(const std::vector<double>& rates) {
  EMBER_CHECK(rates.size() == group_count(), name_, ": ", rates.size(), " learning rates for ", group_count(),
              " groups");
  for (double r : rates) EMBER_CHECK(r >= 0, name_, ": learning rate must be >= 0, got ", r);
  for (size_t g = 0; g < group_count(); ++g) set_group_lr(g, rates[g]);
}

std::vector<double> ParamGroupOptimizer::momenta() const {
  std::vector<double> out;
  if (!has_momentum()) return out;
  for (size_t g = 0; g < group_count(); ++g) out.push_back(group_momentum(g));
  return out;
}

void ParamGroupOptimizer::set_momenta(const std::vector<double>& momenta) {
  EMBER_CHECK(has_momentum(), name_, " has no momentum option to set");
  EMBER_CHECK(momenta.size() == group_count(), name_, ": ", momenta.size(), " momenta for ", group_count(), " groups");
  for (double m : momenta) EMBER_CHECK(m >= 0, name_, ": momentum must be >= 0, got ", m);
  for (size_t g = 0; g < group_count(); ++g) set_group_momentum(g, momenta[g]);
}

}  // namespace ember::optim
