// The IDX files MNIST is distributed in: gzipped or raw, validated before use.
// defines: ember::data::read_idx_images, read_idx_labels
#pragma once

#include <string>

#include "ember/core/tensor.h"

namespace ember::data {

// Both readers take a gzipped file (recognised by its first bytes, 1f 8b, whatever its name) or a
// raw one, and check it whole before returning, in this order: the magic number, the header, the
// size the dims imply (through contiguous_size, so dims that overflow int64 are refused even when
// the count is 0), then that the data after the header is exactly that long.
//
// Contract, for any bytes whatever: they return the tensor or throw ember::Error, and nothing
// else (ember::OutOfMemory when memory runs out). The message names `path` and what was expected
// against what was found: the file cannot be opened or read, is not valid gzip, has the wrong
// magic, has dims too large to address, or is truncated ("... is truncated: expected 47040000
// bytes of image data after the 16-byte header (dims [60000, 28, 28]), found 1200") or too long.
//
// Cost: the header is read and checked before any of the body is decompressed, and reading stops
// one byte past the size the header implies; memory grows with the data actually read, never past
// that size. A gzip bomb costs no more than the file its header claims to be.

// uint8 [count, rows, cols], on the CPU, from an IDX3 image file (magic 0x00000803).
Tensor read_idx_images(const std::string& path);
// int64 [count], on the CPU, from an IDX1 label file (magic 0x00000801).
Tensor read_idx_labels(const std::string& path);

}  // namespace ember::data
