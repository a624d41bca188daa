// One optimizer per DataParallel replica, driven as one.
// defines: ember::parallel::ReplicatedOptimizer, OptimizerFactory
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "ember/optim/optimizer.h"

namespace ember::parallel {

// Makes the optimizer of one replica from that replica's parameters.
using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor> params)>;

// Note [One optimizer per replica]: every replica steps its own optimizer (state beside its own
// parameters) on the same averaged gradient, so the replicas stay identical with no
// communication after backward; broadcasting replica 0's weights after each step instead would
// send the whole model every step and order every device after one. state_dict() and
// parameters() are replica 0's (the same keys as a single-device optimizer, so checkpoints move
// between one device and many); load_state_dict() and set_learning_rates() go to every replica.
class ReplicatedOptimizer final : public optim::Optimizer {
 public:
  explicit ReplicatedOptimizer(std::vector<std::unique_ptr<optim::Optimizer>> replicas);

  void step() override;  // every replica's step
  std::map<std::string, Tensor> state_dict() const override;
  void load_state_dict(const std::map<std::string, Tensor>& state) override;
  // Replica r's state follows its own parameters; this moves replica 0's (as Optimizer::to).
  void to(Device device) override;
  std::vector<double> learning_rates() const override;
  void set_learning_rates(const std::vector<double>& rates) override;
  std::vector<double> momenta() const override;
  void set_momenta(const std::vector<double>& momenta) override;
  std::vector<Tensor> parameters() const override;  // replica 0's

  size_t replicas() const { return replicas_.size(); }
  optim::Optimizer& replica(size_t index) { return *replicas_.at(index); }

 private:
  std::vector<std::unique_ptr<optim::Optimizer>> replicas_;
};

}  // namespace ember::parallel
