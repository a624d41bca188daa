#include "ember/parallel/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/core/cuda/runtime.h"
#include "ember/core/generator.h"
#include "ember/core/ops.h"
#include "ember/data/distributed_sampler.h"
#include "ember/parallel/cpu_communicator.h"
#include "ember/parallel/nccl_communicator.h"

namespace ember::parallel {

namespace {

// Runs a job for every replica at once: replica 0 on the calling thread, the others on threads
// kept for the DataParallel's lifetime. Each thread takes the caller's grad mode. The first
// exception (in replica order) is rethrown on the caller once every replica has finished.
class ReplicaThreads {
 public:
  explicit ReplicaThreads(int replicas) : errors_(static_cast<size_t>(replicas)) {
    for (int r = 1; r < replicas; ++r) threads_.emplace_back([this, r] { loop(r); });
  }
  ~ReplicaThreads() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    start_.notify_all();
    for (auto& t : threads_) t.join();
  }
  ReplicaThreads(const ReplicaThreads&) = delete;
  ReplicaThreads& operator=(const ReplicaThreads&) = delete;

  void run(const std::function<void(int)>& job) {
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      grad_mode_ = autograd::grad_mode_enabled();
      remaining_ = static_cast<int>(threads_.size());
      for (auto& e : errors_) e = nullptr;
      ++generation_;
    }
    start_.notify_all();
    try {
      job(0);
    } catch (...) {
      errors_[0] = std::current_exception();
    }
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return remaining_ == 0; });
    job_ = nullptr;
    for (auto& e : errors_) {
      if (e) std::rethrow_exception(e);
    }
  }

 private:
  void loop(int r) {
    uint64_t seen = 0;
    while (true) {
      const std::function<void(int)>* job;
      bool grad_mode;
      {
        std::unique_lock lock(mutex_);
        start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        job = job_;
        grad_mode = grad_mode_;
      }
      autograd::set_grad_mode_enabled(grad_mode);
      try {
        (*job)(r);
      } catch (...) {
        errors_[static_cast<size_t>(r)] = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        --remaining_;
      }
      finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable start_, finished_;
  const std::function<void(int)>* job_ = nullptr;
  bool grad_mode_ = true;
  uint64_t generation_ = 0;
  int remaining_ = 0;
  bool stopping_ = false;
  std::vector<std::exception_ptr> errors_;
  std::vector<std::thread> threads_;  // last: started after everything they use exists
};

struct Bucket {
  std::vector<size_t> params;  // indices into the replica's parameter list
  int64_t numel = 0;
  DType dtype = kFloat32;
};

// The floating parameters and buffers, in order: what a broadcast makes identical.
std::vector<Tensor> floating_state(const nn::Module& module) {
  std::vector<Tensor> out;
  for (const Tensor& p : module.parameters()) out.push_back(p.detach());
  for (const Tensor& b : module.buffers()) {
    if (is_floating(b.dtype())) out.push_back(b.detach());
  }
  return out;
}

}  // namespace

struct DataParallel::State {
  struct Replica {
    std::shared_ptr<nn::Module> owned;  // null for the user's model
    nn::Module* module = nullptr;
    Device device;
    int rank = 0;
    std::vector<Tensor> params;
    std::vector<int64_t> hooks;  // per parameter, the handle of its grad-ready hook
    std::vector<Tensor> flat;  // one buffer per bucket
    std::vector<int64_t> pending;  // gradients still missing, per bucket
    std::vector<char> ready;       // per parameter, this step
    size_t next_launch = 0;
    std::vector<std::unique_ptr<Work>> works;
    bool in_backward = false;
    int64_t begin = 0, rows = 0;  // this replica's shard of the current batch
    Tensor output, loss;
  };

  DataParallelOptions options;
  std::shared_ptr<Communicator> comm;
  bool distributed = false;
  nn::Module* model = nullptr;
  std::vector<Device> devices;
  std::vector<Replica> replicas;
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;   // per parameter
  std::vector<int64_t> offset_of;  // per parameter, in its bucket
  std::unique_ptr<ReplicaThreads> threads;
  int64_t batch_rows = 0;

  // The user's model outlives this wrapper: its parameters drop the hooks registered on them.
  ~State() {
    for (Replica& rep : replicas) {
      for (size_t p = 0; p < rep.hooks.size(); ++p) rep.params[p].remove_grad_ready_hook(rep.hooks[p]);
    }
  }

  Tensor slice(Replica& rep, size_t p) {
    return rep.flat[bucket_of[p]].narrow(0, offset_of[p], rep.params[p].numel());
  }

