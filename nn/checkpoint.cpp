// safetensors reading and writing (see nn/checkpoint.h for the format).
#include "ember/nn/checkpoint.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/common/error.h"
#include "ember/core/autograd.h"
#include "ember/nn/module.h"

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
void write_all(int fd, const void* data, size_t size, const std::string& path, const char* who) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::write(fd, p, size);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) throw Error(detail::str(who, ": writing ", path, " failed: ", std::strerror(errno)));
    p += written;
    size -= static_cast<size_t>(written);
  }
}

// --- Reading ---------------------------------------------------------------------------------

// A safetensors header nests three levels (the header object, a tensor's entry, its shape); a
// deeper one is not safetensors, and rejecting it early keeps every later walk of it shallow.
constexpr int kMaxHeaderDepth = 16;

// The header's JSON. Any nlohmann exception (parse_error, out_of_range for a number like 1e400,
// ...) becomes an ember::Error naming the file and the header's bytes.
json parse_header(const std::string& text, const std::string& path, const char* who) {
  const auto header_end = 8 + text.size();
  auto limit_depth = [&](int depth, json::parse_event_t, json&) {
    EMBER_CHECK(depth <= kMaxHeaderDepth, who, ": ", path, " has a corrupt JSON header (bytes 8 to ", header_end,
                "): nested deeper than ", kMaxHeaderDepth, " levels (a safetensors header has 3)");
    return true;
  };
  try {
    return json::parse(text, limit_depth);
  } catch (const json::exception& e) {
    throw Error(detail::str(who, ": ", path, " has a corrupt JSON header (bytes 8 to ", header_end, "): ", e.what()));
  }
}

// Where one tensor's bytes lie in the file.
struct DataRegion {
  uint64_t start = 0;  // file offset of the first data byte, right after the header
  uint64_t size = 0;   // data bytes in the file
  uint64_t file_size = 0;
};

[[noreturn]] void bad_entry(const char* who, const std::string& path, const std::string& key,
                            const std::string& what) {
  throw Error(detail::str(who, ": ", path, ": tensor \"", key, "\" ", what));
}

// Reads the tensor that header entry `key` describes, after checking the entry: its fields, its
// dtype, its shape (through contiguous_size, before anything is allocated) and that its
// data_offsets lie inside the file and hold exactly the bytes the shape needs.
Tensor read_tensor(std::ifstream& file, const char* who, const std::string& path, const std::string& key,
                   const json& entry, const DataRegion& data) {
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets") ||
      !entry["dtype"].is_string() || !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
      entry["data_offsets"].size() != 2) {
    bad_entry(who, path, key, "needs \"dtype\", \"shape\" and a two-element \"data_offsets\"");
  }
  const auto& dtype_name_in_file = entry["dtype"].get_ref<const std::string&>();
  const auto dtype = parse_dtype(dtype_name_in_file);
  if (!dtype || *dtype == DType::Float16 || *dtype == DType::BFloat16) {
    bad_entry(who, path, key, "has unsupported dtype " + dtype_name_in_file + " (expected F32, F64, I64, U8 or BOOL)");
  }
  Shape shape;
  for (const json& s : entry["shape"]) {
    if (!s.is_number_integer() || s.get<int64_t>() < 0) bad_entry(who, path, key, "has an invalid shape " + entry["shape"].dump());
    shape.push_back(s.get<int64_t>());
  }
  const int64_t needed = contiguous_size(shape, *dtype, detail::str(who, ": ", path, ": tensor \"", key, "\"")).nbytes;
  const json& offsets = entry["data_offsets"];
  if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
    bad_entry(who, path, key, "has data_offsets " + offsets.dump() + " that are not two non-negative integers");
  }
  const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
  if (begin > end || end > data.size) {
    bad_entry(who, path, key, detail::str("has data_offsets [", begin, ", ", end, "] outside the ", data.size,
                                     " data bytes (file bytes ", data.start + begin, " to ", data.start + end, " of ",
                                     data.file_size, "; truncated?)"));
  }
  if (end - begin != static_cast<uint64_t>(needed)) {
    bad_entry(who, path, key, detail::str("has ", end - begin, " data bytes at file byte ", data.start + begin,
                                     " but shape ", shape, " of ", dtype_name(*dtype), " needs ", needed));
  }
  Tensor t = empty(shape, {.dtype = *dtype});
  file.seekg(static_cast<std::streamoff>(data.start + begin));
  file.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
  EMBER_CHECK(file.good() || t.nbytes() == 0, who, ": ", path, ": reading tensor \"", key, "\" at byte ",
              data.start + begin, " failed");
  return t;
}

