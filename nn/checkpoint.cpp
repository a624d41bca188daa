// safetensors reading and writing (see nn/checkpoint.h for the format).
#include "nn/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "core/autograd.h"
#include "nn/module.h"

namespace ember::nn {

namespace {

using nlohmann::json;

const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "F32";
    case DType::Float64: return "F64";
    case DType::Int64: return "I64";
    case DType::UInt8: return "U8";
    case DType::Bool: return "BOOL";
    case DType::Float16: return "F16";
    case DType::BFloat16: return "BF16";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& name) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int64, DType::UInt8, DType::Bool, DType::Float16, DType::BFloat16}) {
    if (name == safetensors_dtype(d)) return d;
  }
  return std::nullopt;
}

// Writes all of `data` or throws naming the file.
void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, p, size);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) throw Error(detail::str("save: writing ", path, " failed: ", std::strerror(errno)));
    p += written;
    size -= static_cast<size_t>(written);
  }
}

}  // namespace

std::map<std::string, Tensor> read_safetensors(const std::string& path) {
  std::error_code error;
  EMBER_CHECK(std::filesystem::is_regular_file(path, error), "load: cannot open ", path, ": ",
              error ? error.message() : std::string(std::filesystem::exists(path) ? "not a regular file" : "no such file"));
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  EMBER_CHECK(file.good(), "load: cannot open ", path, ": ", std::strerror(errno));
  const auto file_size = static_cast<uint64_t>(file.tellg());
  file.seekg(0);
  EMBER_CHECK(file_size >= 8, "load: ", path, " is truncated: ", file_size,
              " bytes, shorter than the 8-byte header length");
  uint64_t header_size = 0;
  unsigned char length_bytes[8];
  file.read(reinterpret_cast<char*>(length_bytes), 8);
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length_bytes[i];  // little-endian
  EMBER_CHECK(header_size <= file_size - 8, "load: ", path, " is truncated or corrupt: the header length at byte 0 "
              "says ", header_size, " bytes but only ", file_size - 8, " follow");
  std::string header_text(header_size, '\0');
  file.read(header_text.data(), static_cast<std::streamsize>(header_size));
  json header;
  try {
    header = json::parse(header_text);
  } catch (const json::parse_error& e) {
    throw Error(detail::str("load: ", path, " has a corrupt JSON header (bytes 8 to ", 8 + header_size,
                            "): ", e.what()));
  }
  EMBER_CHECK(header.is_object(), "load: ", path, ": the header at byte 8 is not a JSON object");
  const uint64_t data_start = 8 + header_size, data_size = file_size - data_start;
  std::map<std::string, Tensor> tensors;
  for (auto& [key, entry] : header.items()) {
    if (key == "__metadata__") continue;
    // key is captured by an init-capture: clang before 16 cannot capture a structured binding.
    auto bad = [&, &key = key](const std::string& what) {
      return Error(detail::str("load: ", path, ": tensor \"", key, "\" ", what));
    };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets") ||
        !entry["dtype"].is_string() || !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2) {
      throw bad("needs \"dtype\", \"shape\" and a two-element \"data_offsets\"");
    }
    auto dtype = parse_dtype(entry["dtype"].get<std::string>());
    if (!dtype || *dtype == DType::Float16 || *dtype == DType::BFloat16) {
      throw bad("has unsupported dtype " + entry["dtype"].get<std::string>() + " (expected F32, F64, I64, U8 or BOOL)");
    }
    // The byte count the shape needs, checked for overflow before anything is allocated.
    Shape shape;
    uint64_t needed = element_size(*dtype);
    for (auto& s : entry["shape"]) {
      if (!s.is_number_integer() || s.get<int64_t>() < 0) throw bad("has an invalid shape " + entry["shape"].dump());
      const auto n = static_cast<uint64_t>(s.get<int64_t>());
      if (n != 0 && needed > UINT64_MAX / n) throw bad("has a shape " + entry["shape"].dump() + " too large to address");
      needed *= n;
      shape.push_back(s.get<int64_t>());
    }
    const json& offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      throw bad("has data_offsets " + offsets.dump() + " that are not two non-negative integers");
    }
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      throw bad(detail::str("has data_offsets [", begin, ", ", end, "] outside the ", data_size, " data bytes (file bytes ",
                            data_start + begin, " to ", data_start + end, " of ", file_size, "; truncated?)"));
    }
    if (end - begin != needed) {
      throw bad(detail::str("has ", end - begin, " data bytes at file byte ", data_start + begin, " but shape ", shape,
                            " of ", dtype_name(*dtype), " needs ", needed));
    }
    Tensor t = empty(shape, {.dtype = *dtype});
    file.seekg(static_cast<std::streamoff>(data_start + begin));
    file.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    EMBER_CHECK(file.good() || t.nbytes() == 0, "load: ", path, ": reading tensor \"", key, "\" at byte ",
                data_start + begin, " failed");
    tensors[key] = t;
  }
  return tensors;
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  NoGradGuard no_grad;
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    EMBER_CHECK(tensor.defined(), "save: tensor \"", name, "\" is undefined");
    Tensor t = tensor.to(Device::cpu()).contiguous();
    header[name] = {{"dtype", safetensors_dtype(t.dtype())}, {"shape", t.sizes()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
    host.push_back(t);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  uint64_t length = text.size();
  unsigned char length_bytes[8];
  for (int i = 0; i < 8; ++i) length_bytes[i] = static_cast<unsigned char>(length >> (8 * i));

  // Write a temporary file beside the target, make it durable, then rename it over the target:
  // readers see either the old file or the complete new one, never a partial write.
  std::filesystem::path target(path);
  std::string temp = (target.parent_path() / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  int fd = ::mkstemp(temp.data());
  EMBER_CHECK(fd >= 0, "save: cannot create a temporary file beside ", path, ": ", std::strerror(errno));
  try {
    // mkstemp makes the file 0600; a checkpoint is as readable as any file saved by the user.
    EMBER_CHECK(::fchmod(fd, 0644) == 0, "save: chmod of ", temp, " failed: ", std::strerror(errno));
    write_all(fd, length_bytes, 8, path);
    write_all(fd, text.data(), text.size(), path);
    for (const Tensor& t : host) write_all(fd, t.data_ptr(), t.nbytes(), path);
    EMBER_CHECK(::fsync(fd) == 0, "save: fsync of ", temp, " failed: ", std::strerror(errno));
    const int closed = ::close(fd);
    fd = -1;
    EMBER_CHECK(closed == 0, "save: closing ", temp, " failed: ", std::strerror(errno));
    EMBER_CHECK(std::rename(temp.c_str(), path.c_str()) == 0, "save: renaming ", temp, " to ", path,
                " failed: ", std::strerror(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    std::remove(temp.c_str());
    throw;
  }
  // Make the rename itself durable. Best effort: the new file is complete whatever happens here.
  std::string folder = target.parent_path().empty() ? "." : target.parent_path().string();
  int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace ember::nn

namespace ember {

void save(const nn::Module& module, const std::string& path) {
  nn::write_safetensors(path, module.state_dict(), {{"format", "pt"}});
}

void load(nn::Module& module, const std::string& path) { module.load_state_dict(nn::read_safetensors(path)); }

}  // namespace ember