  void launch_ready(Replica& rep) {
    while (rep.next_launch < buckets.size() && rep.pending[rep.next_launch] == 0) {
      size_t b = rep.next_launch++;
      rep.works[b] = comm->all_reduce_async(rep.rank, {rep.flat[b]}, ReduceOp::Sum);
    }
  }

  // The grad-ready hook: parameter p of replica r has its final gradient.
  void on_grad_ready(size_t r, size_t p, const Tensor& leaf) {
    Replica& rep = replicas[r];
    if (!rep.in_backward || rep.ready[p]) return;
    NoGradGuard no_grad;
    rep.ready[p] = 1;
    slice(rep, p).copy_(leaf.grad().reshape({-1}));
    if (--rep.pending[bucket_of[p]] == 0) launch_ready(rep);
  }

  // After backward: missing gradients count as zeros, every bucket is launched, then waited for,
  // and every .grad becomes a view of the reduced buffer.
  void finish(Replica& rep) {
    NoGradGuard no_grad;
    for (size_t b = rep.next_launch; b < buckets.size(); ++b) {
      for (size_t p : buckets[b].params) {
        if (!rep.ready[p]) {
          slice(rep, p).zero_();
          rep.ready[p] = 1;
        }
      }
      rep.pending[b] = 0;
    }
    launch_ready(rep);
    for (auto& work : rep.works) {
      work->wait();
      work.reset();
    }
    for (size_t p = 0; p < rep.params.size(); ++p) rep.params[p].set_grad(slice(rep, p).view(rep.params[p].sizes()));
  }

  void build_buckets() {
    const std::vector<Tensor>& params = replicas[0].params;
    bucket_of.assign(params.size(), 0);
    offset_of.assign(params.size(), 0);
    size_t cap = options.first_bucket_bytes, bytes = 0;
    for (size_t i = params.size(); i-- > 0;) {
      size_t nbytes = params[i].nbytes();
      if (!buckets.empty() && !buckets.back().params.empty() &&
          (buckets.back().dtype != params[i].dtype() || bytes + nbytes > cap)) {
        buckets.emplace_back();
        cap = options.bucket_bytes;
        bytes = 0;
      }
      if (buckets.empty()) buckets.emplace_back();
      Bucket& bucket = buckets.back();
      if (bucket.params.empty()) bucket.dtype = params[i].dtype();
      bucket_of[i] = buckets.size() - 1;
      offset_of[i] = bucket.numel;
      bucket.params.push_back(i);
      bucket.numel += params[i].numel();
      bytes += nbytes;
    }
  }

  void allocate_buffers(Replica& rep) {
    for (const Bucket& bucket : buckets) {
      rep.flat.push_back(zeros({bucket.numel}, {.dtype = bucket.dtype, .device = rep.device}));
    }
    rep.pending.assign(buckets.size(), 0);
    rep.works.resize(buckets.size());
    rep.ready.assign(rep.params.size(), 0);
  }

  void register_hooks(const std::shared_ptr<State>& self) {
    std::weak_ptr<State> weak = self;
    for (size_t r = 0; r < replicas.size(); ++r) {
      for (size_t p = 0; p < replicas[r].params.size(); ++p) {
        replicas[r].hooks.push_back(
            replicas[r].params[p].register_grad_ready_hook([weak, r, p](const Tensor& leaf) {
              if (auto state = weak.lock()) state->on_grad_ready(r, p, leaf);
            }));
      }
    }
  }

  void broadcast_from_rank0() {
    threads->run([&](int r) {
      std::vector<Tensor> state = floating_state(*replicas[r].module);
      comm->broadcast(replicas[r].rank, state, 0);
    });
  }

  void sync_modes() {
    for (Replica& rep : replicas) {
      if (rep.module != model) rep.module->train(model->is_training());
    }
  }

  // Splits a batch of `n` rows over this process's replicas (across processes: all of it here).
  void split(int64_t n) {
    batch_rows = n;
    for (size_t r = 0; r < replicas.size(); ++r) {
      if (distributed) {
        replicas[r].begin = 0;
        replicas[r].rows = n;
      } else {
        auto [begin, end] = data::shard_range(n, static_cast<int>(r), static_cast<int>(replicas.size()));
        replicas[r].begin = begin;
        replicas[r].rows = end - begin;
      }
    }
  }

