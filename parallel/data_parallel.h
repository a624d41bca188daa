// Data parallelism: one replica of a model per device, each minibatch split over them.
// defines: ember::parallel::DataParallel, DataParallelOptions, LossFn, ReplicaFactory
//
//   ember::parallel::DataParallel dp(model, ember::cuda::devices());   // wrap once (moves the model)
//   auto opt = dp.make_optimizer<ember::optim::SGD>({.lr = 0.01, .momentum = 0.5});
//   for (auto [inputs, target] : loader) {
//     opt.zero_grad();
//     ember::Tensor loss = dp.train_step(inputs, target, loss_fn);  // forward + backward everywhere
//     opt.step();                                                    // every replica, same update
//   }
//
// Note [DataParallel step]: train_step splits the batch along dim 0 (the first N % R replicas
// take one row more), and on every replica at once (a thread each; on CUDA each device's own
// stream) moves its shard there, runs forward, the loss and backward seeded with n_r / N, so
// that the sum over replicas of their gradients is the full-batch gradient of the mean-reduced
// loss. Parameters are grouped into buckets in reverse order (the order backward finishes them),
// the first one small (first_bucket_bytes) so communication starts early, the others up to
// bucket_bytes. A grad-ready hook copies each final gradient into its bucket's flat buffer; the
// moment a bucket is full, and every earlier bucket has been launched, its sum is started
// (all_reduce_async) while backward goes on. After backward each replica waits for its buckets
// and every parameter's .grad becomes a view of the reduced buffer: the same gradient, bit for
// bit, on every replica. Parameters that got no gradient (unused, or a replica whose shard was
// empty) count as zeros, so every replica always launches every bucket in the same order.
// The hooks are removed from the parameters when the DataParallel is destroyed.
//
// Errors: input checks run on the caller before any replica starts. A replica whose forward or
// loss throws still takes part in every bucket's collective (with zeros) before the error is
// rethrown, so the other replicas are not left waiting; an error inside a collective itself
// (a broken NCCL or MPI connection) may leave the other ranks waiting.
#pragma once

#include <concepts>
#include <functional>
#include <memory>
#include <vector>

#include "ember/core/device.h"
#include "ember/core/tensor.h"
#include "ember/nn/module.h"
#include "ember/optim/sgd.h"
#include "ember/parallel/communicator.h"
#include "ember/parallel/replicated_optimizer.h"

namespace ember::parallel {

struct DataParallelOptions {
  size_t bucket_bytes = 25u << 20;       // the cap of every bucket but the first (PyTorch DDP: 25 MiB)
  size_t first_bucket_bytes = 1u << 20;  // the first bucket's cap (PyTorch DDP: 1 MiB)
  // The loss averages over the batch (cross_entropy's default). Set false for a summed loss:
  // the replicas' gradients are then added unweighted.
  bool mean_loss = true;
  // Debug: train_step first checks that every replica's parameters equal replica 0's, bit for
  // bit (check_replicas()), and throws naming the first that differs.
  bool check_replicas = false;
};

// The loss of one replica's output and target (a one-element tensor).
using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;
// Makes a fresh module of the model's type (any weights: the replicas are overwritten).
using ReplicaFactory = std::function<std::shared_ptr<nn::Module>()>;

// The options type of an optimizer, for make_optimizer<Opt>(options).
template <class Opt>
struct OptimizerOptionsOf;
template <>
struct OptimizerOptionsOf<optim::SGD> {
  using type = optim::SGDOptions;
};

class DataParallel {
 public:
  // One process, one replica per device: `model` itself becomes replica 0 (moved to devices[0]);
  // the others are made by M's default constructor (the default generator is left as it was)
  // and get replica 0's weights by a broadcast. Devices are all CUDA (NCCL between them) or all
  // CPU ("cpu,cpu": replicas on threads, CpuCommunicator). The model must stay alive and must
  // not be moved while the DataParallel exists. Throws ember::Error for no devices, a mix of
  // CPU and CUDA, a CUDA device listed twice or not available, or a CUDA build missing.
  template <class M>
    requires std::derived_from<M, nn::Module> && std::default_initializable<M>
  DataParallel(M& model, std::vector<Device> devices, DataParallelOptions options = {})
      : DataParallel(static_cast<nn::Module&>(model), std::move(devices),
                     ReplicaFactory([] { return std::make_shared<M>(); }), options) {}
  DataParallel(nn::Module& model, std::vector<Device> devices, ReplicaFactory make_replica,
               DataParallelOptions options = {});
  // Several processes (mpirun), one replica each: `model`, already on this process's device, is
  // this process's replica; `comm` connects the processes (MpiCommunicator for CPU models, an
  // NcclCommunicator for CUDA ones; parallel/distributed.h makes the right one). Every rank's
  // parameters become rank 0's (a broadcast), so the ranks start identical.
  DataParallel(nn::Module& model, std::shared_ptr<Communicator> comm, DataParallelOptions options = {});
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Forward and backward on every replica (Note [DataParallel step]); on return every replica's
  // .grad holds the full-batch gradient (replacing, not adding to, what was there). Returns the
  // full-batch loss on devices()[0] (across processes: this rank's loss), detached. `inputs` and
  // `target` may be on any device; they must have the same size along dim 0, at least 1 (across
  // processes a rank may pass 0 rows). `loss_fn` is called on every replica's thread at once.
  // Replicas take train/eval mode from the model.
  Tensor train_step(const Tensor& inputs, const Tensor& target, const LossFn& loss_fn);
  // The outputs of the last train_step, gathered along dim 0 onto devices()[0], detached.
  Tensor last_output() const;

  // Inference: split, forward on every replica at once without recording a graph, gather onto
  // devices()[0]. The result carries no gradient (train with train_step).
  Tensor forward(const Tensor& inputs);
  Tensor operator()(const Tensor& inputs) { return forward(inputs); }

  // One optimizer per replica (Note [One optimizer per replica]), made by `make` from each
  // replica's parameters, or as Opt(params, options).
  ReplicatedOptimizer make_optimizer(const OptimizerFactory& make);
  template <class Opt>
  ReplicatedOptimizer make_optimizer(const typename OptimizerOptionsOf<Opt>::type& options) {
    return make_optimizer([options](std::vector<Tensor> params) -> std::unique_ptr<optim::Optimizer> {
      return std::make_unique<Opt>(std::move(params), options);
    });
  }

  // Throws ember::Error naming the first parameter of a replica that differs from replica 0's
  // (across processes: from rank 0's, by an all-reduce of the differences).
  void check_replicas();

  const std::vector<Device>& devices() const;  // this process's replicas' devices
  size_t replicas() const;                     // in this process
  nn::Module& replica(size_t index);
  Communicator& communicator();
  // The parameter indices (into model.parameters()) of each bucket, in launch order.
  std::vector<std::vector<size_t>> buckets() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace ember::parallel
