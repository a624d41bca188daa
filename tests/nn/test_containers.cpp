// nn::Identity, nn::ModuleList and nn::ModuleDict: names, state_dict keys and repr as PyTorch's.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "ember/core/ops.h"
#include "ember/nn/activation.h"
#include "ember/nn/container.h"
#include "ember/nn/linear.h"
#include "ember/nn/sequential.h"

namespace nn = ember::nn;
using ember::Tensor;

namespace {

std::vector<std::string> keys_of(const nn::Module& m) {
  std::vector<std::string> out;
  for (auto& [name, t] : m.named_parameters()) out.push_back(name);
  return out;
}

// A model holding a ModuleList of blocks and a ModuleDict of heads, as torchvision-style code does.
struct Model : nn::Module {
  nn::ModuleList blocks;
  nn::ModuleDict heads;
  Model() {
    for (int i = 0; i < 3; ++i) blocks.push_back(std::make_shared<nn::Linear>(4, 4));
    heads.insert("cls", nn::Linear(4, 3));
    heads.insert("box", nn::Linear(4, 2, {.bias = false}));
    register_modules({{"blocks", blocks}, {"heads", heads}});
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    for (auto& block : blocks) y = (*block)(y);
    return heads["cls"](y);
  }
};

}  // namespace

TEST_CASE("Identity returns its input unchanged") {
  nn::Identity id;
  Tensor x = ember::randn({2, 3});
  CHECK(id(x).is_same(x));
  CHECK(id.repr() == "Identity()");
}

TEST_CASE("ModuleList and ModuleDict parameters are named as PyTorch's state_dict keys") {
  Model model;
  // PyTorch 1.13: list(Model().state_dict()) for the same model in Python (blocks =
  // ModuleList([Linear(4, 4)] * 3 as separate layers), heads = ModuleDict(cls=..., box=...)).
  CHECK(keys_of(model) == std::vector<std::string>{"blocks.0.weight", "blocks.0.bias", "blocks.1.weight", "blocks.1.bias",
                                                   "blocks.2.weight", "blocks.2.bias", "heads.cls.weight",
                                                   "heads.cls.bias", "heads.box.weight"});
  CHECK(model.state_dict().count("blocks.2.bias") == 1);
  CHECK(model(ember::randn({5, 4})).sizes() == ember::Shape{5, 3});
}

TEST_CASE("ModuleList: append, extend, indexing, iteration and typed access") {
  nn::ModuleList list;
  CHECK(list.empty());
  list.push_back(nn::Linear(2, 3));
  list.append(std::make_shared<nn::ReLU>());
  list.append(nn::Identity());
  nn::ModuleList more({std::make_shared<nn::Linear>(3, 1)});
  list.extend(more);
  REQUIRE(list.size() == 4);
  CHECK(list[0].name() == "Linear");
  CHECK(list[-1].name() == "Linear");
  CHECK(&list[-1] == &more[0]);  // extend shares the modules, as Python's list.extend
  CHECK(list.at<nn::Linear>(0).weight.sizes() == ember::Shape{3, 2});
  std::vector<std::string> names;
  for (const auto& m : list) names.push_back(m->name());
  CHECK(names == std::vector<std::string>{"Linear", "ReLU", "Identity", "Linear"});
  std::vector<std::string> children;
  for (auto& [name, child] : list.named_children()) children.push_back(name);
  CHECK(children == std::vector<std::string>{"0", "1", "2", "3"});
  list.extend(list);  // extending a list with itself appends each module once more
  CHECK(list.size() == 8);
}

TEST_CASE("ModuleList errors name the index, the type and what to do instead") {
  nn::ModuleList list;
  list.push_back(nn::ReLU());
  CHECK_THROWS_WITH(list[1], Catch::Contains("ModuleList: index 1 is out of range for 1 modules"));
  CHECK_THROWS_WITH(list[-2], Catch::Contains("ModuleList: index -2 is out of range for 1 modules"));
  CHECK_THROWS_WITH(list.at<nn::Linear>(0), Catch::Contains("ModuleList::at: module 0 is a ReLU, not the requested type"));
  CHECK_THROWS_WITH(list.push_back(std::shared_ptr<nn::Module>()), Catch::Contains("ModuleList: cannot append a null module"));
  CHECK_THROWS_AS(list(ember::zeros({1})), ember::NotImplemented);
  CHECK_THROWS_WITH(list(ember::zeros({1})), Catch::Contains("ModuleList has no forward"));
}

