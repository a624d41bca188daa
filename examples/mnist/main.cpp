// ember-mnist: trains the tutorial network on MNIST, from top to bottom in the order a user
// writes it: the model, the device, the data, the loop. `ember-mnist --help` lists the flags.
// Several devices: --devices cuda:0,cuda:1 (or --gpus 2, or cpu,cpu for CPU replicas) wraps the
// model in parallel::DataParallel; `mpirun -np N ember-mnist --distributed` trains one replica
// per process, each on its rows of every batch, and rank 0 logs and saves.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ember.h"
#include "examples/mnist/net.h"  // defines: ember::examples::Net

namespace nn = ember::nn;
namespace F = ember::nn::functional;
using ember::examples::Net;

struct Flags {
  std::string data = "data/mnist";
  int epochs = 10;
  int64_t batch_size = 64;
  int64_t test_batch_size = 1000;
  double lr = 0.01;
  double momentum = 0.9;
  std::string device = "cpu";
  std::string devices;  // "cuda:0,cuda:1", "cpu,cpu": DataParallel over them
  int gpus = 0;         // shorthand for --devices cuda:0,...,cuda:(N-1)
  bool distributed = false;
  uint64_t seed = 1;
  int threads = 0;
  int workers = 1;
  std::string save, resume, log;
};

// A checkpoint holds the model ("model.*"), the optimizer state ("optim.*") and the epoch reached.
void save_checkpoint(const std::string& path, nn::Module& model, ember::optim::Optimizer& opt, int epoch) {
  std::map<std::string, ember::Tensor> tensors;
  for (auto& [name, t] : model.state_dict()) tensors["model." + name] = t;
  for (auto& [name, t] : opt.state_dict()) tensors["optim." + name] = t;
  tensors["meta.epoch"] = ember::tensor(std::vector<int64_t>{epoch});
  nn::write_safetensors(path, tensors, {{"format", "ember-mnist"}});
}

struct Checkpoint {
  std::map<std::string, ember::Tensor> model, optim;
  int epoch = 0;
};

Checkpoint read_checkpoint(const std::string& path) {
  auto tensors = nn::read_safetensors(path);
  Checkpoint c;
  for (auto& [name, t] : tensors) {
    if (name.rfind("model.", 0) == 0) c.model[name.substr(6)] = t;
    else if (name.rfind("optim.", 0) == 0) c.optim[name.substr(6)] = t;
  }
  EMBER_CHECK(tensors.count("meta.epoch") == 1, "ember-mnist: ", path,
              " has no meta.epoch entry; is it a checkpoint written by ember-mnist --save?");
  c.epoch = static_cast<int>(tensors.at("meta.epoch").item<int64_t>());
  return c;
}

