// The libtorch peer of ember-bench: the tutorial network's and ResNet-8's training step and inference, SGEMM
// and the op cases, timed the way torch_bench.py times them, printed as JSON lines
//   {"peer": "libtorch", "torch": ..., "name": ..., "threads": ..., "device": "cpu", "value": ..., "unit": ...}
// Case names match ember-bench's "<op>/<case>" so scripts/bench.py can pair them.
//   torch-bench --threads 2 [--min-time 0.5] [--no-ops]
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct NetImpl : torch::nn::Module {
  torch::nn::Conv2d conv1{torch::nn::Conv2dOptions(1, 10, 5)}, conv2{torch::nn::Conv2dOptions(10, 20, 5)};
  torch::nn::Linear fc{320, 10};
  NetImpl() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("fc", fc);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2->forward(x), 2));
    return fc->forward(x.flatten(1));
  }
};
TORCH_MODULE(Net);

// ember-fashion's ResNet-8 (examples/models/blocks.h), as a libtorch user writes it.
struct BasicBlockImpl : torch::nn::Module {
  torch::nn::Conv2d conv1, conv2;
  torch::nn::BatchNorm2d bn1, bn2;
  torch::nn::Sequential shortcut;
  BasicBlockImpl(int64_t cin, int64_t cout, int64_t stride)
      : conv1(torch::nn::Conv2dOptions(cin, cout, 3).stride(stride).padding(1).bias(false)),
        conv2(torch::nn::Conv2dOptions(cout, cout, 3).padding(1).bias(false)),
        bn1(cout),
        bn2(cout) {
    if (stride != 1 || cin != cout) {
      shortcut->push_back(torch::nn::Conv2d(torch::nn::Conv2dOptions(cin, cout, 1).stride(stride).bias(false)));
      shortcut->push_back(torch::nn::BatchNorm2d(cout));
    }
    register_module("conv1", conv1);
    register_module("bn1", bn1);
    register_module("conv2", conv2);
    register_module("bn2", bn2);
    register_module("shortcut", shortcut);
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor out = torch::relu(bn1->forward(conv1->forward(x)));
    out = bn2->forward(conv2->forward(out));
    return torch::relu(out + (shortcut->is_empty() ? x : shortcut->forward(x)));
  }
};
TORCH_MODULE(BasicBlock);

torch::nn::Sequential resnet8() {
  return torch::nn::Sequential(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 16, 3).padding(1).bias(false)), torch::nn::BatchNorm2d(16),
      torch::nn::ReLU(), BasicBlock(16, 16, 1), BasicBlock(16, 32, 2), BasicBlock(32, 64, 2),
      torch::nn::AdaptiveAvgPool2d(1), torch::nn::Flatten(), torch::nn::Linear(64, 10));
}

// Seconds per call: one warm-up call, then as many as fit in min_time.
double timed(const std::function<void()>& fn, double min_time) {
  fn();
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  int64_t n = 0;
  double elapsed = 0;
  do {
    fn();
    ++n;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < min_time);
  return elapsed / double(n);
}

// Seconds per y.backward(dy) alone, y = forward() run outside the timed part, as ember-bench times
// a backward case (torch_bench.py's backward_only). forward() also drops the gradients the last
// pass left, so every pass does the same work. At least two passes, then until min_time is spent.
double time_backward(const std::function<torch::Tensor()>& forward, const torch::Tensor& dy, double min_time) {
  double total = 0;
  int64_t n = 0;
  while (total < min_time || n < 2) {
    torch::Tensor y = forward();
    const auto t0 = std::chrono::steady_clock::now();
    y.backward(dy);
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++n;
  }
  return total / double(n);
}