  Tensor gather(const std::vector<Tensor>& outputs) {
    NoGradGuard no_grad;
    const Tensor* first = nullptr;
    for (const Tensor& o : outputs) {
      if (o.defined()) {
        first = &o;
        break;
      }
    }
    EMBER_CHECK(first != nullptr, "DataParallel: no replica produced an output");
    if (distributed) return *first;
    Shape shape = first->sizes();
    EMBER_CHECK(!shape.empty(), "DataParallel: a replica's output has no dims to gather along");
    shape[0] = batch_rows;
    Tensor out = empty(shape, {.dtype = first->dtype(), .device = devices[0]});
    for (size_t r = 0; r < replicas.size(); ++r) {
      if (replicas[r].rows == 0) continue;
      const Tensor& o = outputs[r];
      EMBER_CHECK(o.dim() == first->dim() && o.size(0) == replicas[r].rows, "DataParallel: replica ", r,
                  " returned an output of shape ", o.sizes(), " for a shard of ", replicas[r].rows, " rows");
      out.narrow(0, replicas[r].begin, replicas[r].rows).copy_(o);
    }
    return out;
  }
};

namespace {

void check_batch(const Tensor& inputs, const char* op, bool allow_empty) {
  EMBER_CHECK(inputs.defined() && inputs.dim() >= 1, "DataParallel::", op, ": expected inputs with a batch dim, got ",
              inputs.defined() ? shape_str(inputs.sizes()) : std::string("an undefined tensor"));
  EMBER_CHECK(allow_empty || inputs.size(0) >= 1, "DataParallel::", op, ": expected at least one row, got ",
              inputs.sizes());
}

}  // namespace

DataParallel::DataParallel(nn::Module& model, std::vector<Device> devices, ReplicaFactory make_replica,
                           DataParallelOptions options)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  s.options = options;
  s.model = &model;
  EMBER_CHECK(!devices.empty(), "DataParallel: expected at least one device, got none");
  const bool cuda = devices[0].is_cuda();
  std::set<int> seen;
  for (const Device& d : devices) {
    EMBER_CHECK(d.is_cuda() == cuda, "DataParallel: devices must be all CPU or all CUDA, got ", devices[0], " and ", d);
    if (d.is_cuda()) {
      EMBER_CHECK(seen.insert(d.index()).second, "DataParallel: ", d, " is listed twice");
      EMBER_CHECK(d.index() < cuda::device_count(), "DataParallel: ", d, " is not available (",
                  cuda::device_count(), " CUDA devices found)");
    }
  }
  EMBER_CHECK(!model.parameters().empty(), "DataParallel: the model has no parameters");
  EMBER_CHECK(make_replica != nullptr, "DataParallel: the replica factory is empty");
  s.devices = devices;
  model.to(devices[0]);
  const DType dtype = model.parameters()[0].dtype();
  const auto names = model.named_parameters();
  s.replicas.resize(devices.size());
  for (size_t r = 0; r < devices.size(); ++r) {
    State::Replica& rep = s.replicas[r];
    rep.device = devices[r];
    rep.rank = static_cast<int>(r);
    if (r == 0) {
      rep.module = &model;
    } else {
      // Building a replica draws initial weights; leave the user's random stream untouched.
      uint64_t offset = default_generator().offset();
      rep.owned = make_replica();
      default_generator().set_offset(offset);
      EMBER_CHECK(rep.owned != nullptr, "DataParallel: the replica factory returned null");
      rep.module = rep.owned.get();
      rep.module->to(dtype);
      rep.module->to(devices[r]);
      const auto replica_names = rep.module->named_parameters();
      EMBER_CHECK(replica_names.size() == names.size(), "DataParallel: a replica has ", replica_names.size(),
                  " parameters but the model has ", names.size());
      for (size_t i = 0; i < names.size(); ++i) {
        EMBER_CHECK(replica_names[i].first == names[i].first &&
                        replica_names[i].second.sizes() == names[i].second.sizes(),
                    "DataParallel: replica parameter ", replica_names[i].first, " ", replica_names[i].second.sizes(),
                    " does not match the model's ", names[i].first, " ", names[i].second.sizes());
      }
      // Buffers that no collective carries (integer counters) are copied directly.
      NoGradGuard no_grad;
      auto own = model.named_buffers();
      auto theirs = rep.module->named_buffers();
      for (size_t i = 0; i < own.size() && i < theirs.size(); ++i) {
        if (!is_floating(own[i].second.dtype())) Tensor(theirs[i].second.detach()).copy_(own[i].second);
      }
    }
    rep.params = rep.module->parameters();
  }
  if (cuda) {
    s.comm = std::make_shared<NcclCommunicator>(devices);
  } else {
    s.comm = std::make_shared<CpuCommunicator>(static_cast<int>(devices.size()));
  }
  s.threads = std::make_unique<ReplicaThreads>(static_cast<int>(devices.size()));
  s.broadcast_from_rank0();
  s.build_buckets();
  for (auto& rep : s.replicas) s.allocate_buffers(rep);
  s.register_hooks(state_);
}

