#include "examples/common/trainer.h"

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

namespace ember::examples {

namespace {

namespace nn = ember::nn;
namespace F = ember::nn::functional;

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
void check_ranges(Flags& flags, const std::string& program) {
  check_flag(flags.epochs >= 1, "--epochs must be at least 1, got ", flags.epochs);
  check_flag(flags.stop_after >= 0, "--stop-after must be at least 0 (0: run every epoch), got ", flags.stop_after);
  check_flag(flags.batch_size >= 1, "--batch-size must be at least 1, got ", flags.batch_size);
  check_flag(flags.test_batch_size >= 1, "--test-batch-size must be at least 1, got ", flags.test_batch_size);
  check_flag(std::isfinite(flags.lr) && flags.lr >= 0, "--lr must be a finite number >= 0, got ", flags.lr);
  check_flag(std::isfinite(flags.momentum) && flags.momentum >= 0, "--momentum must be a finite number >= 0, got ",
             flags.momentum);
  check_flag(std::isfinite(flags.weight_decay) && flags.weight_decay >= 0, "--weight-decay must be a finite number "
             ">= 0, got ", flags.weight_decay);
  check_flag(flags.optimizer == "sgd" || flags.optimizer == "adamw", "--optimizer must be sgd or adamw, got \"",
             flags.optimizer, "\"");
  check_flag(flags.schedule == "none" || flags.schedule == "cosine", "--schedule must be none or cosine, got \"",
             flags.schedule, "\"");
  // (AdamW has no Nesterov option: --nesterov, ember-fashion's default, is left unused there.)
  check_flag(!flags.nesterov || flags.optimizer != "sgd" || flags.momentum > 0, "--nesterov needs --momentum > 0, "
             "got --momentum ", flags.momentum);
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
    std::fprintf(stderr, "%s: warning: --threads %d is more than the %d cores this process may use; "
                 "using %d\n", program.c_str(), flags.threads, cores, cores);
    flags.threads = cores;
  }
}

// --data must be a folder (the reader names the files missing inside it).
void check_data_folder(const std::string& data, const Recipe& recipe) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(data, ec);
  check_flag(fs::exists(status), "--data ", data, ": no such folder (", recipe.data_help, ")");
  check_flag(fs::is_directory(status), "--data ", data, " is a file, not a folder: give the folder that holds "
             "train-images-idx3-ubyte(.gz) and the three other IDX files");
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
  std::string probe = (folder / ".ember-write-test-XXXXXX").string();
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

// The optimizer of --optimizer, one per replica under DataParallel.
std::unique_ptr<optim::Optimizer> make_optimizer(const Flags& flags, nn::Module& model, parallel::DataParallel* dp) {
  const bool adamw = flags.optimizer == "adamw";
  const optim::AdamWOptions adamw_options{.lr = flags.lr, .weight_decay = flags.weight_decay};
  const optim::SGDOptions sgd_options{.lr = flags.lr, .momentum = flags.momentum, .weight_decay = flags.weight_decay,
                                      .nesterov = flags.nesterov};
  auto make = [=](std::vector<Tensor> params) -> std::unique_ptr<optim::Optimizer> {
    if (adamw) return std::make_unique<optim::AdamW>(std::move(params), adamw_options);
    return std::make_unique<optim::SGD>(std::move(params), sgd_options);
  };
  if (dp) return std::make_unique<parallel::ReplicatedOptimizer>(dp->make_optimizer(make));
  return make(model.parameters());
}

int run(const Flags& flags, const Recipe& recipe) {
  ember::manual_seed(flags.seed);
  if (flags.threads > 0) ember::set_num_threads(flags.threads);

  std::shared_ptr<nn::Module> model_ptr = recipe.make_model();  // 1. create the model
  nn::Module& model = *model_ptr;
  ember::Device device(flags.device);                           // 2. define the device(s)
  std::vector<ember::Device> devices = parse_devices(flags);
  ember::parallel::Distributed dist;  // one process unless --distributed (mpirun)
  if (flags.distributed) {
    EMBER_CHECK(devices.empty(), "--distributed runs one replica per process; drop --devices/--gpus "
                "and pick --device cpu or cuda");
    dist = ember::parallel::init_distributed(device.is_cuda());
    device = dist.device;
  }

  // A resumed run's weights go in before the model is replicated (DataParallel copies replica
  // 0's weights to the others); the optimizer and schedule follow once they exist.
  if (!flags.resume.empty()) {
    try {
      std::map<std::string, Tensor> weights;
      for (auto& [key, t] : nn::read_safetensors(flags.resume)) {
        if (key.rfind("model.", 0) == 0) weights[key.substr(6)] = t;
      }
      model.load_state_dict(weights);
    } catch (const ember::Error& e) {
      throw ember::Error(ember::detail::str("--resume: ", e.what()));  // the reader's message names the file
    }
  }

  // 3. move the model, onto one device or wrapped once over several (or over the processes).
  std::unique_ptr<ember::parallel::DataParallel> dp;
  if (flags.distributed) {
    model.to(device);
    dp = std::make_unique<ember::parallel::DataParallel>(model, dist.comm);
  } else if (devices.size() > 1) {
    dp = std::make_unique<ember::parallel::DataParallel>(model, devices, recipe.make_model);
    device = devices[0];
  } else {
    if (devices.size() == 1) device = devices[0];
    model.to(device);
  }
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(flags, model, dp.get());
  const bool root = dist.is_root();  // rank 0 logs, tests and saves
  if (root) {
    if (!flags.save.empty()) check_writable("--save", flags.save);
    if (!flags.log.empty()) check_writable("--log", flags.log);
  }
  const std::string where = flags.distributed ? std::to_string(dist.world_size) + " ranks on " + device.str()
                            : dp ? devices_str(dp->devices()) : device.str();

  std::shared_ptr<ember::data::Dataset> train_set =
      std::make_shared<ember::data::MNIST>(flags.data, ember::data::Split::Train, recipe.normalize);
  std::shared_ptr<ember::data::Dataset> test_set =
      std::make_shared<ember::data::MNIST>(flags.data, ember::data::Split::Test, recipe.normalize);
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
  const int64_t steps = static_cast<int64_t>(train_loader.size());
  // --schedule cosine: one scheduler step per batch, down to 0 over every batch of the run.
  std::unique_ptr<optim::LRScheduler> scheduler;
  if (flags.schedule == "cosine") scheduler = std::make_unique<optim::CosineAnnealingLR>(*opt, flags.epochs * steps);

  int first_epoch = 1;
  if (!flags.resume.empty()) {
    optim::TrainingProgress progress;
    try {
      progress = optim::load_training_checkpoint(flags.resume, model, *opt, scheduler.get());
    } catch (const ember::Error& e) {
      throw ember::Error(ember::detail::str("--resume: ", e.what()));  // the message names the file
    }
    first_epoch = static_cast<int>(progress.epoch) + 1;
    if (root) std::printf("resumed from %s after epoch %d\n", flags.resume.c_str(), first_epoch - 1);
  }

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

  const int last_epoch = flags.stop_after > 0 ? std::min(flags.stop_after, flags.epochs) : flags.epochs;
  for (int epoch = first_epoch; epoch <= last_epoch; ++epoch) {
    model.train();
    train_loader.set_epoch(epoch);
    int64_t step = 0, seen = 0;
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
      if (scheduler) scheduler->step();
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
    if (!flags.save.empty()) {
      optim::save_training_checkpoint(flags.save, model, *opt, scheduler.get(),
                                      {.epoch = epoch, .step = static_cast<int64_t>(epoch) * steps},
                                      {{"program", recipe.program}});
    }
  }
  if (root) {
    if (last_epoch < flags.epochs) std::printf("stopped after epoch %d of %d (--stop-after)\n", last_epoch, flags.epochs);
    std::printf("final: %d epochs, test accuracy %.2f%%, test loss %.4f, %.0f samples/s on %s\n", last_epoch,
                accuracy, test_loss, total_samples_per_s * dist.world_size, where.c_str());
  }
  return 0;
}

}  // namespace

