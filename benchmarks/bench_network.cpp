// End-to-end cases: the tutorial network's training step (batch 64 and 256) and inference at
// batch 1000, in samples/s, on every target (eager execution); the step captured as a CUDA
// Graph (CUDA targets); and the step under parallel::DataParallel (two CPU replicas; every GPU).
#include "benchmarks/bench_common.h"
#include "examples/mnist/net.h"  // defines: ember::examples::Net

namespace ember::bench {
namespace {

namespace F = nn::functional;
using examples::Net;

Tensor labels(int64_t n) {
  return div(arange(static_cast<double>(n), {.dtype = kFloat32}), n / 10.0 + 1).to(kInt64);
}

// ~2.5 MFLOP per sample for a training step (conv1 forward + weight grad, conv2 forward + both
// grads, fc three products), ~0.93 MFLOP per sample for inference.
constexpr double kTrainFlopsPerSample = 2.0 * (2 * 10 * 576 * 25 + 3 * 20 * 64 * 250 + 3 * 320 * 10);
constexpr double kInferenceFlopsPerSample = 2.0 * (10 * 576 * 25 + 20 * 64 * 250 + 320 * 10);

// The tutorial network with its optimizer and one fixed batch on the target's device; step()
// is one eager training step.
struct TrainingStep {
  Net model;
  optim::SGD opt{model.parameters(), {.lr = 0.01, .momentum = 0.5}};
  Tensor x, target;

  TrainingStep(const Target& t, int64_t batch) {
    model.to(t.device());
    x = randn({batch, 1, 28, 28}).to(t.device());
    target = labels(batch).to(t.device());
  }
  void step() {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model.forward(x), target);
    loss.backward();
    opt.step();
  }
};

void train_step_case(benchmark::State& state, const Target& t, int64_t batch) {
  manual_seed(0);
  TrainingStep training(t, batch);
  training.step();  // warm-up: momentum buffers, allocator caches
  Timer timer(state, t);
  for (auto _ : state) {
    timer.start();
    training.step();
    timer.stop();
  }
  report(state, t, timer, kTrainFlopsPerSample * batch, 0, double(batch));
}

void train_step_graph_case(benchmark::State& state, const Target& t, int64_t batch) {
  manual_seed(0);
  TrainingStep training(t, batch);
  for (int i = 0; i < 3; ++i) training.step();  // warm-up before capture: buffers, allocator caches
  cuda::Graph graph(t.device().index());
  graph.capture([&] { training.step(); });
  Timer timer(state, t);
  for (auto _ : state) {
    timer.start();
    graph.replay();
    timer.stop();
  }
  report(state, t, timer, kTrainFlopsPerSample * batch, 0, double(batch));
}

void inference_case(benchmark::State& state, const Target& t) {
  const int64_t batch = 1000;
  manual_seed(0);
  Net model;
  model.to(t.device());
  model.eval();
  Tensor x = randn({batch, 1, 28, 28}).to(t.device());
  NoGradGuard no_grad;
  Tensor warm = model.forward(x);
  Timer timer(state, t);
  for (auto _ : state) {
    timer.start();
    Tensor y = model.forward(x);
    timer.stop();
  }
  report(state, t, timer, kInferenceFlopsPerSample * batch, 0, double(batch));
}

}  // namespace

void register_network_cases() {
  for (const Target& target : targets()) {
    for (int64_t batch : {64, 256}) {
      add("train_step/" + std::to_string(batch), target,
          [batch](benchmark::State& state, const Target& t) { train_step_case(state, t, batch); })
          ->Unit(benchmark::kMillisecond);
    }
    add("inference/1000", target, inference_case)->Unit(benchmark::kMillisecond);
  }
  // The same step captured once as a CUDA Graph and replayed: one launch instead of ~20 kernel
  // launches a step, which is what a launch-bound step at batch 64 pays for (docs/cuda.md).
  for (const Target& target : targets()) {
    if (!target.cuda) continue;
    for (int64_t batch : {64, 256}) {
      add("train_step_graph/" + std::to_string(batch), target,
          [batch](benchmark::State& state, const Target& t) { train_step_graph_case(state, t, batch); })
          ->Unit(benchmark::kMillisecond);
    }
  }
  // ---- DataParallel: the tutorial network's step at batch 256 split over replicas ----------
  // CPU: two replicas on threads ("cpu,cpu", CpuCommunicator), each kernel on 1 thread;
  // CUDA: one replica per GPU (NCCL), on the hand-written and the vendor kernels.
  std::vector<std::pair<std::string, std::vector<Device>>> dp_cases = {{"cpu:x2", {Device::cpu(), Device::cpu()}}};
  if (cuda::device_count() > 0) {
    for (Backend b : {Backend::Handwritten, Backend::Vendor}) {
      dp_cases.push_back({std::string("cuda:x") + std::to_string(cuda::device_count()) +
                              (b == Backend::Vendor ? ":vendor" : ":handwritten"),
                          cuda::devices()});
    }
  }
  for (const auto& [name, devices] : dp_cases) {
    const Target target{.cuda = !devices[0].is_cpu(), .threads = 1,
                        .backend = name.find(":vendor") != std::string::npos ? Backend::Vendor : Backend::Handwritten};
    const std::vector<Device> devs = devices;
    benchmark::RegisterBenchmark(("train_step_dp/256/" + name).c_str(), [target, devs](benchmark::State& state) {
      target.activate();
      guarded(state, [&] {
        const int64_t batch = 256;
        manual_seed(0);
        Net model;
        parallel::DataParallel dp(model, devs);
        auto opt = dp.make_optimizer<optim::SGD>({.lr = 0.01, .momentum = 0.5});
        Tensor x = randn({batch, 1, 28, 28}), target_labels = labels(batch);
        parallel::LossFn loss_fn = [](const Tensor& out, const Tensor& t) { return F::cross_entropy(out, t); };
        auto step = [&] {
          opt.zero_grad();
          dp.train_step(x, target_labels, loss_fn);
          opt.step();
        };
        step();
        Timer timer(state, target);
        for (auto _ : state) {
          timer.start();
          step();
          if (target.cuda) cuda::synchronize();  // every device, not only cuda:0
          timer.stop();
        }
        report(state, target, timer, kTrainFlopsPerSample * batch, 0, double(batch));
      });
    })->UseManualTime()->Unit(benchmark::kMillisecond);
  }
}

}  // namespace ember::bench
