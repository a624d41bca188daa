// ember-mnist: trains the tutorial network on MNIST, from top to bottom in the order a user
// writes it: the model, the device, the data, the loop. `ember-mnist --help` lists the flags.
// Several devices: --devices cuda:0,cuda:1 (or --gpus 2, or cpu,cpu for CPU replicas) wraps the
// model in parallel::DataParallel; `mpirun -np N ember-mnist --distributed` trains one replica
// per process, each on its rows of every batch, and rank 0 logs and saves.
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "ember/ember.h"
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
  int64_t limit_train = 0;  // 0: every example; else the first N (a quick run, as on emulated GPUs)
  int64_t limit_test = 0;
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
  std::map<std::string, ember::Tensor> tensors;
  try {
    tensors = nn::read_safetensors(path);
  } catch (const ember::Error& e) {
    throw ember::Error(ember::detail::str("--resume: ", e.what()));  // the reader's message names the file
  }
  Checkpoint c;
  for (auto& [name, t] : tensors) {
    if (name.rfind("model.", 0) == 0) c.model[name.substr(6)] = t;
    else if (name.rfind("optim.", 0) == 0) c.optim[name.substr(6)] = t;
  }
  EMBER_CHECK(tensors.count("meta.epoch") == 1, "--resume ", path,
              " has no meta.epoch entry; is it a checkpoint written by ember-mnist --save?");
  c.epoch = static_cast<int>(tensors.at("meta.epoch").item<int64_t>());
  return c;
}

// A command line that cannot run: main() reports it with exit code 2 (an error in the run: 1).
struct UsageError : ember::Error {
  using ember::Error::Error;
};

template <class... Args>
void check_flag(bool ok, const Args&... message) {
  if (!ok) throw UsageError(ember::detail::str(message...));
}

// The cores this process may run on (its affinity mask, which taskset and container limits
// narrow), at least 1.
int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

// The ranges CLI11 cannot say in words: each message names the flag, the bound and the value.
void check_ranges(Flags& flags) {
  check_flag(flags.epochs >= 1, "--epochs must be at least 1, got ", flags.epochs);
  check_flag(flags.batch_size >= 1, "--batch-size must be at least 1, got ", flags.batch_size);
  check_flag(flags.test_batch_size >= 1, "--test-batch-size must be at least 1, got ", flags.test_batch_size);
  check_flag(std::isfinite(flags.lr) && flags.lr >= 0, "--lr must be a finite number >= 0, got ", flags.lr);
  check_flag(std::isfinite(flags.momentum) && flags.momentum >= 0, "--momentum must be a finite number >= 0, got ",
             flags.momentum);
  check_flag(flags.gpus >= 0, "--gpus must be at least 0, got ", flags.gpus);
  check_flag(flags.threads >= 0, "--threads must be at least 0 (0: all cores), got ", flags.threads);
  check_flag(flags.workers >= 0, "--workers must be at least 0, got ", flags.workers);
  check_flag(flags.limit_train >= 0, "--limit-train must be at least 0 (0: all), got ", flags.limit_train);
  check_flag(flags.limit_test >= 0, "--limit-test must be at least 0 (0: all), got ", flags.limit_test);
  // More kernel threads than cores only wait on each other (--threads 1000 on 2 cores made an
  // epoch 40x slower). The run goes on with the core count rather than stopping: a result is
  // bit-for-bit repeatable for a given thread count, and the warning names the count used.
  const int cores = usable_cores();
  if (flags.threads > cores) {
    std::fprintf(stderr, "ember-mnist: warning: --threads %d is more than the %d cores this process may use; "
                 "using %d\n", flags.threads, cores, cores);
    flags.threads = cores;
  }
}

// --data must be a folder (the reader names the files missing inside it).
void check_data_folder(const std::string& data) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(data, ec);
  check_flag(fs::exists(status), "--data ", data, ": no such folder (run scripts/fetch-mnist ", data,
             " to download MNIST there)");
  check_flag(fs::is_directory(status), "--data ", data, " is a file, not a folder: give the folder that holds "
             "train-images-idx3-ubyte(.gz) and the three other MNIST files");
}