DataParallel::DataParallel(nn::Module& model, std::shared_ptr<Communicator> comm, DataParallelOptions options)
    : state_(std::make_shared<State>()) {
  State& s = *state_;
  EMBER_CHECK(comm != nullptr, "DataParallel: the communicator is null");
  std::vector<int> local = comm->local_ranks();
  EMBER_CHECK(local.size() == 1, "DataParallel: across processes each process drives one replica, but the "
              "communicator gives this process ", local.size(), " ranks; pass the devices instead");
  EMBER_CHECK(!model.parameters().empty(), "DataParallel: the model has no parameters");
  s.options = options;
  s.comm = std::move(comm);
  s.distributed = true;
  s.model = &model;
  s.replicas.resize(1);
  State::Replica& rep = s.replicas[0];
  rep.module = &model;
  rep.rank = local[0];
  rep.params = model.parameters();
  rep.device = rep.params[0].device();
  for (const Tensor& p : rep.params) {
    EMBER_CHECK(p.device() == rep.device, "DataParallel: every parameter must be on one device, got ", rep.device,
                " and ", p.device());
  }
  s.devices = {rep.device};
  s.threads = std::make_unique<ReplicaThreads>(1);
  s.broadcast_from_rank0();
  s.build_buckets();
  s.allocate_buffers(rep);
  s.register_hooks(state_);
}

DataParallel::~DataParallel() = default;

Tensor DataParallel::train_step(const Tensor& inputs, const Tensor& target, const LossFn& loss_fn) {
  State& s = *state_;
  check_batch(inputs, "train_step", s.distributed);
  EMBER_CHECK(target.defined() && target.dim() >= 1 && target.size(0) == inputs.size(0),
              "DataParallel::train_step: inputs have ", inputs.size(0), " rows but the target ",
              target.defined() ? shape_str(target.sizes()) : std::string("is undefined"));
  EMBER_CHECK(loss_fn != nullptr, "DataParallel::train_step: the loss function is empty");
  if (s.options.check_replicas) check_replicas();
  s.sync_modes();
  s.split(inputs.size(0));
  const bool grad_mode = autograd::grad_mode_enabled();
  EMBER_CHECK(grad_mode, "DataParallel::train_step: grad mode is off (a NoGradGuard is active); use forward()");
  s.threads->run([&](int r) {
    State::Replica& rep = s.replicas[static_cast<size_t>(r)];
    rep.output = Tensor();
    rep.loss = Tensor();
    for (Tensor& p : rep.params) p.set_grad(Tensor());  // the step's gradient replaces the old one
    std::fill(rep.ready.begin(), rep.ready.end(), 0);
    for (size_t b = 0; b < s.buckets.size(); ++b) rep.pending[b] = static_cast<int64_t>(s.buckets[b].params.size());
    rep.next_launch = 0;
    // Across processes only the ranks together know the batch size: one small all-reduce.
    Tensor total_rows;
    if (s.distributed && s.options.mean_loss) {
      total_rows = full({1}, static_cast<double>(rep.rows), {.dtype = rep.params[0].dtype(), .device = rep.device});
      s.comm->all_reduce(rep.rank, total_rows);
    }
    struct BackwardScope {
      State::Replica& rep;
      explicit BackwardScope(State::Replica& r) : rep(r) { rep.in_backward = true; }
      ~BackwardScope() {
        rep.in_backward = false;
        for (auto& w : rep.works) w.reset();  // waits for collectives still running after an error
      }
    } scope(rep);
    // A replica that fails still takes part in every bucket's collective (with zeros), so that
    // the others are not left waiting for it; the error is rethrown on the caller.
    try {
      if (rep.rows > 0) {
      Tensor x = inputs.narrow(0, rep.begin, rep.rows).to(rep.device);
      Tensor t = target.narrow(0, rep.begin, rep.rows).to(rep.device);
      Tensor out = rep.module->forward(x);
      Tensor loss = loss_fn(out, t);
      EMBER_CHECK(loss.defined() && loss.numel() == 1, "DataParallel::train_step: the loss function must return "
                  "one element, got ", loss.defined() ? shape_str(loss.sizes()) : std::string("an undefined tensor"));
      Tensor seed;
      if (!s.options.mean_loss) {
        seed = ones(loss.sizes(), {.dtype = loss.dtype(), .device = loss.device()});
      } else if (s.distributed) {
        seed = div(full(loss.sizes(), static_cast<double>(rep.rows), {.dtype = loss.dtype(), .device = loss.device()}),
                   total_rows.to(loss.dtype()).reshape(loss.sizes()));
      } else {
        seed = full(loss.sizes(), static_cast<double>(rep.rows) / static_cast<double>(s.batch_rows),
                    {.dtype = loss.dtype(), .device = loss.device()});
      }
      loss.backward(seed);
      rep.output = out.detach();
      rep.loss = loss.detach();
      }
    } catch (...) {
      try {
        s.finish(rep);
      } catch (...) {  // the first error is the one to report
      }
      throw;
    }
    s.finish(rep);
  });
  if (s.distributed || s.replicas.size() == 1) return s.replicas[0].loss;
  // The full-batch loss: each replica's mean weighted by its share of the rows (or the sum).
  NoGradGuard no_grad;
  Tensor total;
  for (const auto& rep : s.replicas) {
    if (rep.rows == 0) continue;
    Tensor part = rep.loss.to(s.devices[0]);
    if (s.options.mean_loss) part = mul(part, static_cast<double>(rep.rows) / static_cast<double>(s.batch_rows));
    total = total.defined() ? add(total, part) : part;
  }
  return total;
}

