// ember's CUDA emulator: what nvcc gives a .cu file before its first line (qualifiers, built-in
// variables, vector types, intrinsics) plus the runtime API. On this include path it stands in
// for the toolkit's cuda_runtime.h.
#pragma once

#include "cuda_runtime_api.h"
#include "ember/kernels/cuda/emulator/kernel_model.h"
