// The direct (no im2col) float32 convolution passes for stride 1 and no dilation: the tutorial's
// conv1 and conv2 (no padding), and padded or grouped ones such as ResNet's and ResNeXt's 3x3
// convs on a zero-bordered copy of their input (conv2d_direct_padded.cpp). Internal to
// kernels/cpu: conv2d.cpp dispatches here. Both kernels work on the input-width grid (Note [the
// input-width grid] in conv2d_direct.cpp): grid position p = oh * in_w + ow, so tap (r, q) reads
// x[p + r * in_w + q].
// defines: ember::kernels::cpu::DirectIsa, direct_isa, direct_grid_len, direct_grid_ld,
//          direct_lanes16, direct_blocks, direct_block_start, image_shard_count, image_shard_begin,
//          direct_forward_applies, direct_forward_workspace, direct_forward,
//          direct_weight_grad_applies, direct_weight_grad_workspace, direct_weight_grad,
//          channel_weight_grad_applies, channel_weight_grad_workspace, channel_weight_grad,
//          channel_forward_applies, channel_forward_workspace, channel_forward,
//          strided_input_grad_applies, strided_input_grad_workspace, strided_input_grad,
//          prefetch_share_l2, ChannelScratch, run_channel_tasks,
//          transpose_weights_by_tap, pad_planes, transpose16_block,
//          direct_padded_weight_grad_applies,
//          group_slice, direct_padded_shape, direct_padded_applies, direct_padded_forward(_workspace),
//          direct_padded_weight_grad(_workspace), direct_input_grad_applies,
//          direct_input_grad(_workspace)
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ember/kernels/cpu/conv2d.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {

// The vector instructions the direct kernels use on this CPU: AVX-512F, else AVX2 + FMA, else none.
// EMBER_GEMM_ISA=avx2 / =scalar narrow the choice, as they do for gemm.
enum class DirectIsa { none, avx2, avx512 };
DirectIsa direct_isa();

// Grid positions computed per image, (out_h - 1) * in_w + out_w, and that count rounded up to
// whole vectors of 16: the row length of the kernels' grid buffers.
inline int64_t direct_grid_len(const Conv2dShape& s) { return (s.out_h() - 1) * s.in_w + s.out_w(); }
inline int64_t direct_grid_ld(const Conv2dShape& s) { return (direct_grid_len(s) + 15) / 16 * 16; }

// The first n lanes of 16 (none for n = 0, all 16 for n >= 16), as AVX-512 masked loads take them.
inline __mmask16 direct_lanes16(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1);
}

// Share `part` of `parts` of the cache lines of [data, data + floats) prefetched into L2. A kernel
// calls it once per step of its current task (part = step) on the input its next task will copy:
// the copy then reads from L2 where it had waited on each line's first read from L3 or memory.
inline void prefetch_share_l2(const float* data, int64_t floats, int64_t part, int64_t parts) {
  const int64_t lines = (floats + 15) / 16;
  const char* bytes = reinterpret_cast<const char*>(data);
  for (int64_t i = lines * part / parts; i < lines * (part + 1) / parts; ++i) {
    _mm_prefetch(bytes + 64 * i, _MM_HINT_T1);
  }
}

// [0, n) in blocks of at most `most`, as even as possible (12 by 10: 6 + 6): how many blocks,
// and where block b of them starts (block b is [start(b), start(b + 1))).
inline int64_t direct_blocks(int64_t n, int64_t most) { return (n + most - 1) / most; }
inline int64_t direct_block_start(int64_t n, int64_t blocks, int64_t b) { return n * b / blocks; }

// The batch's fixed image shards (Note [image shards] in conv2d_direct_weight.cpp): the weight and
// bias gradients sum shard i's images [image_shard_begin(s, i), image_shard_begin(s, i + 1)) apart
// and add the shards' sums in order, whatever the thread count.
inline constexpr int64_t kImageShards = 2;
// An empty or one-image batch is one shard.
inline int64_t image_shard_count(const Conv2dShape& s) { return std::clamp<int64_t>(s.batch, 1, kImageShards); }
inline int64_t image_shard_begin(const Conv2dShape& s, int64_t i) { return s.batch * i / image_shard_count(s); }

