// safetensors files: what ember::save / ember::load and the test fixtures are made of.
// defines: ember::nn::read_safetensors, ember::nn::write_safetensors, ember::save, ember::load
//
// Format: 8-byte little-endian header length, a JSON header {"name": {"dtype": "F32", "shape":
// [..], "data_offsets": [begin, end]}, "__metadata__": {...}}, then the raw little-endian data.
#pragma once

#include <map>
#include <string>

#include "ember/core/tensor.h"

namespace ember::nn {

class Module;

// Reads every tensor of a safetensors file onto the CPU.
// Contract, for any bytes whatever: it returns the tensors or throws ember::Error, and nothing
// else. The message names the file and the byte offset or key at fault: missing or unreadable
// file, truncated file, a header that is not JSON (every nlohmann exception: syntax, numbers out
// of range such as 1e400, invalid UTF-8) or is nested deeper than 16 levels, unknown dtype, a
// shape whose size overflows (contiguous_size, checked before anything is allocated), offsets
// outside the file or not matching the shape. Memory exhaustion is ember::OutOfMemory. It never
// allocates more than the file's size.
std::map<std::string, Tensor> read_safetensors(const std::string& path);
// Writes tensors (any device; copied to the CPU) atomically: a temporary file `.<name>.tmp-XXXXXX`
// in the same folder, flushed, fsync'ed and renamed over `path`, so a crash leaves the previous
// file intact. A save that fails removes its temporary; a save also removes temporaries of the
// same `path` left by saves that were killed (those no live process holds a lock on), and no
// other file. Throws ember::Error naming the file (undefined tensor, names or metadata that are
// not UTF-8, a folder that cannot be written, a write or fsync that fails).
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ember::nn

namespace ember {
// module.state_dict() to a safetensors file, and back (module.load_state_dict, all or nothing).
void save(const nn::Module& module, const std::string& path);
void load(nn::Module& module, const std::string& path);
}  // namespace ember
