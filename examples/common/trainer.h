// What the sample programs share: the flags, the checks of a command line, the devices (one, a
// DataParallel over several, one replica per process under mpirun), the training loop with its
// progress bar and CSV log, evaluation, and --save / --resume through training checkpoints.
// A program gives its Recipe (its model, its data, its defaults) and calls run_program.
// defines: ember::examples::Flags, Recipe, run_program
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ember/ember.h"

namespace ember::examples {

struct Flags {
  std::string data = "data/mnist";
  int epochs = 10;
  int stop_after = 0;  // > 0: stop once this epoch is done (a run in parts, as a killed one resumes)
  int64_t batch_size = 64;
  int64_t test_batch_size = 1000;
  std::string optimizer = "sgd";  // sgd | adamw
  double lr = 0.01;               // --optimizer adamw without --lr: 1e-3
  double momentum = 0.9;
  double weight_decay = 0.0;
  bool nesterov = false;
  std::string schedule = "none";  // none | cosine (annealed per batch over the whole run)
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

struct Recipe {
  std::string program;      // "ember-mnist": the prefix of every message
  std::string description;  // --help's first line
  std::string data_help;    // what --data holds and how to get it, for the messages about it
  Flags defaults;
  // A new model; also makes DataParallel's other replicas.
  std::function<std::shared_ptr<nn::Module>()> make_model;
  data::Normalize normalize;
};

// Parses the command line and trains. Exit codes: 0 done (and --help), 2 a command line that
// cannot run, 1 an error while running; every message starts with "<program>: ".
int run_program(int argc, char** argv, const Recipe& recipe);

}  // namespace ember::examples