// The devices of --devices a,b,... or --gpus N; empty for a single device (--device).
std::vector<ember::Device> parse_devices(const Flags& flags) {
  EMBER_CHECK(flags.devices.empty() || flags.gpus == 0, "give --devices or --gpus, not both");
  std::vector<ember::Device> out;
  if (flags.gpus > 0) {
    EMBER_CHECK(flags.gpus <= ember::cuda::device_count(), "--gpus ", flags.gpus, " but ",
                ember::cuda::device_count(), " CUDA devices were found");
    for (int i = 0; i < flags.gpus; ++i) out.push_back(ember::Device::cuda(i));
  }
  std::stringstream list(flags.devices);
  for (std::string item; std::getline(list, item, ',');) {
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

std::string devices_str(const std::vector<ember::Device>& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ",") + d.str();
  return out;
}

// One line of progress: a bar redrawn in place on a terminal, plain lines otherwise.
void report_progress(bool tty, int epoch, int64_t step, int64_t steps, double loss, double samples_per_s,
                     double eta_s) {
  if (tty) {
    int filled = static_cast<int>(30 * step / std::max<int64_t>(steps, 1));
    std::printf("\repoch %d [%-30s] %lld/%lld loss %.4f  %.0f samples/s  ETA %.1fs", epoch,
                std::string(filled, '#').c_str(), static_cast<long long>(step),
                static_cast<long long>(steps), loss, samples_per_s, eta_s);
    std::fflush(stdout);
  } else if (step % 50 == 0 || step == steps) {
    std::printf("epoch %d step %lld/%lld loss %.4f %.0f samples/s\n", epoch, static_cast<long long>(step),
                static_cast<long long>(steps), loss, samples_per_s);
  }
}

int run(const Flags& flags) {
  ember::manual_seed(flags.seed);
  if (flags.threads > 0) ember::set_num_threads(flags.threads);

  Net model;                                   // 1. create the model
  ember::Device device(flags.device);          // 2. define the device(s)
  std::vector<ember::Device> devices = parse_devices(flags);
  ember::parallel::Distributed dist;           // one process unless --distributed (mpirun)
  if (flags.distributed) {
    EMBER_CHECK(devices.empty(), "--distributed runs one replica per process; drop --devices/--gpus "
                "and pick --device cpu or cuda");
    dist = ember::parallel::init_distributed(device.is_cuda());
    device = dist.device;
  }
  int first_epoch = 1;
  Checkpoint resumed;
  if (!flags.resume.empty()) {
    resumed = read_checkpoint(flags.resume);
    model.load_state_dict(resumed.model);
    first_epoch = resumed.epoch + 1;
  }

  // 3. move the model, onto one device or wrapped once over several (or over the processes).
  std::unique_ptr<ember::parallel::DataParallel> dp;
  std::unique_ptr<ember::optim::Optimizer> opt;
  const ember::optim::SGDOptions sgd{.lr = flags.lr, .momentum = flags.momentum};
  if (flags.distributed) {
    model.to(device);
    dp = std::make_unique<ember::parallel::DataParallel>(model, dist.comm);
  } else if (devices.size() > 1) {
    dp = std::make_unique<ember::parallel::DataParallel>(model, devices);
    device = devices[0];
  } else {
    if (devices.size() == 1) device = devices[0];
    model.to(device);
  }
  if (dp) {
    opt = std::make_unique<ember::parallel::ReplicatedOptimizer>(dp->make_optimizer<ember::optim::SGD>(sgd));
  } else {
    opt = std::make_unique<ember::optim::SGD>(model.parameters(), sgd);
  }
  if (!flags.resume.empty()) {
    opt->load_state_dict(resumed.optim);
    if (dist.is_root()) std::printf("resumed from %s after epoch %d\n", flags.resume.c_str(), first_epoch - 1);
  }
  const bool root = dist.is_root();  // rank 0 logs, tests and saves
  const std::string where = flags.distributed ? std::to_string(dist.world_size) + " ranks on " + device.str()
                            : dp ? devices_str(dp->devices()) : device.str();

  auto train_set = std::make_shared<ember::data::MNIST>(flags.data, ember::data::Split::Train);
  auto test_set = std::make_shared<ember::data::MNIST>(flags.data, ember::data::Split::Test);
  const bool to_gpu = device.is_cuda();  // batches bound for a GPU are staged in pinned memory
  // --batch-size is the global batch: across processes each rank takes its rows of it.
  ember::data::DataLoader train_loader(train_set, {.batch_size = flags.batch_size, .shuffle = true,
                                                   .num_workers = flags.workers, .seed = flags.seed,
                                                   .pin_memory = to_gpu,
                                                   .distributed = {.num_replicas = dist.world_size, .rank = dist.rank}});
  ember::data::DataLoader test_loader(test_set, {.batch_size = flags.test_batch_size, .pin_memory = to_gpu});
  auto loss_fn = [](const ember::Tensor& output, const ember::Tensor& target) { return F::cross_entropy(output, target); };

  std::ofstream log;
  if (!flags.log.empty() && root) {
    log.open(flags.log, first_epoch > 1 ? std::ios::app : std::ios::trunc);
    EMBER_CHECK(log.good(), "ember-mnist: cannot write the log file ", flags.log);
    if (first_epoch == 1) log << "epoch,step,loss,accuracy,samples_per_s\n";
  }
  const bool tty = root && isatty(STDOUT_FILENO);
  double accuracy = 0, test_loss = 0, total_samples_per_s = 0;
  using Clock = std::chrono::steady_clock;

  for (int epoch = first_epoch; epoch <= flags.epochs; ++epoch) {
    model.train();
    train_loader.set_epoch(epoch);
    int64_t step = 0, seen = 0;
    const int64_t steps = static_cast<int64_t>(train_loader.size());
    auto start = Clock::now();
    for (auto [inputs, target] : train_loader) {
      opt->zero_grad();
      ember::Tensor loss;
      if (dp) {
        loss = dp->train_step(inputs, target, loss_fn);  // 4. split over the replicas, averaged gradients
      } else {
        inputs = inputs.to(device);                      // 4. move each batch
        target = target.to(device);
        loss = loss_fn(model.forward(inputs), target);
        loss.backward();
      }
      opt->step();
      ++step;
      seen += inputs.size(0);
      double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      double rate = seen / std::max(elapsed, 1e-9);
      double loss_value = loss.item<float>();
      if (!root) continue;
      report_progress(tty, epoch, step, steps, loss_value, rate, (steps - step) * elapsed / step);
      if (log.is_open()) log << epoch << ',' << step << ',' << loss_value << ",," << rate << '\n';
    }
    double epoch_s = std::chrono::duration<double>(Clock::now() - start).count();
    total_samples_per_s = seen / std::max(epoch_s, 1e-9);
    if (tty) std::printf("\n");

    if (!root) continue;  // the other ranks go on to the next epoch; rank 0 catches up at its first all-reduce
    // Test loss and accuracy, without recording a graph.
    ember::NoGradGuard no_grad;
    model.eval();
    int64_t correct = 0, count = 0;
    double loss_sum = 0;
    for (auto [inputs, target] : test_loader) {
      target = target.to(device);
      // Across processes rank 0 tests alone, on its own replica.
      ember::Tensor logits = dp && !flags.distributed ? dp->forward(inputs) : model.forward(inputs.to(device));
      loss_sum += F::cross_entropy(logits, target, F::Reduction::Sum).item<float>();
      correct += ember::eq(logits.argmax(1), target).sum().item<int64_t>();
      count += target.size(0);
    }
    test_loss = loss_sum / static_cast<double>(count);
    accuracy = 100.0 * static_cast<double>(correct) / static_cast<double>(count);
    std::printf("epoch %d: test loss %.4f, accuracy %.2f%% (%lld/%lld), %.0f samples/s\n", epoch,
                test_loss, accuracy, static_cast<long long>(correct), static_cast<long long>(count),
                total_samples_per_s);
    std::fflush(stdout);
    if (log.is_open()) log << epoch << ",," << test_loss << ',' << accuracy << ',' << total_samples_per_s << '\n';
    if (!flags.save.empty()) save_checkpoint(flags.save, model, *opt, epoch);
  }
  if (root) {
    std::printf("final: %d epochs, test accuracy %.2f%%, test loss %.4f, %.0f samples/s on %s\n", flags.epochs,
                accuracy, test_loss, total_samples_per_s * dist.world_size, where.c_str());
  }
  return 0;
}

int main(int argc, char** argv) {
  Flags flags;
  CLI::App app{"ember-mnist: trains the tutorial network (Conv-Pool-ReLU x2, Linear) on MNIST"};
  app.add_option("--data", flags.data, "folder with the four MNIST IDX files (.gz or raw)");
  app.add_option("--epochs", flags.epochs, "epochs to train")->check(CLI::PositiveNumber);
  app.add_option("--batch-size", flags.batch_size, "training batch size")->check(CLI::PositiveNumber);
  app.add_option("--test-batch-size", flags.test_batch_size, "test batch size")->check(CLI::PositiveNumber);
  app.add_option("--lr", flags.lr, "SGD learning rate")->check(CLI::NonNegativeNumber);
  app.add_option("--momentum", flags.momentum, "SGD momentum")->check(CLI::NonNegativeNumber);
  app.add_option("--device", flags.device, "cpu, cuda or cuda:N");
  app.add_option("--devices", flags.devices, "data parallel over these: cuda:0,cuda:1 (or cpu,cpu for CPU replicas)");
  app.add_option("--gpus", flags.gpus, "data parallel over cuda:0..cuda:(N-1)")->check(CLI::NonNegativeNumber);
  app.add_flag("--distributed", flags.distributed, "one replica per process under mpirun (MPI on CPU, NCCL on "
               "--device cuda); --batch-size is the global batch, rank 0 logs and saves");
  app.add_option("--seed", flags.seed, "seed of the initial weights and the shuffle");
  app.add_option("--threads", flags.threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--workers", flags.workers, "background threads preparing batches")->check(CLI::NonNegativeNumber);
  app.add_option("--save", flags.save, "write a checkpoint (model + optimizer) after every epoch");
  app.add_option("--resume", flags.resume, "continue from a checkpoint written by --save");
  app.add_option("--log", flags.log, "CSV log: epoch, step, loss, accuracy, samples/s");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(flags);
  } catch (const ember::Error& error) {
    std::fprintf(stderr, "ember-mnist: %s\n", error.what());
    return 1;
  }
}
