// Reading and writing the schedulers' state_dict entries: one shared set of checks, so that every
// scheduler's load_state_dict names the scheduler, the key and what was wrong the same way.
// defines: ember::optim::detail::{int_state, check_keys, read_int, read_double, read_doubles}
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ember/core/tensor.h"

namespace ember::optim::detail {

Tensor int_state(int64_t value);
// Throws naming the first key of `state` not in `expected`, or the first of `expected` missing.
void check_keys(const std::string& op, const std::map<std::string, Tensor>& state, const std::set<std::string>& expected);
int64_t read_int(const std::string& op, const std::map<std::string, Tensor>& state, const std::string& key);
double read_double(const std::string& op, const std::map<std::string, Tensor>& state, const std::string& key);
// A 1-D entry of `count` numbers.
std::vector<double> read_doubles(const std::string& op, const std::map<std::string, Tensor>& state,
                                 const std::string& key, size_t count);

}  // namespace ember::optim::detail