Tensor DataParallel::last_output() const {
  std::vector<Tensor> outputs;
  for (const auto& rep : state_->replicas) outputs.push_back(rep.output);
  return state_->gather(outputs);
}

Tensor DataParallel::forward(const Tensor& inputs) {
  State& s = *state_;
  check_batch(inputs, "forward", s.distributed);
  s.sync_modes();
  s.split(inputs.size(0));
  NoGradGuard no_grad;
  std::vector<Tensor> outputs(s.replicas.size());
  s.threads->run([&](int r) {
    State::Replica& rep = s.replicas[static_cast<size_t>(r)];
    if (rep.rows == 0) return;
    outputs[static_cast<size_t>(r)] = rep.module->forward(inputs.narrow(0, rep.begin, rep.rows).to(rep.device));
  });
  return s.gather(outputs);
}

ReplicatedOptimizer DataParallel::make_optimizer(const OptimizerFactory& make) {
  EMBER_CHECK(make != nullptr, "DataParallel::make_optimizer: the factory is empty");
  std::vector<std::unique_ptr<optim::Optimizer>> optimizers;
  for (auto& rep : state_->replicas) optimizers.push_back(make(rep.module->parameters()));
  return ReplicatedOptimizer(std::move(optimizers));
}

namespace {

// max |a - b| over two tensors of the same shape, on the CPU in float64.
double max_difference(const Tensor& a, const Tensor& b) {
  Tensor x = a.detach().cpu().to(kFloat64).contiguous(), y = b.detach().cpu().to(kFloat64).contiguous();
  double worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    double d = std::abs(x.data<double>()[i] - y.data<double>()[i]);
    if (d != d) return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  Tensor x = a.detach().cpu().contiguous(), y = b.detach().cpu().contiguous();
  return x.dtype() == y.dtype() && x.numel() == y.numel() && std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

}  // namespace

void DataParallel::check_replicas() {
  State& s = *state_;
  NoGradGuard no_grad;
  const auto names = s.replicas[0].module->named_parameters();
  if (s.distributed) {
    State::Replica& rep = s.replicas[0];
    std::vector<Tensor> root;
    for (const Tensor& p : rep.params) root.push_back(p.detach().clone());
    s.comm->broadcast(rep.rank, root, 0);
    for (size_t i = 0; i < root.size(); ++i) {
      EMBER_CHECK(same_bits(root[i], rep.params[i]), "DataParallel: rank ", rep.rank, "'s ", names[i].first,
                  " differs from rank 0's by up to ", max_difference(root[i], rep.params[i]));
    }
    return;
  }
  for (size_t r = 1; r < s.replicas.size(); ++r) {
    for (size_t i = 0; i < names.size(); ++i) {
      const Tensor& mine = s.replicas[0].params[i];
      const Tensor& theirs = s.replicas[r].params[i];
      EMBER_CHECK(same_bits(mine, theirs), "DataParallel: replica ", r, " (", s.replicas[r].device, ")'s ",
                  names[i].first, " differs from replica 0's by up to ", max_difference(mine, theirs));
    }
  }
}

const std::vector<Device>& DataParallel::devices() const { return state_->devices; }
size_t DataParallel::replicas() const { return state_->replicas.size(); }
nn::Module& DataParallel::replica(size_t index) { return *state_->replicas.at(index).module; }
Communicator& DataParallel::communicator() { return *state_->comm; }

std::vector<std::vector<size_t>> DataParallel::buckets() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : state_->buckets) out.push_back(b.params);
  return out;
}

}  // namespace ember::parallel