int run_program(int argc, char** argv, const Recipe& recipe) {
  Flags flags = recipe.defaults;
  CLI::App app{recipe.description};
  // Ranges are checked by check_ranges, whose messages name the flag, the bound and the value.
  app.add_option("--data", flags.data, "folder with the four IDX files (.gz or raw)");
  app.add_option("--epochs", flags.epochs, "epochs to train (>= 1)");
  app.add_option("--stop-after", flags.stop_after, "stop after this epoch, as if killed there (the schedule still "
                 "spans --epochs; --resume goes on)");
  app.add_option("--batch-size", flags.batch_size, "training batch size (>= 1)");
  app.add_option("--test-batch-size", flags.test_batch_size, "test batch size (>= 1)");
  app.add_option("--optimizer", flags.optimizer, "sgd or adamw");
  app.add_option("--lr", flags.lr, "learning rate (>= 0; --optimizer adamw without --lr: 0.001)");
  app.add_option("--momentum", flags.momentum, "SGD momentum (>= 0)");
  app.add_option("--weight-decay", flags.weight_decay, "weight decay (>= 0; AdamW's is decoupled)");
  app.add_flag("--nesterov,!--no-nesterov", flags.nesterov, "Nesterov momentum (SGD)");
  app.add_option("--schedule", flags.schedule, "learning-rate schedule: none, or cosine (per batch, over the run)");
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
  app.add_option("--save", flags.save, "write a training checkpoint (model, optimizer, schedule) after every epoch");
  app.add_option("--resume", flags.resume, "continue from a checkpoint written by --save");
  app.add_option("--log", flags.log, "CSV log: epoch, step, loss, accuracy, samples/s (scripts/plot draws it)");
  const char* program = recipe.program.c_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help
    std::fprintf(stderr, "%s: %s (%s --help lists the flags)\n", program, e.what(), program);
    return 2;
  }
  if (flags.optimizer == "adamw" && app.count("--lr") == 0) flags.lr = 1e-3;
  try {
    check_ranges(flags, recipe.program);
    check_data_folder(flags.data, recipe);
    if (!flags.resume.empty()) check_resume_file(flags.resume);
    return run(flags, recipe);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "%s: %s\n", program, error.what());
    return 2;
  } catch (const std::exception& error) {  // ember::Error, and anything a dependency throws
    std::fprintf(stderr, "%s: %s\n", program, error.what());
    return 1;
  }
}

}  // namespace ember::examples