// True when direct_forward runs s: stride 1, pad 0, dilation 1, and direct_isa() is not none, or
// channel_forward_applies(s) (strides 2, padding). Any groups: each group's channel slices of
// x, w and y are read and written in place.
bool direct_forward_applies(const Conv2dShape& s);

// Elements of float direct_forward needs: each group's weights transposed to
// [C/groups*R*S, K/groups] plus one output scratch per thread of get_num_threads().
int64_t direct_forward_workspace(const Conv2dShape& s);

// y = conv(x, w) + bias, as conv2d_forward. Requires direct_forward_applies(s) and a workspace of
// direct_forward_workspace(s) floats. Guarantees: overwrites y; bit-for-bit the same for every
// thread count (each output is summed by one task, taps in the order c, r, q).
void direct_forward(const float* x, const float* w, const float* bias_or_null, float* y,
                    const Conv2dShape& s, float* workspace);

// True when direct_weight_grad runs s: stride 1, pad 0, dilation 1, any groups, and direct_isa()
// is not none, or channel_weight_grad_applies(s) (which takes stride 2 and padding too).
bool direct_weight_grad_applies(const Conv2dShape& s);

// Elements of float direct_weight_grad needs: the grid's lane masks and, per thread of
// get_num_threads(), the dy grid of a group of images and the vector accumulators of its tasks.
int64_t direct_weight_grad_workspace(const Conv2dShape& s);

// dw = d(loss)/dw for y = conv(x, w), given dy (no bias gradient). Requires
// direct_weight_grad_applies(s) and a workspace of direct_weight_grad_workspace(s) floats.
// Guarantees: overwrites dw; bit-for-bit the same for every thread count (each weight is summed by
// one task over images, then positions, in a fixed order).
void direct_weight_grad(const float* dy, const float* x, float* dw, const Conv2dShape& s,
                        float* workspace);

// The weight gradient vectorised over output channels (Note [the weight gradient by output
// channels] in conv2d_direct_weight_channels.cpp), which direct_weight_grad takes where
// channel_weight_grad_applies(s): AVX-512, no dilation, stride 1 or 2 (the same in both
// dimensions), K / groups a multiple of 16 and a kernel 3 wide; any padding, each group of
// images copied with its border into a per-thread scratch. The same contract as
// direct_weight_grad.
bool channel_weight_grad_applies(const Conv2dShape& s);

// What both kernels by output channels need of s: AVX-512, no dilation, stride 1 or 2 (the same in
// both dimensions), a kernel 3 wide and K / groups a multiple of 16.
inline bool channel_kernels_take(const Conv2dShape& s) {
  return direct_isa() == DirectIsa::avx512 && s.dilation_h == 1 && s.dilation_w == 1 &&
         s.stride_h == s.stride_w && (s.stride_h == 1 || s.stride_h == 2) && s.kernel_w == 3 &&
         s.group_out() % 16 == 0;
}
int64_t channel_weight_grad_workspace(const Conv2dShape& s);
void channel_weight_grad(const float* dy, const float* x, float* dw, const Conv2dShape& s,
                         float* workspace);

// The forward vectorised over output channels (Note [the forward by output channels] in
// conv2d_direct_forward_channels.cpp), which direct_forward takes where channel_forward_applies(s):
// AVX-512, no dilation, stride 1 or 2 (the same in both dimensions), a kernel 3 wide and K / groups
// a multiple of 16; any padding, each image's channel group copied with its border into a
// per-thread scratch (direct_input_grad runs it on dy so, without a padded copy of dy). The same contract as direct_forward; direct_forward_applies(s)
// includes these shapes.
bool channel_forward_applies(const Conv2dShape& s);
int64_t channel_forward_workspace(const Conv2dShape& s);
void channel_forward(const float* x, const float* w, const float* bias_or_null, float* y,
                     const Conv2dShape& s, float* workspace);

// The input gradient of a 3x3 stride-2 conv with padding 0 or 1 (Note [the strided input gradient
// by input channels] in conv2d_direct_input_grad_strided.cpp): AVX-512, no dilation, C / groups a
// multiple of 16. Each dx element sums only its own taps, in the order k, r, q, by one task: the
// same bits for every thread count. Overwrites dx.
bool strided_input_grad_applies(const Conv2dShape& s);
int64_t strided_input_grad_workspace(const Conv2dShape& s);
void strided_input_grad(const float* dy, const float* w, float* dx, const Conv2dShape& s,
                        float* workspace);