TEST_CASE("ModuleDict: insertion order, lookup, contains, items and typed access") {
  nn::ModuleDict dict({{"b", std::make_shared<nn::ReLU>()}, {"a", std::make_shared<nn::Linear>(2, 2)}});
  dict.insert("c", nn::Identity());
  CHECK(dict.size() == 3);
  CHECK(dict.keys() == std::vector<std::string>{"b", "a", "c"});  // insertion order, not sorted
  CHECK(dict.contains("a"));
  CHECK_FALSE(dict.contains("z"));
  CHECK(dict["b"].name() == "ReLU");
  CHECK(dict.at<nn::Linear>("a").weight.sizes() == ember::Shape{2, 2});
  std::vector<std::string> keys;
  for (const auto& [key, m] : dict.items()) keys.push_back(key + ":" + m->name());
  CHECK(keys == std::vector<std::string>{"b:ReLU", "a:Linear", "c:Identity"});
  CHECK(keys_of(dict) == std::vector<std::string>{"a.weight", "a.bias"});
}

TEST_CASE("ModuleDict errors name the key") {
  nn::ModuleDict dict;
  dict.insert("relu", nn::ReLU());
  CHECK_THROWS_WITH(dict["gelu"], Catch::Contains("ModuleDict: no module under key \"gelu\" (keys: \"relu\")"));
  CHECK_THROWS_WITH(dict.insert("a.b", nn::ReLU()), Catch::Contains("invalid name \"a.b\""));
  CHECK_THROWS_WITH(dict.at<nn::Linear>("relu"), Catch::Contains("ModuleDict::at: module \"relu\" is a ReLU"));
  CHECK_THROWS_WITH(dict(ember::zeros({1})), Catch::Contains("ModuleDict has no forward"));
}

TEST_CASE("containers print as PyTorch prints them") {
  nn::ModuleList list;
  CHECK(list.repr() == "ModuleList()");
  list.push_back(nn::Linear(8, 8));
  list.push_back(nn::Identity());
  nn::ModuleDict dict;
  dict.insert("cls", nn::Linear(8, 3));
  dict.insert("reg", nn::Linear(8, 1));
  // print(nn.ModuleList([nn.Linear(8, 8), nn.Identity()])) and the ModuleDict, PyTorch 1.13.
  CHECK(list.repr() ==
        "ModuleList(\n"
        "  (0): Linear(in_features=8, out_features=8, bias=True)\n"
        "  (1): Identity()\n"
        ")");
  CHECK(dict.repr() ==
        "ModuleDict(\n"
        "  (cls): Linear(in_features=8, out_features=3, bias=True)\n"
        "  (reg): Linear(in_features=8, out_features=1, bias=True)\n"
        ")");
}

TEST_CASE("ModuleDict::insert on a present key replaces the module in place, as libtorch's") {
  nn::ModuleDict dict;
  dict.insert("first", nn::Linear(2, 3));
  dict.insert("act", nn::ReLU());
  dict.insert("first", nn::Linear(4, 5));
  CHECK(dict.size() == 2);
  CHECK(dict.keys() == std::vector<std::string>{"first", "act"});
  CHECK(dict.at<nn::Linear>("first").weight.sizes() == ember::Shape{5, 4});
  auto params = dict.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].first == "first.weight");
  CHECK(params[0].second.sizes() == ember::Shape{5, 4});
  CHECK(dict.named_children()[0].second == &dict["first"]);
  CHECK_THROWS_WITH(dict.replace_module("missing", std::make_shared<nn::ReLU>()),
                    Catch::Contains("replace_module: no submodule \"missing\" to replace"));
}
