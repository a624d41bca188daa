#include "ember/optim/training_checkpoint.h"

#include <bit>

#include "ember/common/error.h"
#include "ember/core/generator.h"
#include "ember/nn/checkpoint.h"
#include "ember/nn/module.h"

namespace ember::optim {

namespace {

// The entries of `all` under "<prefix>", with the prefix cut.
std::map<std::string, Tensor> under(const std::map<std::string, Tensor>& all, const std::string& prefix) {
  std::map<std::string, Tensor> out;
  for (const auto& [key, value] : all) {
    if (key.compare(0, prefix.size(), prefix) == 0) out[key.substr(prefix.size())] = value;
  }
  return out;
}

Tensor int64_entry(int64_t v) { return tensor(std::vector<int64_t>{v}); }

int64_t read_int64(const std::string& path, const std::map<std::string, Tensor>& all, const std::string& key) {
  const auto it = all.find(key);
  EMBER_CHECK(it != all.end(), "load_training_checkpoint: ", path, " has no \"", key,
              "\" entry; is it a checkpoint written by save_training_checkpoint?");
  EMBER_CHECK(it->second.numel() == 1 && it->second.dtype() == kInt64, "load_training_checkpoint: ", path, ": \"", key,
              "\" must be one int64, got ", dtype_name(it->second.dtype()), " of shape ", it->second.sizes());
  return it->second.item<int64_t>();
}

// Deep copies, to put back when a later part of the load fails.
std::map<std::string, Tensor> snapshot(const std::map<std::string, Tensor>& state) {
  std::map<std::string, Tensor> out;
  for (const auto& [key, value] : state) out[key] = value.detach().clone();
  return out;
}

}  // namespace

void save_training_checkpoint(const std::string& path, const nn::Module& model, const Optimizer& optimizer,
                              const Scheduler* scheduler, const TrainingProgress& progress,
                              const std::map<std::string, std::string>& metadata) {
  std::map<std::string, Tensor> tensors;
  for (auto& [name, t] : model.state_dict()) tensors["model." + name] = t;
  for (auto& [name, t] : optimizer.state_dict()) tensors["optim." + name] = t;
  if (scheduler != nullptr) {
    for (auto& [name, t] : scheduler->state_dict()) tensors["scheduler." + name] = t;
  }
  for (auto& [name, t] : progress.extra) tensors["extra." + name] = t;
  const Generator& rng = default_generator();
  tensors["rng.seed"] = int64_entry(std::bit_cast<int64_t>(rng.seed()));
  tensors["rng.offset"] = int64_entry(std::bit_cast<int64_t>(rng.offset()));
  tensors["meta.epoch"] = int64_entry(progress.epoch);
  tensors["meta.step"] = int64_entry(progress.step);
  std::map<std::string, std::string> meta = metadata;
  meta["format"] = "ember-training";
  nn::write_safetensors(path, tensors, meta);
}

TrainingProgress load_training_checkpoint(const std::string& path, nn::Module& model, Optimizer& optimizer,
                                          Scheduler* scheduler) {
  const std::map<std::string, Tensor> all = nn::read_safetensors(path);  // names the file and the fault
  TrainingProgress progress;
  progress.epoch = read_int64(path, all, "meta.epoch");
  progress.step = read_int64(path, all, "meta.step");
  const uint64_t seed = std::bit_cast<uint64_t>(read_int64(path, all, "rng.seed"));
  const uint64_t offset = std::bit_cast<uint64_t>(read_int64(path, all, "rng.offset"));
  progress.extra = under(all, "extra.");
  const auto scheduler_state = under(all, "scheduler.");
  EMBER_CHECK(scheduler_state.empty() || scheduler != nullptr, "load_training_checkpoint: ", path,
              " holds a scheduler's state; pass the scheduler to restore it into");
  EMBER_CHECK(!scheduler_state.empty() || scheduler == nullptr, "load_training_checkpoint: ", path,
              " holds no scheduler state, but a scheduler was given");
  // Model, then optimizer, then scheduler; each checks before it changes anything, and a later
  // failure puts the earlier ones back.
  const auto model_before = snapshot(model.state_dict());
  const auto optimizer_before = snapshot(optimizer.state_dict());
  auto with_file = [&](const char* part, auto&& load) {
    try {
      load();
    } catch (const Error& e) {
      throw Error(detail::str("load_training_checkpoint: ", path, ": the ", part, " state does not fit: ", e.what()));
    }
  };
  with_file("model", [&] { model.load_state_dict(under(all, "model.")); });
  try {
    with_file("optimizer", [&] { optimizer.load_state_dict(under(all, "optim.")); });
    if (scheduler != nullptr) with_file("scheduler", [&] { scheduler->load_state_dict(scheduler_state); });
  } catch (...) {
    model.load_state_dict(model_before);
    optimizer.load_state_dict(optimizer_before);
    throw;
  }
  Generator& rng = default_generator();
  rng.manual_seed(seed);
  rng.set_offset(offset);
  return progress;
}

}  // namespace ember::optim