std::map<std::string, Tensor> read_safetensors_file(const std::string& path, const char* who) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    const bool exists = std::filesystem::exists(path, error);
    throw Error(detail::str(who, ": cannot open ", path, ": ",
                            error ? error.message() : exists ? "not a regular file" : "no such file"));
  }
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  EMBER_CHECK(file.good(), who, ": cannot open ", path, ": ", std::strerror(errno));
  const auto file_size = static_cast<uint64_t>(file.tellg());
  file.seekg(0);
  EMBER_CHECK(file_size >= 8, who, ": ", path, " is truncated: ", file_size,
              " bytes, shorter than the 8-byte header length");
  uint64_t header_size = 0;
  unsigned char length_bytes[8];
  file.read(reinterpret_cast<char*>(length_bytes), 8);
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | length_bytes[i];  // little-endian
  EMBER_CHECK(header_size <= file_size - 8, who, ": ", path, " is truncated or corrupt: the header length at byte 0 "
              "says ", header_size, " bytes but only ", file_size - 8, " follow");
  std::string header_text(header_size, '\0');
  file.read(header_text.data(), static_cast<std::streamsize>(header_size));
  EMBER_CHECK(file.good(), who, ": ", path, ": reading the header at byte 8 failed");
  const json header = parse_header(header_text, path, who);
  EMBER_CHECK(header.is_object(), who, ": ", path, ": the header at byte 8 is not a JSON object");
  const DataRegion data{.start = 8 + header_size, .size = file_size - 8 - header_size, .file_size = file_size};
  std::map<std::string, Tensor> tensors;
  for (const auto& item : header.items()) {
    if (item.key() != "__metadata__") tensors[item.key()] = read_tensor(file, who, path, item.key(), item.value(), data);
  }
  return tensors;
}

// --- Writing ---------------------------------------------------------------------------------

// Note [Checkpoint temporaries]: a save writes `.<name>.tmp-XXXXXX` (mkstemp's six letters and
// digits) beside `<name>` and renames it over `<name>` when complete. It holds an exclusive flock
// on the temporary until then; the kernel drops the lock when the process dies, however it dies.
// So a temporary of the same checkpoint that nobody holds a lock on was left by a killed save, and
// the next save removes it. Files not named exactly so, and temporaries of other checkpoints, are
// never touched.
std::string temp_prefix(const std::filesystem::path& target) { return "." + target.filename().string() + ".tmp-"; }

bool is_temp_name(const std::string& name, const std::string& prefix) {
  if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; });
}

bool same_file(int fd, const std::string& path) {
  struct stat by_fd {}, by_name {};
  return ::fstat(fd, &by_fd) == 0 && ::lstat(path.c_str(), &by_name) == 0 && by_fd.st_dev == by_name.st_dev &&
         by_fd.st_ino == by_name.st_ino;
}

// Removes the temporaries of `target` that no running save holds (see the note). Best effort:
// an entry that cannot be opened, locked or removed is left as it is.
void remove_stale_temporaries(const std::filesystem::path& target) {
  const std::string prefix = temp_prefix(target);
  const std::filesystem::path folder = target.parent_path().empty() ? "." : target.parent_path();
  std::error_code error;
  std::vector<std::string> candidates;
  for (std::filesystem::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (is_temp_name(name, prefix)) candidates.push_back(it->path().string());
  }
  for (const std::string& candidate : candidates) {
    const int fd = ::open(candidate.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    // Locked by us, and still the file of that name (not renamed away and reused meanwhile).
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && same_file(fd, candidate)) ::unlink(candidate.c_str());
    ::close(fd);
  }
}

