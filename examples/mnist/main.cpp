// ember-mnist: trains the tutorial network on MNIST, from top to bottom in the order a user
// writes it: the model, the device, the data, the loop. `ember-mnist --help` lists the flags.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

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

int load_checkpoint(const std::string& path, nn::Module& model, ember::optim::Optimizer& opt) {
  auto tensors = nn::read_safetensors(path);
  std::map<std::string, ember::Tensor> model_state, optim_state;
  for (auto& [name, t] : tensors) {
    if (name.rfind("model.", 0) == 0) model_state[name.substr(6)] = t;
    else if (name.rfind("optim.", 0) == 0) optim_state[name.substr(6)] = t;
  }
  model.load_state_dict(model_state);
  opt.load_state_dict(optim_state);
  EMBER_CHECK(tensors.count("meta.epoch") == 1, "ember-mnist: ", path,
              " has no meta.epoch entry; is it a checkpoint written by ember-mnist --save?");
  return static_cast<int>(tensors.at("meta.epoch").item<int64_t>());
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
  ember::Device device(flags.device);          // 2. define the device
  model.to(device);                            // 3. move the model
  ember::optim::SGD opt(model.parameters(), {.lr = flags.lr, .momentum = flags.momentum});

  auto train_set = std::make_shared<ember::data::MNIST>(flags.data, ember::data::Split::Train);
  auto test_set = std::make_shared<ember::data::MNIST>(flags.data, ember::data::Split::Test);
  const bool to_gpu = device.is_cuda();  // batches bound for a GPU are staged in pinned memory
  ember::data::DataLoader train_loader(train_set, {.batch_size = flags.batch_size, .shuffle = true,
                                                   .num_workers = flags.workers, .seed = flags.seed,
                                                   .pin_memory = to_gpu});
  ember::data::DataLoader test_loader(test_set, {.batch_size = flags.test_batch_size, .pin_memory = to_gpu});

  int first_epoch = 1;
  if (!flags.resume.empty()) {
    first_epoch = load_checkpoint(flags.resume, model, opt) + 1;
    std::printf("resumed from %s after epoch %d\n", flags.resume.c_str(), first_epoch - 1);
  }
  std::ofstream log;
  if (!flags.log.empty()) {
    log.open(flags.log, first_epoch > 1 ? std::ios::app : std::ios::trunc);
    EMBER_CHECK(log.good(), "ember-mnist: cannot write the log file ", flags.log);
    if (first_epoch == 1) log << "epoch,step,loss,accuracy,samples_per_s\n";
  }
  const bool tty = isatty(STDOUT_FILENO);
  double accuracy = 0, test_loss = 0, total_samples_per_s = 0;
  using Clock = std::chrono::steady_clock;

  for (int epoch = first_epoch; epoch <= flags.epochs; ++epoch) {
    model.train();
    train_loader.set_epoch(epoch);
    int64_t step = 0, seen = 0;
    const int64_t steps = static_cast<int64_t>(train_loader.size());
    auto start = Clock::now();
    for (auto [inputs, target] : train_loader) {
      inputs = inputs.to(device);              // 4. move each batch
      target = target.to(device);
      opt.zero_grad();
      ember::Tensor loss = F::cross_entropy(model.forward(inputs), target);
      loss.backward();
      opt.step();
      ++step;
      seen += inputs.size(0);
      double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      double rate = seen / std::max(elapsed, 1e-9);
      double loss_value = loss.item<float>();
      report_progress(tty, epoch, step, steps, loss_value, rate, (steps - step) * elapsed / step);
      if (log.is_open()) log << epoch << ',' << step << ',' << loss_value << ",," << rate << '\n';
    }
    double epoch_s = std::chrono::duration<double>(Clock::now() - start).count();
    total_samples_per_s = seen / std::max(epoch_s, 1e-9);
    if (tty) std::printf("\n");

    // Test loss and accuracy, without recording a graph.
    ember::NoGradGuard no_grad;
    model.eval();
    int64_t correct = 0, count = 0;
    double loss_sum = 0;
    for (auto [inputs, target] : test_loader) {
      inputs = inputs.to(device);
      target = target.to(device);
      ember::Tensor logits = model.forward(inputs);
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
    if (!flags.save.empty()) save_checkpoint(flags.save, model, opt, epoch);
  }
  std::printf("final: %d epochs, test accuracy %.2f%%, test loss %.4f, %.0f samples/s on %s\n",
              flags.epochs, accuracy, test_loss, total_samples_per_s, device.str().c_str());
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
