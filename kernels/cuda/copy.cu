// Strided copy with dtype cast, and fill, on one CUDA device.
#include "ember/kernels/cuda/copy.h"

#include "ember/kernels/cuda/strided.cuh"

namespace ember::kernels::cuda {

namespace {

// The output of a copy: src at operand 1's offset, converted (detail::convert).
template <class D, class S>
struct CopyFn {
  const S* src;
  bool to_bool;
  __device__ D operator()(const int64_t (&off)[2]) const { return detail::convert<D, S>(src[off[1]], to_bool); }
};

template <class T>
struct FillFn {
  T value;
  __device__ T operator()(const int64_t (&)[1]) const { return value; }
};

}  // namespace

void copy_cast(void* dst, int dst_dtype, const void* src, int src_dtype, const StridedLoop<2>& loop,
               cudaStream_t stream) {
  if (numel_of(loop.sizes) == 0) return;
  const bool to_bool = dst_dtype == kDTypeBool;
  dispatch_dtype(dst_dtype, "copy_", [&](auto d) {
    using D = decltype(d);
    dispatch_dtype(src_dtype, "copy_", [&](auto s) {
      using S = decltype(s);
      detail::launch_elementwise<2>(static_cast<D*>(dst), CopyFn<D, S>{static_cast<const S*>(src), to_bool},
                                    loop, stream, "copy_");
    });
  });
}

void copy_strided(void* dst, const StridedLayout& dst_layout, int dst_dtype, const void* src,
                  const StridedLayout& src_layout, int src_dtype, int64_t numel, cudaStream_t stream) {
  if (numel == 0) return;
  StridedLoop<2> loop;
  loop.sizes.assign(dst_layout.sizes, dst_layout.sizes + dst_layout.ndim);
  loop.strides[0].assign(dst_layout.strides, dst_layout.strides + dst_layout.ndim);
  loop.strides[1].assign(src_layout.strides, src_layout.strides + src_layout.ndim);
  EMBER_CHECK(src_layout.ndim == dst_layout.ndim, "copy_strided: source has ", src_layout.ndim,
              " dims, destination ", dst_layout.ndim);
  copy_cast(dst, dst_dtype, src, src_dtype, loop, stream);
}

void fill(void* dst, int dtype, int64_t numel, double value, cudaStream_t stream) {
  if (numel == 0) return;
  StridedLoop<1> loop{{numel}, {std::vector<int64_t>{1}}};
  const bool to_bool = dtype == kDTypeBool;
  dispatch_dtype(dtype, "fill_", [&](auto t) {
    using T = decltype(t);
    T v = to_bool ? static_cast<T>(value != 0.0) : static_cast<T>(value);  // on the host, as the CPU fill_
    detail::launch_elementwise<1>(static_cast<T*>(dst), FillFn<T>{v}, loop, stream, "fill_");
  });
}

}  // namespace ember::kernels::cuda
