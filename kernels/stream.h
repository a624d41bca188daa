// The stream a CUDA kernel is queued on, named without the CUDA headers, so that every build
// (CUDA, emulated, or none) declares the same kernel entry points.
// defines: ember::kernels::Stream
#pragma once

// cudaStream_t is `CUstream_st*` in the CUDA runtime and in ember's emulator alike; declaring the
// struct here lets a CUDA-off build name it without the toolkit.
struct CUstream_st;

namespace ember::kernels {

using Stream = CUstream_st*;

}  // namespace ember::kernels