// Creates and locks a fresh temporary beside `target`; returns its descriptor and sets `temp` to
// its path. A concurrent save's cleanup can remove the file between mkstemp and flock; then it is
// no longer ours by that name, and another is made.
int create_locked_temp(const std::filesystem::path& target, std::string& temp, const char* who) {
  for (int attempt = 0;; ++attempt) {
    temp = (target.parent_path() / (temp_prefix(target) + "XXXXXX")).string();
    const int fd = ::mkostemp(temp.data(), O_CLOEXEC);
    EMBER_CHECK(fd >= 0, who, ": cannot create a temporary file beside ", target.string(), ": ", std::strerror(errno));
    if (::flock(fd, LOCK_EX) == 0 && same_file(fd, temp)) return fd;
    ::close(fd);
    EMBER_CHECK(attempt < 8, who, ": cannot lock a temporary file beside ", target.string());
  }
}

// The header bytes: 8-byte little-endian length, then the JSON padded to keep the data 8-byte
// aligned. Tensor names and metadata must be valid UTF-8 (JSON's strings are).
std::string header_bytes(const json& header, const std::string& path, const char* who) {
  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception& e) {
    throw Error(detail::str(who, ": ", path, ": tensor names and metadata must be valid UTF-8: ", e.what()));
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  return out + text;
}

// Note [Checkpoint error prefixes]: an error names the public function the user called
// (read_safetensors or ember::load, write_safetensors or ember::save), so the reader and the
// writer take that name, `who`, and put it first in every message they throw.
std::map<std::string, Tensor> read_safetensors_as(const std::string& path, const char* who) {
  // The contract in the header: ember::Error and nothing else. The reader throws its own errors;
  // this turns whatever else a dependency might raise into one naming the file.
  try {
    return read_safetensors_file(path, who);
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw OutOfMemory(detail::str(who, ": ", path, ": out of memory while reading it"));
  } catch (const std::exception& e) {
    throw Error(detail::str(who, ": ", path, ": ", e.what()));
  }
}

void write_safetensors_as(const std::string& path, const std::map<std::string, Tensor>& tensors,
                          const std::map<std::string, std::string>& metadata, const char* who) {
  NoGradGuard no_grad;
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> host;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    EMBER_CHECK(tensor.defined(), who, ": tensor \"", name, "\" is undefined");
    Tensor t = tensor.to(Device::cpu()).contiguous();
    header[name] = {{"dtype", safetensors_dtype(t.dtype())}, {"shape", t.sizes()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
    host.push_back(t);
  }
  const std::string head = header_bytes(header, path, who);

  // Write a temporary file beside the target, make it durable, then rename it over the target:
  // readers see either the old file or the complete new one, never a partial write.
  const std::filesystem::path target(path);
  remove_stale_temporaries(target);
  std::string temp;
  const int fd = create_locked_temp(target, temp, who);
  try {
    // mkstemp makes the file 0600; a checkpoint is as readable as any file saved by the user.
    EMBER_CHECK(::fchmod(fd, 0644) == 0, who, ": chmod of ", temp, " failed: ", std::strerror(errno));
    write_all(fd, head.data(), head.size(), path, who);
    for (const Tensor& t : host) write_all(fd, t.data_ptr(), t.nbytes(), path, who);
    EMBER_CHECK(::fsync(fd) == 0, who, ": fsync of ", temp, " failed: ", std::strerror(errno));
    EMBER_CHECK(std::rename(temp.c_str(), path.c_str()) == 0, who, ": renaming ", temp, " to ", path,
                " failed: ", std::strerror(errno));
  } catch (...) {
    std::remove(temp.c_str());
    ::close(fd);
    throw;
  }
  // The data is durable (fsync'ed) and renamed; closing releases the lock (see the note).
  ::close(fd);
  // Make the rename itself durable. Best effort: the new file is complete whatever happens here.
  std::string folder = target.parent_path().empty() ? "." : target.parent_path().string();
  int dir_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace

std::map<std::string, Tensor> read_safetensors(const std::string& path) {
  return read_safetensors_as(path, "read_safetensors");
}

void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  write_safetensors_as(path, tensors, metadata, "write_safetensors");
}

}  // namespace ember::nn

namespace ember {

void save(const nn::Module& module, const std::string& path) {
  nn::write_safetensors_as(path, module.state_dict(), {{"format", "pt"}}, "save");
}

void load(nn::Module& module, const std::string& path) {
  module.load_state_dict(nn::read_safetensors_as(path, "load"));
}

}  // namespace ember
