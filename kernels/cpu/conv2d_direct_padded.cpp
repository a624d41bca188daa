#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ember/kernels/cpu/conv2d_direct.h"
#include "ember/kernels/cpu/threading.h"

namespace ember::kernels::cpu {
namespace {

// Note [padded direct convolutions]. The direct kernels (conv2d_direct.cpp,
// conv2d_direct_weight.cpp) read their input on the input-width grid, which has no room for
// padding. A padded stride-1 conv is the unpadded conv of the input copied into a zero border:
// forward and weight gradient run them on x padded by (pad_h, pad_w). The input gradient of a
// stride-1 conv is itself a stride-1 conv (a "full" correlation): dx = conv(dy padded by
// (R - 1 - pad_h, Q - 1 - pad_w), w'), w'[c, k, r, q] = w[k, c, R - 1 - r, Q - 1 - q], with the
// roles of the channels swapped. The copies cost one pass over x (or dy); the im2col + gemm path
// they replace wrote and re-packed R * Q copies of it (ResNet-8's 3x3 convs: 45 % of the
// training step was im2col, gemm packing and memcpy).
//
// Where the kernels by output channels apply (conv2d_direct_forward_channels.cpp and
// conv2d_direct_weight_channels.cpp: 3-wide kernels, K / groups a multiple of 16 on AVX-512), they
// take the padding themselves, a group of images at a time into a per-thread scratch: the forward
// and dx here make no copy, and direct_weight_grad_applies(s) to such a padded s itself, so its
// weight gradient does not come here.
//
// Channel groups (a ResNeXt block's 3x3) need nothing here: the direct kernels take each group's
// channel slices of the padded copy and of y, dy or dx in place. The copies are made for chunks
// of images of at most kChunkFloats, so that the workspace does not grow with the batch (a whole
// ResNet-50 batch padded would be another activation's worth of memory).

constexpr int64_t kChunkFloats = int64_t(1) << 22;  // 16 MB

// The conv that computes dx of s on dy: channels swapped (each group's too), dy's zero border
// R - 1 - pad as its padding. The forward by output channels takes it so, without a copy of dy.
Conv2dShape input_grad_shape_padded(const Conv2dShape& s) {
  Conv2dShape g = s;
  g.in_channels = s.out_channels;
  g.out_channels = s.in_channels;
  g.in_h = s.out_h();
  g.in_w = s.out_w();
  g.pad_h = s.kernel_h - 1 - s.pad_h;
  g.pad_w = s.kernel_w - 1 - s.pad_w;
  return g;
}

// The same conv on dy copied into that border (no padding left), for the grid kernel.
Conv2dShape input_grad_shape(const Conv2dShape& s) {
  return direct_padded_shape(input_grad_shape_padded(s));
}

// One plane of [H, W] into [H + 2 * ph, W + 2 * pw] with a zero border, 16 columns at a time: a
// padded row's lanes inside the image load source column c + lane - pw under a mask, the others
// are zero (a masked-off lane is never read, so the row's address minus pw is never touched).
// ResNet-8's rows are 9 to 30 floats: a memcpy and two fills per row had cost more than the copy
// (4 to 11 % of a padded conv's time). Here x is first read (from L3 or memory, a conv's input
// being written long before), which is what this function's time is: expand-loads in place of
// the masked loads measured the same within 1-2 %.
__attribute__((target("avx512f"))) void pad_plane_avx512(const float* from, int64_t H, int64_t W,
                                                         int64_t ph, int64_t pw, float* to) {
  const int64_t PH = H + 2 * ph, PW = W + 2 * pw;
  for (int64_t h = 0; h < PH; ++h) {
    float* row = to + h * PW;
    const bool inside = h >= ph && h < ph + H;
    const float* src = from + (h - ph) * W;
    for (int64_t c = 0; c < PW; c += 16) {
      const __mmask16 lanes = direct_lanes16(PW - c);
      __m512 v = _mm512_setzero_ps();
      if (inside) {
        // Columns [max(c, pw), min(c + 16, pw + W)) of the padded row are image columns.
        const int64_t lo = std::max(c, pw), hi = std::min(c + 16, pw + W);
        if (lo < hi) {
          const __mmask16 image = direct_lanes16(hi - c) & ~direct_lanes16(lo - c);
          // Lane j reads src[c + j - pw]; the address is formed from the integer offset so that
          // no pointer before the row is computed for c < pw.
          const auto row_start = reinterpret_cast<uintptr_t>(src);
          const auto lane0 = row_start + static_cast<uintptr_t>(c - pw) * sizeof(float);
          v = _mm512_maskz_loadu_ps(image, reinterpret_cast<const void*>(lane0));
        }
      }
      _mm512_mask_storeu_ps(row + c, lanes, v);
    }
  }
}

}  // namespace

void pad_planes(const float* src, int64_t planes, int64_t H, int64_t W, int64_t ph, int64_t pw,
                float* dst) {
  const int64_t PH = H + 2 * ph, PW = W + 2 * pw;
  const bool avx512 = direct_isa() == DirectIsa::avx512;
  for (int64_t i = 0; i < planes; ++i) {
    const float* from = src + i * H * W;
    float* to = dst + i * PH * PW;
    if (avx512) {
      pad_plane_avx512(from, H, W, ph, pw, to);
      continue;
    }
    std::fill(to, to + ph * PW, 0.0f);
    for (int64_t h = 0; h < H; ++h) {
      float* row = to + (ph + h) * PW;
      std::fill(row, row + pw, 0.0f);
      std::memcpy(row + pw, from + h * W, static_cast<size_t>(W) * sizeof(float));
      std::fill(row + pw + W, row + PW, 0.0f);
    }
    std::fill(to + (ph + H) * PW, to + PH * PW, 0.0f);
  }
}

namespace {

// `planes` planes of [H, W] of each of `images` images (image n's first at src + n * src_image)
// into dst, contiguous, as planes of [H + 2 * ph, W + 2 * pw] with a zero border. Threaded over
// planes when called outside a parallel region.
void pad_images(const float* src, int64_t src_image, int64_t images, int64_t planes, int64_t H,
                int64_t W, int64_t ph, int64_t pw, float* dst) {
  const int64_t PH = H + 2 * ph, PW = W + 2 * pw;
  auto one = [&](int64_t i) {
    pad_planes(src + i / planes * src_image + i % planes * H * W, 1, H, W, ph, pw,
               dst + i * PH * PW);
  };
  const int64_t total = images * planes;
  const int nt = get_num_threads();
  if (nt == 1 || omp_in_parallel() || total < nt) {
    for (int64_t i = 0; i < total; ++i) one(i);
    return;
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < total; ++i) one(i);
}

// Floats of one image of shape p's input.
int64_t image_floats(const Conv2dShape& p) { return p.in_channels * p.in_h * p.in_w; }

// Images a chunk holds: its padded input at most kChunkFloats, at least one image.
int64_t chunk_images(const Conv2dShape& p) {
  return std::clamp<int64_t>(kChunkFloats / image_floats(p), 1, p.batch);
}

// Rounded up to a cache line, so that what follows in the workspace stays aligned.
int64_t aligned(int64_t floats) { return (floats + 15) / 16 * 16; }

int64_t chunk_floats(const Conv2dShape& p) { return aligned(chunk_images(p) * image_floats(p)); }

// Images [n0, n0 + part.batch) of shape p.
Conv2dShape images_of(const Conv2dShape& p, int64_t n0) {
  Conv2dShape part = p;
  part.batch = std::min(chunk_images(p), p.batch - n0);
  return part;
}

int64_t weight_floats(const Conv2dShape& s) {
  return s.out_channels * s.group_in() * s.kernel_h * s.kernel_w;
}

// The images of a chunk of p padded from x: planes of s's input with s's zero border.
void pad_chunk(const float* x, const Conv2dShape& s, const Conv2dShape& part, int64_t n0,
               float* padded) {
  const int64_t x_image = s.in_channels * s.in_h * s.in_w;
  pad_images(x + n0 * x_image, x_image, part.batch, s.in_channels, s.in_h, s.in_w, s.pad_h,
             s.pad_w, padded);
}

}  // namespace

Conv2dShape group_slice(const Conv2dShape& s) {
  Conv2dShape one = s;
  one.in_channels = s.group_in();
  one.out_channels = s.group_out();
  one.groups = 1;
  return one;
}

Conv2dShape direct_padded_shape(const Conv2dShape& s) {
  Conv2dShape p = s;
  p.in_h = s.in_h + 2 * s.pad_h;
  p.in_w = s.in_w + 2 * s.pad_w;
  p.pad_h = p.pad_w = 0;
  return p;
}

bool direct_padded_applies(const Conv2dShape& s) {
  return !s.depthwise() && (s.pad_h > 0 || s.pad_w > 0) &&
         direct_forward_applies(direct_padded_shape(s));
}

bool direct_input_grad_applies(const Conv2dShape& s) {
  return direct_padded_applies(s) && s.stride_h == 1 && s.stride_w == 1 &&
         s.pad_h <= s.kernel_h - 1 && s.pad_w <= s.kernel_w - 1;
}

bool direct_padded_weight_grad_applies(const Conv2dShape& s) {
  return direct_padded_applies(s) && direct_weight_grad_applies(direct_padded_shape(s));
}

int64_t direct_padded_forward_workspace(const Conv2dShape& s) {
  const Conv2dShape p = direct_padded_shape(s);
  return chunk_floats(p) + direct_forward_workspace(p);
}

void direct_padded_forward(const float* x, const float* w, const float* bias_or_null, float* y,
                           const Conv2dShape& s, float* workspace) {
  const Conv2dShape p = direct_padded_shape(s);
  const int64_t y_image = s.out_channels * s.out_h() * s.out_w();
  float* padded = workspace;
  float* rest = padded + chunk_floats(p);
  for (int64_t n0 = 0; n0 < s.batch; n0 += chunk_images(p)) {
    const Conv2dShape part = images_of(p, n0);
    pad_chunk(x, s, part, n0, padded);
    direct_forward(padded, w, bias_or_null, y + n0 * y_image, part, rest);
  }
}

int64_t direct_padded_weight_grad_workspace(const Conv2dShape& s) {
  const Conv2dShape p = direct_padded_shape(s);
  return chunk_floats(p) + aligned(weight_floats(s)) + direct_weight_grad_workspace(p);
}

// dw = the sum of the chunks' weight gradients, added chunk by chunk in order (a fixed order:
// the same bits for every thread count).
void direct_padded_weight_grad(const float* dy, const float* x, float* dw, const Conv2dShape& s,
                               float* workspace) {
  const Conv2dShape p = direct_padded_shape(s);
  const int64_t y_image = s.out_channels * s.out_h() * s.out_w(), weights = weight_floats(s);
  float* padded = workspace;
  float* partial = padded + chunk_floats(p);
  float* rest = partial + aligned(weights);
  for (int64_t n0 = 0; n0 < s.batch; n0 += chunk_images(p)) {
    const Conv2dShape part = images_of(p, n0);
    pad_chunk(x, s, part, n0, padded);
    if (n0 == 0) {
      direct_weight_grad(dy, padded, dw, part, rest);
      continue;
    }
    direct_weight_grad(dy + n0 * y_image, padded, partial, part, rest);
    for (int64_t i = 0; i < weights; ++i) dw[i] += partial[i];
  }
}

int64_t direct_input_grad_workspace(const Conv2dShape& s) {
  const Conv2dShape g = input_grad_shape(s), gp = input_grad_shape_padded(s);
  if (channel_forward_applies(gp)) return aligned(weight_floats(s)) + channel_forward_workspace(gp);
  return chunk_floats(g) + aligned(weight_floats(s)) + direct_forward_workspace(g);
}

void direct_input_grad(const float* dy, const float* w, float* dx, const Conv2dShape& s,
                       float* workspace) {
  const Conv2dShape gs = input_grad_shape(s);
  const int64_t Kg = s.group_out(), Cg = s.group_in(), R = s.kernel_h, Q = s.kernel_w;
  const int64_t dy_image = s.out_channels * s.out_h() * s.out_w();
  const int64_t dx_image = s.in_channels * s.in_h * s.in_w;
  const Conv2dShape gp = input_grad_shape_padded(s);
  const bool in_place = channel_forward_applies(gp);
  float* dy_padded = workspace;
  float* flipped = in_place ? workspace : dy_padded + chunk_floats(gs);
  float* rest = flipped + aligned(weight_floats(s));
  // Group g's weights w[g * Kg + k, c] flipped to flipped[g * Cg + c, k]: gs's weight, whose
  // group g maps the group's Kg channels of dy to its Cg channels of dx.
  for (int64_t g = 0; g < s.groups; ++g) {
    for (int64_t k = 0; k < Kg; ++k) {
      for (int64_t c = 0; c < Cg; ++c) {
        const float* from = w + ((g * Kg + k) * Cg + c) * R * Q;
        float* to = flipped + ((g * Cg + c) * Kg + k) * R * Q;
        for (int64_t t = 0; t < R * Q; ++t) to[t] = from[R * Q - 1 - t];
      }
    }
  }
  if (in_place) {
    channel_forward(dy, flipped, nullptr, dx, gp, rest);
    return;
  }
  for (int64_t n0 = 0; n0 < s.batch; n0 += chunk_images(gs)) {
    const Conv2dShape part = images_of(gs, n0);
    pad_images(dy + n0 * dy_image, dy_image, part.batch, s.out_channels, s.out_h(), s.out_w(),
               R - 1 - s.pad_h, Q - 1 - s.pad_w, dy_padded);
    direct_forward(dy_padded, flipped, nullptr, dx + n0 * dx_image, part, rest);
  }
}

}  // namespace ember::kernels::cpu
