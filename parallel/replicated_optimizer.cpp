#include "ember/parallel/replicated_optimizer.h"

#include "ember/common/error.h"

namespace ember::parallel {

ReplicatedOptimizer::ReplicatedOptimizer(std::vector<std::unique_ptr<optim::Optimizer>> replicas)
    : replicas_(std::move(replicas)) {
  EMBER_CHECK(!replicas_.empty(), "ReplicatedOptimizer: expected at least one replica's optimizer");
  for (const auto& r : replicas_) EMBER_CHECK(r != nullptr, "ReplicatedOptimizer: an optimizer factory returned null");
}

void ReplicatedOptimizer::step() {
  for (auto& r : replicas_) r->step();
}

std::map<std::string, Tensor> ReplicatedOptimizer::state_dict() const { return replicas_[0]->state_dict(); }

void ReplicatedOptimizer::load_state_dict(const std::map<std::string, Tensor>& state) {
  // Replica 0 checks every key first (and throws changing nothing); the others then cannot fail.
  for (auto& r : replicas_) r->load_state_dict(state);
}

void ReplicatedOptimizer::to(Device device) { replicas_[0]->to(device); }

std::vector<double> ReplicatedOptimizer::learning_rates() const { return replicas_[0]->learning_rates(); }

void ReplicatedOptimizer::set_learning_rates(const std::vector<double>& rates) {
  for (auto& r : replicas_) r->set_learning_rates(rates);
}

std::vector<double> ReplicatedOptimizer::momenta() const { return replicas_[0]->momenta(); }

void ReplicatedOptimizer::set_momenta(const std::vector<double>& momenta) {
  for (auto& r : replicas_) r->set_momenta(momenta);
}

std::vector<Tensor> ReplicatedOptimizer::parameters() const { return replicas_[0]->parameters(); }

}  // namespace ember::parallel
