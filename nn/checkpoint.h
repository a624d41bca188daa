// safetensors files: what ember::save / ember::load and the test fixtures are made of.
// defines: ember::nn::read_safetensors, ember::nn::write_safetensors, ember::save, ember::load
//
// Format: 8-byte little-endian header length, a JSON header {"name": {"dtype": "F32", "shape":
// [..], "data_offsets": [begin, end]}, "__metadata__": {...}}, then the raw little-endian data.
#pragma once

#include <map>
#include <string>

#include "core/tensor.h"

namespace ember::nn {

class Module;

// Reads every tensor of a safetensors file onto the CPU. Throws ember::Error naming the file and
// the byte offset or key at fault (truncated file, corrupt header, unknown dtype, bad offsets).
std::map<std::string, Tensor> read_safetensors(const std::string& path);
// Writes tensors (any device; copied to the CPU) atomically: a temporary file in the same folder,
// flushed, fsync'ed and renamed over `path`, so a crash leaves the previous file intact.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ember::nn

namespace ember {
// module.state_dict() to a safetensors file, and back (module.load_state_dict, all or nothing).
void save(const nn::Module& module, const std::string& path);
void load(nn::Module& module, const std::string& path);
}  // namespace ember