void check_resume_file(const std::string& path) {
  std::error_code ec;
  check_flag(std::filesystem::is_regular_file(path, ec), "--resume ", path, ": no such file (give a checkpoint "
             "written by --save)");
}

// A file that --save or --log will write: its folder must exist and be writable, and the path
// must not be a folder, so that a bad path stops the run before the first epoch, not after it.
void check_writable(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  check_flag(!fs::is_directory(path, ec), flag, " ", path, " is a folder; give a file name");
  const fs::path folder = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  check_flag(fs::is_directory(folder, ec), flag, " ", path, ": the folder ", folder.string(), " does not exist");
  // A real file, created and removed, rather than access(W_OK): root passes access() on a
  // read-only mount or in /proc, where the checkpoint's own temporary file would then fail.
  std::string probe = (folder / ".ember-mnist-write-test-XXXXXX").string();
  const int fd = mkstemp(probe.data());
  if (fd < 0) {
    throw UsageError(ember::detail::str(flag, " ", path, ": cannot write in the folder ", folder.string(), " (",
                                        std::strerror(errno), ")"));
  }
  close(fd);
  unlink(probe.c_str());
  // errno is read in a statement of its own, after the call that set it.
  if (access(path.c_str(), F_OK) == 0 && access(path.c_str(), W_OK) != 0) {
    throw UsageError(ember::detail::str(flag, " ", path, ": the file exists and cannot be written (",
                                        std::strerror(errno), ")"));
  }
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

struct TestResult {
  double loss = 0, accuracy = 0;  // mean cross-entropy; percent correct
  int64_t correct = 0, count = 0;
};

// Test loss and accuracy over the whole test set, without recording a graph. Across processes
// rank 0 tests alone, on its own replica.
TestResult evaluate(nn::Module& model, ember::parallel::DataParallel* dp, bool distributed,
                    ember::data::DataLoader& test_loader, const ember::Device& device) {
  ember::NoGradGuard no_grad;
  model.eval();
  TestResult r;
  double loss_sum = 0;
  for (auto [inputs, target] : test_loader) {
    target = target.to(device);
    ember::Tensor logits = dp && !distributed ? dp->forward(inputs) : model.forward(inputs.to(device));
    loss_sum += F::cross_entropy(logits, target, F::Reduction::Sum).item<float>();
    r.correct += ember::eq(logits.argmax(1), target).sum().item<int64_t>();
    r.count += target.size(0);
  }
  // count > 0: run() refuses an empty test set.
  r.loss = loss_sum / static_cast<double>(r.count);
  r.accuracy = 100.0 * static_cast<double>(r.correct) / static_cast<double>(r.count);
  return r;
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
  if (root) {
    if (!flags.save.empty()) check_writable("--save", flags.save);
    if (!flags.log.empty()) check_writable("--log", flags.log);
  }
  const std::string where = flags.distributed ? std::to_string(dist.world_size) + " ranks on " + device.str()
                            : dp ? devices_str(dp->devices()) : device.str();

  std::shared_ptr<ember::data::Dataset> train_set = std::make_shared<ember::data::MNIST>(flags.data, ember::data::Split::Train);
  std::shared_ptr<ember::data::Dataset> test_set = std::make_shared<ember::data::MNIST>(flags.data, ember::data::Split::Test);
  if (flags.limit_train > 0) train_set = ember::data::Subset::first(train_set, flags.limit_train);
  if (flags.limit_test > 0) test_set = ember::data::Subset::first(test_set, flags.limit_test);
  EMBER_CHECK(train_set->size() > 0 && test_set->size() > 0, "--data ", flags.data, ": the ",
              train_set->size() == 0 ? "training" : "test", " set is empty (its IDX files have a count of 0); "
              "there is nothing to ", train_set->size() == 0 ? "train on" : "test on");
  const bool to_gpu = device.is_cuda();  // batches bound for a GPU are staged in pinned memory
  // --batch-size is the global batch: across processes each rank takes its rows of it.
  ember::data::DataLoader train_loader(train_set, {.batch_size = flags.batch_size, .shuffle = true,
                                                   .num_workers = flags.workers, .seed = flags.seed,
                                                   .pin_memory = to_gpu,
                                                   .distributed = {.num_replicas = dist.world_size, .rank = dist.rank}});
  ember::data::DataLoader test_loader(test_set, {.batch_size = flags.test_batch_size, .pin_memory = to_gpu});
  auto loss_fn = [](const ember::Tensor& output, const ember::Tensor& target) { return F::cross_entropy(output, target); };

  if (first_epoch > flags.epochs) {
    // The checkpoint already holds every epoch asked for: nothing to train, so say so and report
    // the checkpoint's own test figures instead of a run that never happened.
    if (!root) return 0;
    std::printf("--resume %s was saved after epoch %d and --epochs is %d: nothing left to train "
                "(raise --epochs to train on); testing the checkpoint\n", flags.resume.c_str(), first_epoch - 1,
                flags.epochs);
    const TestResult r = evaluate(model, dp.get(), flags.distributed, test_loader, device);
    std::printf("final: %d epochs (all from the checkpoint), test accuracy %.2f%%, test loss %.4f (%lld/%lld) "
                "on %s\n", first_epoch - 1, r.accuracy, r.loss, static_cast<long long>(r.correct),
                static_cast<long long>(r.count), where.c_str());
    return 0;
  }

  std::ofstream log;
  if (!flags.log.empty() && root) {
    log.open(flags.log, first_epoch > 1 ? std::ios::app : std::ios::trunc);
    EMBER_CHECK(log.good(), "--log ", flags.log, ": cannot open the file for writing (", std::strerror(errno), ")");
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
    const TestResult r = evaluate(model, dp.get(), flags.distributed, test_loader, device);
    test_loss = r.loss;
    accuracy = r.accuracy;
    std::printf("epoch %d: test loss %.4f, accuracy %.2f%% (%lld/%lld), %.0f samples/s\n", epoch,
                test_loss, accuracy, static_cast<long long>(r.correct), static_cast<long long>(r.count),
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
  // Ranges are checked by check_ranges, whose messages name the flag, the bound and the value.
  app.add_option("--data", flags.data, "folder with the four MNIST IDX files (.gz or raw)");
  app.add_option("--epochs", flags.epochs, "epochs to train (>= 1)");
  app.add_option("--batch-size", flags.batch_size, "training batch size (>= 1)");
  app.add_option("--test-batch-size", flags.test_batch_size, "test batch size (>= 1)");
  app.add_option("--lr", flags.lr, "SGD learning rate (>= 0)");
  app.add_option("--momentum", flags.momentum, "SGD momentum (>= 0)");
  app.add_option("--device", flags.device, "cpu, cuda or cuda:N");
  app.add_option("--devices", flags.devices, "data parallel over these: cuda:0,cuda:1 (or cpu,cpu for CPU replicas)");
  app.add_option("--gpus", flags.gpus, "data parallel over cuda:0..cuda:(N-1)");
  app.add_flag("--distributed", flags.distributed, "one replica per process under mpirun (MPI on CPU, NCCL on "
               "--device cuda); --batch-size is the global batch, rank 0 logs and saves");
  app.add_option("--seed", flags.seed, "seed of the initial weights and the shuffle");
  app.add_option("--threads", flags.threads, "CPU threads (0: all cores; more than the cores: the core count)");
  app.add_option("--workers", flags.workers, "background threads preparing batches");
  app.add_option("--limit-train", flags.limit_train, "train on the first N training examples only (0: all)");
  app.add_option("--limit-test", flags.limit_test, "test on the first N test examples only (0: all)");
  app.add_option("--save", flags.save, "write a checkpoint (model + optimizer) after every epoch");
  app.add_option("--resume", flags.resume, "continue from a checkpoint written by --save");
  app.add_option("--log", flags.log, "CSV log: epoch, step, loss, accuracy, samples/s");
  // Exit codes: 0 done (and --help), 2 a command line that cannot run, 1 an error while running.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help
    std::fprintf(stderr, "ember-mnist: %s (ember-mnist --help lists the flags)\n", e.what());
    return 2;
  }
  try {
    check_ranges(flags);
    check_data_folder(flags.data);
    if (!flags.resume.empty()) check_resume_file(flags.resume);
    return run(flags);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "ember-mnist: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {  // ember::Error, and anything a dependency throws
    std::fprintf(stderr, "ember-mnist: %s\n", error.what());
    return 1;
  }
}