void print(const std::string& name, int threads, double value, const char* unit) {
  std::printf("{\"peer\": \"libtorch\", \"torch\": \"%s\", \"name\": \"%s\", \"threads\": %d, \"device\": \"cpu\", "
              "\"value\": %.6g, \"unit\": \"%s\"}\n",
              TORCH_VERSION, name.c_str(), threads, value, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  double min_time = 0.5;
  bool ops = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--no-ops")) ops = false;
    else {
      std::fprintf(stderr, "usage: torch-bench [--threads N] [--min-time S] [--no-ops]\n");
      return 2;
    }
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  for (int64_t batch : {64, 256}) {
    Net model;
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.5));
    torch::Tensor x = torch::randn({batch, 1, 28, 28}), target = torch::randint(0, 10, {batch});
    const double s = timed([&] {
      opt.zero_grad();
      torch::nn::functional::cross_entropy(model->forward(x), target).backward();
      opt.step();
    }, min_time);
    print("train_step/" + std::to_string(batch), threads, double(batch) / s, "samples/s");
  }
  {
    Net model;
    model->eval();
    torch::NoGradGuard no_grad;
    torch::Tensor x = torch::randn({1000, 1, 28, 28});
    print("inference/1000", threads, 1000.0 / timed([&] { model->forward(x); }, min_time), "samples/s");
  }
  {
    torch::nn::Sequential model = resnet8();
    torch::optim::SGD opt(model->parameters(),
                          torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(5e-4).nesterov(true));
    torch::Tensor x = torch::randn({128, 1, 28, 28}), target = torch::randint(0, 10, {128});
    const double s = timed([&] {
      opt.zero_grad();
      torch::nn::functional::cross_entropy(model->forward(x), target).backward();
      opt.step();
    }, min_time);
    print("resnet8_train_step/128", threads, 128.0 / s, "samples/s");
    model->eval();
    torch::NoGradGuard no_grad;
    torch::Tensor xi = torch::randn({1000, 1, 28, 28});
    print("resnet8_inference/1000", threads, 1000.0 / timed([&] { model->forward(xi); }, min_time), "samples/s");
  }
  for (int64_t n : {1024}) {
    torch::Tensor a = torch::randn({n, n}), b = torch::randn({n, n});
    const double s = timed([&] { torch::mm(a, b); }, min_time);
    print("sgemm/" + std::to_string(n), threads, 2.0 * n * n * n / s * 1e-9, "GFLOP/s");
  }
  if (!ops) return 0;
  namespace F = torch::nn::functional;
  struct Conv { const char* name; int64_t n, c, h, k, r; };
  for (const Conv& c : {Conv{"conv1", 64, 1, 28, 10, 5}, Conv{"conv2", 64, 10, 12, 20, 5}}) {
    torch::Tensor x = torch::randn({c.n, c.c, c.h, c.h}), w = torch::randn({c.k, c.c, c.r, c.r}), b = torch::randn({c.k});
    torch::Tensor dy = torch::randn_like(torch::conv2d(x, w, b));
    const std::string base = std::string("conv2d/") + c.name;
    print(base + "/forward", threads, 1e6 * timed([&] { torch::conv2d(x, w, b); }, min_time / 4), "us");
    torch::Tensor xg = x.clone().requires_grad_();
    print(base + "/input_grad", threads, 1e6 * time_backward([&] {
      xg.mutable_grad() = torch::Tensor();
      return torch::conv2d(xg, w, b);
    }, dy, min_time / 4), "us");
    torch::Tensor wg = w.clone().requires_grad_(), bg = b.clone().requires_grad_();
    print(base + "/weight_grad", threads, 1e6 * time_backward([&] {
      wg.mutable_grad() = torch::Tensor();
      bg.mutable_grad() = torch::Tensor();
      return torch::conv2d(x, wg, bg);
    }, dy, min_time / 4), "us");
  }
  // conv2d with groups, strides and 1x1 kernels (benchmarks/bench_ops_conv_groups.cpp): depthwise
  // 3x3 MobileNet blocks, a grouped 3x3, and ResNet-8's convolutions at batch 128.
  struct GroupedConv { const char* name; int64_t n, c, h, k, r, stride, padding, groups; };
  for (const GroupedConv& c : {GroupedConv{"depthwise", 32, 144, 28, 144, 3, 1, 1, 144},
                               GroupedConv{"depthwise_s2", 32, 144, 56, 144, 3, 2, 1, 144},
                               GroupedConv{"grouped", 32, 64, 28, 64, 3, 1, 1, 4},
                               GroupedConv{"resnet8_stem", 128, 1, 28, 16, 3, 1, 1, 1},
                               GroupedConv{"resnet8_c16", 128, 16, 28, 16, 3, 1, 1, 1},
                               GroupedConv{"resnet8_c32_s2", 128, 16, 28, 32, 3, 2, 1, 1},
                               GroupedConv{"resnet8_c32", 128, 32, 14, 32, 3, 1, 1, 1},
                               GroupedConv{"resnet8_c32_1x1_s2", 128, 16, 28, 32, 1, 2, 0, 1},
                               GroupedConv{"resnet8_c64_s2", 128, 32, 14, 64, 3, 2, 1, 1},
                               GroupedConv{"resnet8_c64", 128, 64, 7, 64, 3, 1, 1, 1},
                               GroupedConv{"resnet8_c64_1x1_s2", 128, 32, 14, 64, 1, 2, 0, 1}}) {
    torch::Tensor x = torch::randn({c.n, c.c, c.h, c.h}), w = torch::randn({c.k, c.c / c.groups, c.r, c.r});
    torch::Tensor b = torch::randn({c.k});
    auto conv = [&](const torch::Tensor& xi, const torch::Tensor& wi, const torch::Tensor& bi) {
      return torch::conv2d(xi, wi, bi, {c.stride, c.stride}, {c.padding, c.padding}, {1, 1}, c.groups);
    };
    torch::Tensor dy = torch::randn_like(conv(x, w, b));
    const std::string base = std::string("conv2d/") + c.name;
    print(base + "/forward", threads, 1e6 * timed([&] { conv(x, w, b); }, min_time / 4), "us");
    torch::Tensor xg = x.clone().requires_grad_();
    print(base + "/input_grad", threads, 1e6 * time_backward([&] {
      xg.mutable_grad() = torch::Tensor();
      return conv(xg, w, b);
    }, dy, min_time / 4), "us");
    torch::Tensor wg = w.clone().requires_grad_(), bg = b.clone().requires_grad_();
    print(base + "/weight_grad", threads, 1e6 * time_backward([&] {
      wg.mutable_grad() = torch::Tensor();
      bg.mutable_grad() = torch::Tensor();
      return conv(x, wg, bg);
    }, dy, min_time / 4), "us");
  }
  for (auto [name, shape] : {std::pair<const char*, std::vector<int64_t>>{"pool1", {64, 10, 24, 24}},
                             std::pair<const char*, std::vector<int64_t>>{"pool2", {64, 20, 8, 8}}}) {
    torch::Tensor x = torch::randn(shape);
    print(std::string("max_pool2d/") + name + "/forward", threads, 1e6 * timed([&] { torch::max_pool2d(x, 2); }, min_time / 4), "us");
  }
  torch::Tensor xr = torch::randn({64, 10, 12, 12});
  print("relu/act1/forward", threads, 1e6 * timed([&] { torch::relu(xr); }, min_time / 4), "us");
  torch::Tensor xl = torch::randn({64, 320}, torch::requires_grad()), wl = torch::randn({10, 320}, torch::requires_grad());
  torch::Tensor bl = torch::randn({10}, torch::requires_grad()), dyl = torch::randn({64, 10});
  print("linear/fc/forward", threads, 1e6 * timed([&] { F::linear(xl.detach(), wl.detach(), bl.detach()); }, min_time / 4), "us");
  print("linear/fc/train", threads, 1e6 * timed([&] {
    F::linear(xl, wl, bl).backward(dyl);
    xl.mutable_grad() = torch::Tensor();
    wl.mutable_grad() = torch::Tensor();
    bl.mutable_grad() = torch::Tensor();
  }, min_time / 4), "us");
  torch::Tensor logits = torch::randn({64, 10}, torch::requires_grad()), labels = torch::arange(64) / 7;
  labels = labels.to(torch::kLong);
  print("cross_entropy/64x10/train", threads, 1e6 * timed([&] {
    F::cross_entropy(logits, labels).backward();
    logits.mutable_grad() = torch::Tensor();
  }, min_time / 4), "us");
  {
    torch::Tensor a = torch::randn({32, 64, 28, 28}), b = torch::randn({32, 64, 28, 28});
    print("cat/resnet/forward", threads, 1e6 * timed([&] { torch::cat({a, b}, 1); }, min_time / 4), "us");
    torch::Tensor ag = a.clone().requires_grad_(), bg = b.clone().requires_grad_();
    torch::Tensor dy = torch::randn({32, 128, 28, 28});
    print("cat/resnet/backward", threads, 1e6 * time_backward([&] {
      ag.mutable_grad() = torch::Tensor();
      bg.mutable_grad() = torch::Tensor();
      return torch::cat({ag, bg}, 1);
    }, dy, min_time / 4), "us");
  }
  {  // The cases of benchmarks/bench_ops_tensor.cpp: clamp, var, masked_fill, dropout2d.
    torch::Tensor x = torch::randn({32, 144, 28, 28}) * 4, dy = torch::randn({32, 144, 28, 28});
    print("clamp/relu6_mobilenet/forward", threads, 1e6 * timed([&] { torch::clamp(x, 0.0, 6.0); }, min_time / 4), "us");
    torch::Tensor xg = x.clone().requires_grad_();
    print("clamp/relu6_mobilenet/backward", threads, 1e6 * time_backward([&] {
      xg.mutable_grad() = torch::Tensor();
      return torch::clamp(xg, 0.0, 6.0);
    }, dy, min_time / 4), "us");
    torch::Tensor xv = torch::randn({32, 64, 28, 28});
    print("var/resnet_nhw/forward", threads, 1e6 * timed([&] { torch::var(xv, {0, 2, 3}); }, min_time / 4), "us");
    torch::Tensor xm = torch::randn({32, 8, 128, 128});
    torch::Tensor causal = torch::ones({128, 128}, torch::kBool).triu(1);
    print("masked_fill/causal_attention/forward", threads,
          1e6 * timed([&] { xm.masked_fill(causal, -1e4); }, min_time / 4), "us");
    print("dropout2d/resnet/forward", threads,
          1e6 * timed([&] { F::dropout2d(xv, F::Dropout2dFuncOptions().p(0.2).training(true)); }, min_time / 4), "us");
  }
  // LayerNorm, as benchmarks/bench_ops_layer_norm.cpp: the forward without a graph, backward alone.
  for (auto [name, shape] : {std::pair<const char*, std::vector<int64_t>>{"tokens_d512", {32, 128, 512}},
                             std::pair<const char*, std::vector<int64_t>>{"convnext_d96", {32, 3136, 96}}}) {
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({shape.back()}));
    torch::Tensor x = torch::randn(shape), dy = torch::randn(shape);
    const std::string base = std::string("layer_norm/") + name;
    {
      torch::NoGradGuard no_grad;
      print(base + "/forward", threads, 1e6 * timed([&] { ln->forward(x); }, min_time / 4), "us");
    }
    torch::Tensor xg = x.clone().requires_grad_();
    print(base + "/backward", threads, 1e6 * time_backward([&] {
      xg.mutable_grad() = torch::Tensor();
      ln->zero_grad();
      return ln->forward(xg);
    }, dy, min_time / 4), "us");
  }
  {  // The cases of benchmarks/bench_ops_index.cpp: embedding, index_select, gather.
    torch::Tensor table = torch::randn({10000, 256}), ids = torch::randint(0, 10000, {32, 128});
    print("embedding/tokens/forward", threads, 1e6 * timed([&] { F::embedding(ids, table); }, min_time / 4), "us");
    torch::Tensor tableg = table.clone().requires_grad_(), dy = torch::randn({32, 128, 256});
    print("embedding/tokens/backward", threads, 1e6 * time_backward([&] {
      tableg.mutable_grad() = torch::Tensor();
      return F::embedding(ids, tableg);
    }, dy, min_time / 4), "us");
    torch::Tensor x = torch::randn({32, 64, 28, 28}), even = torch::arange(0, 64, 2);
    print("index_select/resnet_channels/forward", threads,
          1e6 * timed([&] { torch::index_select(x, 1, even); }, min_time / 4), "us");
    torch::Tensor logits = torch::randn({1024, 1000}), target_ids = torch::randint(0, 1000, {1024, 1});
    print("gather/target_logits/forward", threads,
          1e6 * timed([&] { torch::gather(logits, 1, target_ids); }, min_time / 4), "us");
  }
  // ConvTranspose2d, as benchmarks/bench_ops_conv_transpose.cpp: forward without a graph, backward alone.
  for (auto [name, shape, out_channels, kernel, padding] :
       {std::tuple<const char*, std::vector<int64_t>, int64_t, int64_t, int64_t>{"unet_up", {32, 64, 14, 14}, 32, 2, 0},
        std::tuple<const char*, std::vector<int64_t>, int64_t, int64_t, int64_t>{"dcgan", {64, 128, 8, 8}, 64, 4, 1}}) {
    torch::nn::ConvTranspose2d up(
        torch::nn::ConvTranspose2dOptions(shape[1], out_channels, kernel).stride(2).padding(padding));
    torch::Tensor x = torch::randn(shape);
    const std::string base = std::string("conv_transpose2d/") + name;
    torch::Tensor dy;
    {
      torch::NoGradGuard no_grad;
      print(base + "/forward", threads, 1e6 * timed([&] { up->forward(x); }, min_time / 4), "us");
      dy = torch::randn_like(up->forward(x));
    }
    torch::Tensor xg = x.clone().requires_grad_();
    print(base + "/backward", threads, 1e6 * time_backward([&] {
      xg.mutable_grad() = torch::Tensor();
      up->zero_grad();
      return up->forward(xg);
    }, dy, min_time / 4), "us");
  }
  // The activation cases of benchmarks/bench_ops_activation.cpp: forward, and backward alone.
  const std::pair<const char*, std::function<torch::Tensor(const torch::Tensor&)>> activations[] = {
      {"sigmoid", [](const torch::Tensor& t) { return torch::sigmoid(t); }},
      {"tanh", [](const torch::Tensor& t) { return torch::tanh(t); }},
      {"gelu", [](const torch::Tensor& t) { return F::gelu(t); }},
      {"silu", [](const torch::Tensor& t) { return F::silu(t); }},
      {"hardswish", [](const torch::Tensor& t) { return torch::hardswish(t); }}};
  for (auto [shape_name, shape] : {std::pair<const char*, std::vector<int64_t>>{"act", {128, 16, 28, 28}},
                                   std::pair<const char*, std::vector<int64_t>>{"act_mobilenet", {32, 144, 28, 28}}}) {
    torch::Tensor x = torch::randn(shape), dy = torch::randn(shape);
    torch::Tensor xg = x.clone().requires_grad_();
    for (const auto& activation : activations) {
      const auto& op = activation.second;  // a plain reference, not a structured binding: lambdas capture it
      const std::string base = std::string(activation.first) + "/" + shape_name;
      print(base + "/forward", threads, 1e6 * timed([&] { op(x); }, min_time / 4), "us");
      print(base + "/backward", threads, 1e6 * time_backward([&] {
        xg.mutable_grad() = torch::Tensor();
        return op(xg);
      }, dy, min_time / 4), "us");
    }
  }
  for (auto [name, shape] : {std::pair<const char*, std::vector<int64_t>>{"128x1000", {128, 1000}},
                             std::pair<const char*, std::vector<int64_t>>{"32x64x28x28", {32, 64, 28, 28}}}) {
    torch::Tensor xs = torch::randn(shape), dys = torch::randn(shape);
    print(std::string("softmax/") + name + "/forward", threads, 1e6 * timed([&] { torch::softmax(xs, 1); }, min_time / 4), "us");
    torch::Tensor xsg = xs.clone().requires_grad_();
    print(std::string("softmax/") + name + "/backward", threads, 1e6 * time_backward([&] {
      xsg.mutable_grad() = torch::Tensor();
      return torch::softmax(xsg, 1);
    }, dys, min_time / 4), "us");
  }
  torch::Tensor logits_s = torch::randn({128, 10}, torch::requires_grad());
  torch::Tensor labels_s = (torch::arange(128) / 13).to(torch::kLong), weight_s = torch::arange(10) / 10.0 + 0.5;
  weight_s = weight_s.to(torch::kFloat);
  print("cross_entropy/128x10_smooth/train", threads, 1e6 * timed([&] {
    F::cross_entropy(logits_s, labels_s, F::CrossEntropyFuncOptions().weight(weight_s).label_smoothing(0.1)).backward();
    logits_s.mutable_grad() = torch::Tensor();
  }, min_time / 4), "us");
  // BatchNorm2d, as ember-bench's batch_norm2d cases: forwards without a graph, backward alone.
  for (auto [name, shape] : {std::pair<const char*, std::vector<int64_t>>{"resnet8_c16", {128, 16, 28, 28}},
                             std::pair<const char*, std::vector<int64_t>>{"resnet8_c64", {128, 64, 7, 7}},
                             std::pair<const char*, std::vector<int64_t>>{"resnet_56", {32, 64, 56, 56}}}) {
    torch::nn::BatchNorm2d bn(shape[1]);
    torch::Tensor x = torch::randn(shape), dy = torch::randn(shape);
    const std::string base = std::string("batch_norm2d/") + name;
    {
      torch::NoGradGuard no_grad;
      print(base + "/train_forward", threads, 1e6 * timed([&] { bn->forward(x); }, min_time / 4), "us");
    }
    torch::Tensor xg = x.clone().requires_grad_();
    print(base + "/backward", threads, 1e6 * time_backward([&] {
      xg.mutable_grad() = torch::Tensor();
      bn->zero_grad();
      return bn->forward(xg);
    }, dy, min_time / 4), "us");
    bn->eval();
    torch::NoGradGuard no_grad;
    print(base + "/eval_forward", threads, 1e6 * timed([&] { bn->forward(x); }, min_time / 4), "us");
  }
  // The pooling cases of benchmarks/bench_ops_pool.cpp: forward, and backward alone.
  auto pool_case = [&](const std::string& name, std::vector<int64_t> shape,
                       const std::function<torch::Tensor(const torch::Tensor&)>& op) {
    torch::Tensor x = torch::randn(shape);
    print(name + "/forward", threads, 1e6 * timed([&] { op(x); }, min_time / 4), "us");
    torch::Tensor xg = x.clone().requires_grad_(), dy = torch::randn_like(op(x));
    print(name + "/backward", threads, 1e6 * time_backward([&] {
      xg.mutable_grad() = torch::Tensor();
      return op(xg);
    }, dy, min_time / 4), "us");
  };
  pool_case("avg_pool2d/3x3s2", {32, 64, 56, 56}, [](const torch::Tensor& x) { return torch::avg_pool2d(x, 3, 2, 1); });
  pool_case("adaptive_avg_pool2d/global", {128, 64, 7, 7},
            [](const torch::Tensor& x) { return torch::adaptive_avg_pool2d(x, {1, 1}); });
  pool_case("adaptive_avg_pool2d/global_large", {32, 512, 7, 7},
            [](const torch::Tensor& x) { return torch::adaptive_avg_pool2d(x, {1, 1}); });
  return 0;
}