// A thread's scratch in the channel kernels that copy one image's channel group with its border
// (channel_forward, strided_input_grad): that copy, the image and group it holds, and the plane's
// position-major sums yt.
struct ChannelScratch {
  float* padded;
  float* yt;
  int64_t image = -1, group = -1;  // whose group `padded` holds
};

// task(t, scratch) for t in [0, tasks): on the calling thread where one thread, fewer tasks than
// threads or a parallel region, else split statically between get_num_threads() threads (each
// thread's tasks one contiguous range, so a group copied for one task serves the next). Thread
// i's scratch is `padded_floats` then yt at scratch + i * thread_floats.
template <class Task>
void run_channel_tasks(int64_t tasks, float* scratch, int64_t thread_floats, int64_t padded_floats,
                       const Task& task) {
  auto scratch_of = [&](int thread) {
    float* mine = scratch + thread * thread_floats;
    return ChannelScratch{mine, mine + padded_floats};
  };
  const int nt = get_num_threads();
  if (nt == 1 || tasks < nt || omp_in_parallel()) {
    ChannelScratch mine = scratch_of(0);
    for (int64_t t = 0; t < tasks; ++t) task(t, mine);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    ChannelScratch mine = scratch_of(omp_get_thread_num());
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) task(t, mine);
  }
}

// wt[(g * T + tap) * K/groups + k] = w[(g * K/groups + k) * T + tap], T = C/groups * R * S taps:
// each group's weights tap-major, a tap's output channels one contiguous run.
void transpose_weights_by_tap(const float* w, const Conv2dShape& s, float* wt);

// `planes` contiguous planes of [H, W] into dst as planes of [H + 2 * ph, W + 2 * pw] with a zero
// border, on the calling thread.
void pad_planes(const float* src, int64_t planes, int64_t H, int64_t W, int64_t ph, int64_t pw,
                float* dst);

// dst[i * dst_ld + j] = src[j * src_ld + i] for j < m rows of src and i < n of its columns
// (1 <= m, n <= 16): a 16 x 16 block transposed in registers, src's rows read masked to n
// floats, dst's n rows written masked to m floats.
void transpose16_block(const float* src, int64_t src_ld, int64_t m, int64_t n, float* dst,
                       int64_t dst_ld);

// Padded stride-1 convs on the kernels above (Note [padded direct convolutions] in
// conv2d_direct_padded.cpp). direct_padded_shape(s) is s on its input with the zero border
// included (pad 0). direct_padded_applies(s): s has padding, is not depthwise, and
// direct_forward_applies to its padded shape. direct_input_grad_applies(s): also
// stride 1 and pad <= kernel - 1 in both dimensions. direct_padded_weight_grad_applies(s):
// direct_padded_applies(s) and direct_weight_grad_applies to the padded shape.
// Each call copies its input (x, or dy for the input gradient) into the front of its workspace,
// chunks of images of at most 16 MB at a time, and the same guarantees as direct_forward /
// direct_weight_grad hold: bit-for-bit the same for every thread count. direct_input_grad
// overwrites dx.
// group_slice(s): one channel group of s as an ungrouped conv (groups 1, group_in() /
// group_out() channels), what im2col + gemm sees of a grouped conv.
Conv2dShape group_slice(const Conv2dShape& s);
Conv2dShape direct_padded_shape(const Conv2dShape& s);
bool direct_padded_applies(const Conv2dShape& s);
bool direct_input_grad_applies(const Conv2dShape& s);
bool direct_padded_weight_grad_applies(const Conv2dShape& s);
int64_t direct_padded_forward_workspace(const Conv2dShape& s);
void direct_padded_forward(const float* x, const float* w, const float* bias_or_null, float* y,
                           const Conv2dShape& s, float* workspace);
int64_t direct_padded_weight_grad_workspace(const Conv2dShape& s);
void direct_padded_weight_grad(const float* dy, const float* x, float* dw, const Conv2dShape& s,
                               float* workspace);
int64_t direct_input_grad_workspace(const Conv2dShape& s);
void direct_input_grad(const float* dy, const float* w, float* dx, const Conv2dShape& s,
                       float* workspace);

}  // namespace ember::kernels::cpu
