// Hand-written conv2d on CUDA: one tiled implicit-GEMM kernel, specialised by a "problem" that
// says how to gather the A and B tiles from the NCHW tensors and where each result goes.
#include "ember/kernels/cuda/conv2d.h"

#include <algorithm>
#include <climits>
#include <type_traits>
#include <cstdint>

#include "ember/common/cuda_check.h"
#include "ember/common/error.h"
#include "ember/kernels/cuda/conv2d_depthwise.h"
#include "ember/kernels/cuda/launch.cuh"

namespace ember::kernels::cuda {

namespace {

// --- The implicit-GEMM kernel ------------------------------------------------------------------
//
// C[row][col] = sum over t of A(row, t) * B(t, col) for a BM x 128 tile of C per block, 256
// threads, BK = 8 reduction steps per tile, shared tiles double-buffered as in the SGEMM
// (kernels/cuda/gemm.cu): while the block computes on tile t, every thread holds its elements of
// tile t + 1 in registers and stores them to the other buffer afterwards.
//
// Thread (ty, tx) = (tid / 16, tid % 16) owns rows ty*4 + (i % 4) + 64 * (i / 4), i < BM / 16, and
// columns tx*4 + (j % 4) + 64 * (j / 4), j < 8: float4 (or 2 x double2) shared reads, no bank
// conflicts. Shared rows are padded by 4 elements (16-byte alignment kept, transposing stores
// conflict-free).
//
// Loads: thread tid fetches A(row, t) for t = t0 + tid % 8 and rows tid / 8 + 32 * e, and
// B(t, col) for t = t0 + tid / 32 and columns tid % 32 + 32 * e. So each thread's reduction
// index is the same for all its A (and all its B) elements of a tile and moves by 8 per tile: a
// problem decodes it into (channel, r, s) or (image, p, q) once, in a "cursor", and moves the
// cursor by carries instead of divisions. Its columns stay fixed for the whole kernel, so their
// decoding (image, pixel) happens once too. Problems return 0 for any index outside the virtual
// matrices (padding, dilation and stride gaps, tails).
//
// Problem interface (all __device__):
//   rows, cols                         the GEMM's M and N
//   select_split(z)                    picks the reduction range (and output) of grid slice z
//   depth()                            reduction length of that range
//   ACursor a_cursor(t) / advance_a    A's reduction index for tile 0, moved on by kBK
//   T load_a(row, ACursor)             row < rows
//   BColumn b_column(col)              any col (>= cols gives a column that loads 0)
//   BCursor b_cursor(t) / advance_b
//   T load_b(BCursor, BColumn)
//   store(row, col, value)             row < rows, col < cols
constexpr int kThreads = 256, kBN = 128, kBK = 8, kPad = 4;

__device__ __forceinline__ void lds4(const float* p, float* r) {
  float4 v = *reinterpret_cast<const float4*>(p);
  r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
}
__device__ __forceinline__ void lds4(const double* p, double* r) {
  double2 v = *reinterpret_cast<const double2*>(p);
  double2 u = *reinterpret_cast<const double2*>(p + 2);
  r[0] = v.x, r[1] = v.y, r[2] = u.x, r[3] = u.y;
}

// Grid: x over 128-column tiles, y over BM-row tiles, z over reduction splits.
template <class T, int BM, class Problem>
__global__ void __launch_bounds__(kThreads) implicit_gemm_kernel(Problem prob) {
  constexpr int TM = BM / 16;               // rows per thread: 4 or 8
  constexpr int kALoads = BM * kBK / kThreads;  // A elements per thread per tile: 2 or 4
  constexpr int kBLoads = kBN * kBK / kThreads;  // 4
  static_assert(BM == 64 || BM == 128, "BM is 64 or 128");
  __shared__ __align__(16) T As[2][kBK][BM + kPad];
  __shared__ __align__(16) T Bs[2][kBK][kBN + kPad];

  prob.select_split(static_cast<int>(blockIdx.z));
  const int tid = threadIdx.x;
  const int tx = tid & 15, ty = tid >> 4;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * BM;
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int a_kk = tid & 7, a_m = tid >> 3;
  const int b_kk = tid >> 5, b_n = tid & 31;

  typename Problem::ACursor ac = prob.a_cursor(a_kk);
  typename Problem::BCursor bc = prob.b_cursor(b_kk);
  typename Problem::BColumn bcol[kBLoads];
#pragma unroll
  for (int e = 0; e < kBLoads; ++e) bcol[e] = prob.b_column(col0 + b_n + 32 * e);

  T acc[TM][8];
#pragma unroll
  for (int i = 0; i < TM; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = T(0);
  }
  T ra[kALoads], rb[kBLoads];

  const int64_t tiles = (prob.depth() + kBK - 1) / kBK;
  if (tiles > 0) {
#pragma unroll
    for (int e = 0; e < kALoads; ++e) {
      const int64_t row = row0 + a_m + 32 * e;
      ra[e] = row < prob.rows ? prob.load_a(row, ac) : T(0);
    }
#pragma unroll
    for (int e = 0; e < kBLoads; ++e) rb[e] = prob.load_b(bc, bcol[e]);
#pragma unroll
    for (int e = 0; e < kALoads; ++e) As[0][a_kk][a_m + 32 * e] = ra[e];
#pragma unroll
    for (int e = 0; e < kBLoads; ++e) Bs[0][b_kk][b_n + 32 * e] = rb[e];
    __syncthreads();

    for (int64_t t = 0; t < tiles; ++t) {
      const int cur = static_cast<int>(t & 1);
      const bool more = t + 1 < tiles;
      if (more) {  // fetch tile t + 1; stored after the math on tile t
        prob.advance_a(ac);
        prob.advance_b(bc);
#pragma unroll
        for (int e = 0; e < kALoads; ++e) {
          const int64_t row = row0 + a_m + 32 * e;
          ra[e] = row < prob.rows ? prob.load_a(row, ac) : T(0);
        }
#pragma unroll
        for (int e = 0; e < kBLoads; ++e) rb[e] = prob.load_b(bc, bcol[e]);
      }
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        T a[TM], b[8];
#pragma unroll
        for (int h = 0; h < TM / 4; ++h) lds4(&As[cur][kk][ty * 4 + 64 * h], a + 4 * h);
        lds4(&Bs[cur][kk][tx * 4], b);
        lds4(&Bs[cur][kk][64 + tx * 4], b + 4);
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
      }
      if (more) {
#pragma unroll
        for (int e = 0; e < kALoads; ++e) As[cur ^ 1][a_kk][a_m + 32 * e] = ra[e];
#pragma unroll
        for (int e = 0; e < kBLoads; ++e) Bs[cur ^ 1][b_kk][b_n + 32 * e] = rb[e];
      }
      __syncthreads();
    }
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int64_t row = row0 + ty * 4 + (i & 3) + (i >> 2) * 64;
    if (row >= prob.rows) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int64_t col = col0 + tx * 4 + (j & 3) + (j >> 2) * 64;
      if (col < prob.cols) prob.store(row, col, acc[i][j]);
    }
  }
}

// --- Shapes and cursors ------------------------------------------------------------------------

// Channel groups: C and K are one group's channels (C = in / groups, K = out / groups), G the
// group count; CHW and KPQ are whole images (all groups). Grid slice z selects its group by
// moving the problem's pointers to that group's channel slices (select_split), so each group is
// an ungrouped conv on slices and G == 1 is exactly the ungrouped kernel.
struct Dims {
  int N, C, H, W, K, R, S, P, Q, sh, sw, ph, pw, dh, dw, G;
  int HW, PQ, RS, CRS, KRS;
  int64_t CHW, KPQ;
};

// A reduction index t written in three digits (i1, i2, i3) of bases (n1, D2, D3), outermost
// first; `advance` adds kBK with carries. step = kBK in those digits: kBK = s1*D2*D3 + s2*D3 + s3
// with s2 < D2, s3 < D3, so each carry needs one subtraction at most.
struct Digits {
  int D2, D3;
  int s1, s2, s3;
};

Digits digits_of_step(int D2, int D3) {
  Digits d;
  d.D2 = D2;
  d.D3 = D3;
  d.s3 = kBK % D3;
  d.s2 = (kBK / D3) % D2;
  d.s1 = kBK / (D2 * D3);
  return d;
}

struct Index3 {
  int i1, i2, i3;
};

__device__ __forceinline__ Index3 split3(int64_t t, const Digits& d) {
  Index3 x;
  const int64_t inner = static_cast<int64_t>(d.D2) * d.D3;
  x.i1 = static_cast<int>(t / inner);
  const int rest = static_cast<int>(t - x.i1 * inner);
  x.i2 = rest / d.D3;
  x.i3 = rest - x.i2 * d.D3;
  return x;
}

__device__ __forceinline__ void advance3(Index3& x, const Digits& d) {
  x.i3 += d.s3;
  if (x.i3 >= d.D3) x.i3 -= d.D3, ++x.i2;
  x.i2 += d.s2;
  if (x.i2 >= d.D2) x.i2 -= d.D2, ++x.i1;
  x.i1 += d.s1;
}

__device__ __forceinline__ bool inside(int v, int size) {
  return static_cast<unsigned>(v) < static_cast<unsigned>(size);
}

// --- Forward: rows k, columns (n, p, q), reduction (c, r, s) ------------------------------------
template <class T>
struct ForwardProblem {
  const T* x;
  const T* w;
  const T* bias;
  T* y;
  const T* x_all;  // the whole tensors; x, w, bias and y are group z's slices of them
  const T* w_all;
  const T* bias_all;
  T* y_all;
  Dims d;
  Digits crs;  // (c, r, s)
  int64_t rows, cols;

  // Grid slice z is channel group z. Idempotent (absolute, not +=): the emulator's threads of a
  // block may share one copy of the kernel's arguments, and each thread calls this.
  __device__ void select_split(int z) {
    x = x_all + static_cast<int64_t>(z) * d.C * d.HW;
    w = w_all + static_cast<int64_t>(z) * d.K * d.CRS;
    y = y_all + static_cast<int64_t>(z) * d.K * d.PQ;
    bias = bias_all != nullptr ? bias_all + static_cast<int64_t>(z) * d.K : nullptr;
  }
  __device__ int64_t depth() const { return d.CRS; }

  struct ACursor {
    int t;
  };
  __device__ ACursor a_cursor(int t) const { return {t}; }
  __device__ void advance_a(ACursor& c) const { c.t += kBK; }
  __device__ T load_a(int64_t k, const ACursor& c) const {
    return c.t < d.CRS ? w[k * d.CRS + c.t] : T(0);
  }

  struct BColumn {
    int64_t base;  // n * C * H * W
    int h0, w0;    // p * stride - pad, q * stride - pad
    bool valid;
  };
  __device__ BColumn b_column(int64_t j) const {
    BColumn b{0, 0, 0, j < cols};
    if (!b.valid) return b;
    const int64_t n = j / d.PQ;
    const int pq = static_cast<int>(j - n * d.PQ);
    const int p = pq / d.Q, q = pq - p * d.Q;
    b.base = n * d.CHW;
    b.h0 = p * d.sh - d.ph;
    b.w0 = q * d.sw - d.pw;
    return b;
  }

  struct BCursor {
    int t;
    Index3 i;  // (c, r, s)
    int64_t c_off;
    int rdh, sdw;
  };
  __device__ void finish(BCursor& c) const {
    c.c_off = static_cast<int64_t>(c.i.i1) * d.HW;
    c.rdh = c.i.i2 * d.dh;
    c.sdw = c.i.i3 * d.dw;
  }
  __device__ BCursor b_cursor(int t) const {
    BCursor c;
    c.t = t;
    c.i = split3(t, crs);
    finish(c);
    return c;
  }
  __device__ void advance_b(BCursor& c) const {
    c.t += kBK;
    advance3(c.i, crs);
    finish(c);
  }
  __device__ T load_b(const BCursor& c, const BColumn& col) const {
    if (!col.valid || c.t >= d.CRS) return T(0);
    const int h = col.h0 + c.rdh, w = col.w0 + c.sdw;
    if (!inside(h, d.H) || !inside(w, d.W)) return T(0);
    return x[col.base + c.c_off + h * d.W + w];
  }

  __device__ void store(int64_t k, int64_t j, T v) const {
    const int64_t n = j / d.PQ;
    const int64_t pq = j - n * d.PQ;
    y[n * d.KPQ + k * d.PQ + pq] = bias != nullptr ? v + bias[k] : v;
  }
};

// --- Backward input: rows c, columns (n, h, w), reduction (k, r, s) -----------------------------
template <class T>
struct BackwardInputProblem {
  const T* dy;
  const T* w;
  T* dx;
  const T* dy_all;  // the whole tensors; dy, w and dx are group z's slices of them
  const T* w_all;
  T* dx_all;
  Dims d;
  Digits krs;  // (k, r, s)
  Digits k_rs;  // (k, rs) as (k, 1, rs) for A's cursor
  int64_t rows, cols;

  // Grid slice z is channel group z (idempotent, as ForwardProblem's).
  __device__ void select_split(int z) {
    dy = dy_all + static_cast<int64_t>(z) * d.K * d.PQ;
    w = w_all + static_cast<int64_t>(z) * d.K * d.CRS;
    dx = dx_all + static_cast<int64_t>(z) * d.C * d.HW;
  }
  __device__ int64_t depth() const { return d.KRS; }

  // A(c, (k, r, s)) = w[k][c][r][s]
  struct ACursor {
    int t;
    Index3 i;  // (k, 0, rs)
  };
  __device__ ACursor a_cursor(int t) const { return {t, split3(t, k_rs)}; }
  __device__ void advance_a(ACursor& c) const {
    c.t += kBK;
    advance3(c.i, k_rs);
  }
  __device__ T load_a(int64_t c, const ACursor& a) const {
    if (a.t >= d.KRS) return T(0);
    return w[(static_cast<int64_t>(a.i.i1) * d.C + c) * d.RS + a.i.i3];
  }

  struct BColumn {
    int64_t base;  // n * K * P * Q
    int hp, wp;    // h + pad, w + pad
    bool valid;
  };
  __device__ BColumn b_column(int64_t j) const {
    BColumn b{0, 0, 0, j < cols};
    if (!b.valid) return b;
    const int64_t n = j / d.HW;
    const int hw = static_cast<int>(j - n * d.HW);
    const int h = hw / d.W, w = hw - h * d.W;
    b.base = n * d.KPQ;
    b.hp = h + d.ph;
    b.wp = w + d.pw;
    return b;
  }

  struct BCursor {
    int t;
    Index3 i;  // (k, r, s)
    int64_t k_off;
    int rdh, sdw;
  };
  __device__ void finish(BCursor& c) const {
    c.k_off = static_cast<int64_t>(c.i.i1) * d.PQ;
    c.rdh = c.i.i2 * d.dh;
    c.sdw = c.i.i3 * d.dw;
  }
  __device__ BCursor b_cursor(int t) const {
    BCursor c;
    c.t = t;
    c.i = split3(t, krs);
    finish(c);
    return c;
  }
  __device__ void advance_b(BCursor& c) const {
    c.t += kBK;
    advance3(c.i, krs);
    finish(c);
  }
  // dy[n][k][p][q] where p * stride = h + pad - r * dilation (and likewise q), if integral and
  // in range.
  __device__ T load_b(const BCursor& c, const BColumn& col) const {
    if (!col.valid || c.t >= d.KRS) return T(0);
    int p = col.hp - c.rdh, q = col.wp - c.sdw;
    if (p < 0 || q < 0) return T(0);
    if (d.sh != 1) {
      const int ps = p / d.sh;
      if (ps * d.sh != p) return T(0);
      p = ps;
    }
    if (d.sw != 1) {
      const int qs = q / d.sw;
      if (qs * d.sw != q) return T(0);
      q = qs;
    }
    if (p >= d.P || q >= d.Q) return T(0);
    return dy[col.base + c.k_off + p * d.Q + q];
  }

  __device__ void store(int64_t c, int64_t j, T v) const {
    const int64_t n = j / d.HW;
    const int64_t hw = j - n * d.HW;
    dx[n * d.CHW + c * d.HW + hw] = v;
  }
};

// --- Backward weight: rows k, columns (c, r, s), reduction (n, p, q) over a group of images -----
template <class T>
struct BackwardWeightProblem {
  const T* dy;
  const T* x;
  const T* dy_all;  // the whole tensors; dy and x are group g's slices of them
  const T* x_all;
  T* out;  // dw, or the partial sums [splits][K][C*R*S]
  Dims d;
  Digits npq;   // (n, p, q)
  Digits n_pq;  // (n, pq) as (n, 1, pq)
  int images_per_split, splits;
  int64_t rows, cols;
  // set by select_split
  int n_begin, n_end;
  T* split_out;

  // Grid slice z = batch split + splits * channel group; each split's output is a whole dw
  // ([G * K][C * R * S]), of which group g writes rows [g * K, (g + 1) * K).
  __device__ void select_split(int z) {
    const int g = z / splits, split = z - g * splits;
    n_begin = split * images_per_split;
    n_end = min(d.N, n_begin + images_per_split);
    dy = dy_all + static_cast<int64_t>(g) * d.K * d.PQ;
    x = x_all + static_cast<int64_t>(g) * d.C * d.HW;
    split_out = out + (static_cast<int64_t>(split) * d.G + g) * rows * cols;
  }
  __device__ int64_t depth() const {
    return n_end > n_begin ? static_cast<int64_t>(n_end - n_begin) * d.PQ : 0;
  }

  // A(k, (n, pq)) = dy[n][k][pq]
  struct ACursor {
    Index3 i;  // (n, 0, pq), n absolute
  };
  __device__ ACursor a_cursor(int t) const {
    ACursor a{split3(t, n_pq)};
    a.i.i1 += n_begin;
    return a;
  }
  __device__ void advance_a(ACursor& a) const { advance3(a.i, n_pq); }
  __device__ T load_a(int64_t k, const ACursor& a) const {
    if (a.i.i1 >= n_end) return T(0);
    return dy[a.i.i1 * d.KPQ + k * d.PQ + a.i.i3];
  }

  struct BColumn {
    int c_off;     // c * H * W
    int rdh, sdw;  // r * dilation - pad, s * dilation - pad
    bool valid;
  };
  __device__ BColumn b_column(int64_t j) const {
    BColumn b{0, 0, 0, j < cols};
    if (!b.valid) return b;
    const int crs = static_cast<int>(j);
    const int c = crs / d.RS, rs = crs - c * d.RS;
    const int r = rs / d.S, s = rs - r * d.S;
    b.c_off = c * d.HW;
    b.rdh = r * d.dh - d.ph;
    b.sdw = s * d.dw - d.pw;
    return b;
  }

  struct BCursor {
    Index3 i;  // (n, p, q), n absolute
    int64_t x_off;
    int hs, ws;  // p * stride, q * stride
  };
  __device__ void finish(BCursor& c) const {
    c.x_off = c.i.i1 * d.CHW;
    c.hs = c.i.i2 * d.sh;
    c.ws = c.i.i3 * d.sw;
  }
  __device__ BCursor b_cursor(int t) const {
    BCursor c;
    c.i = split3(t, npq);
    c.i.i1 += n_begin;
    finish(c);
    return c;
  }
  __device__ void advance_b(BCursor& c) const {
    advance3(c.i, npq);
    finish(c);
  }
  __device__ T load_b(const BCursor& c, const BColumn& col) const {
    if (!col.valid || c.i.i1 >= n_end) return T(0);
    const int h = c.hs + col.rdh, w = c.ws + col.sdw;
    if (!inside(h, d.H) || !inside(w, d.W)) return T(0);
    return x[c.x_off + col.c_off + h * d.W + w];
  }

  __device__ void store(int64_t k, int64_t crs, T v) const { split_out[k * cols + crs] = v; }
};

// dw[i] = sum over z of partial[z][i], z in order.
template <class T>
__global__ void sum_splits_kernel(const T* partial, int64_t splits, int64_t n, T* dw) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    T sum = 0;
    for (int64_t z = 0; z < splits; ++z) sum += partial[z * n + i];
    dw[i] = sum;
  }
}

// dbias[k] = sum of dy[n][k][pq] over n and pq: block k, 256 threads, then a tree in shared memory.
template <class T>
__global__ void __launch_bounds__(kThreads) bias_grad_kernel(const T* dy, Dims d, T* dbias) {
  __shared__ T partial[kThreads];
  const int64_t k = blockIdx.x;
  T sum = 0;
  for (int n = 0; n < d.N; ++n) {
    const T* plane = dy + n * d.KPQ + k * d.PQ;
    for (int pq = threadIdx.x; pq < d.PQ; pq += kThreads) sum += plane[pq];
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width) partial[threadIdx.x] += partial[threadIdx.x + width];
    __syncthreads();
  }
  if (threadIdx.x == 0) dbias[k] = partial[0];
}

// --- Host side ---------------------------------------------------------------------------------

constexpr int64_t kMaxGridYZ = 65535;

Dims dims_of(const Conv2dShape& s, const char* op) {
  const int64_t P = s.out_h(), Q = s.out_w();
  const int64_t chw = s.in_channels * s.in_h * s.in_w, kpq = s.out_channels * P * Q;
  const int64_t kcrs = s.out_channels * s.group_in() * s.kernel_h * s.kernel_w;
  EMBER_CHECK(chw < INT_MAX && kpq < INT_MAX && kcrs < INT_MAX && s.batch < INT_MAX, op,
              " (CUDA): each image and the weight must hold fewer than 2^31 elements, got C*H*W = ", chw,
              ", K*P*Q = ", kpq, ", K*C*R*S = ", kcrs);
  EMBER_CHECK(P >= 1 && Q >= 1 && s.stride_h >= 1 && s.stride_w >= 1 && s.dilation_h >= 1 && s.dilation_w >= 1,
              op, " (CUDA): invalid shape (output ", P, "x", Q, ")");
  Dims d{};
  d.N = static_cast<int>(s.batch);
  d.G = static_cast<int>(s.groups);
  d.C = static_cast<int>(s.group_in());
  d.H = static_cast<int>(s.in_h);
  d.W = static_cast<int>(s.in_w);
  d.K = static_cast<int>(s.group_out());
  d.R = static_cast<int>(s.kernel_h);
  d.S = static_cast<int>(s.kernel_w);
  d.P = static_cast<int>(P);
  d.Q = static_cast<int>(Q);
  d.sh = static_cast<int>(s.stride_h);
  d.sw = static_cast<int>(s.stride_w);
  d.ph = static_cast<int>(s.pad_h);
  d.pw = static_cast<int>(s.pad_w);
  d.dh = static_cast<int>(s.dilation_h);
  d.dw = static_cast<int>(s.dilation_w);
  d.HW = d.H * d.W;
  d.PQ = d.P * d.Q;
  d.RS = d.R * d.S;
  d.CRS = d.C * d.RS;
  d.KRS = d.K * d.RS;
  d.CHW = chw;
  d.KPQ = kpq;
  return d;
}

// float32 uses 128-row tiles when there are more than 64 rows; float64 keeps 64 (registers).
template <class T, class Problem>
void launch(const Problem& prob, int64_t splits, cudaStream_t stream, const char* op) {
  if (prob.rows == 0 || prob.cols == 0 || splits == 0) return;
  const bool wide = std::is_same_v<T, float> && prob.rows > 64;
  const int64_t bm = wide ? 128 : 64;
  const int64_t grid_x = (prob.cols + kBN - 1) / kBN, grid_y = (prob.rows + bm - 1) / bm;
  EMBER_CHECK(grid_x <= INT_MAX && grid_y <= kMaxGridYZ && splits <= kMaxGridYZ, op,
              " (CUDA): the problem is too large for one launch (", prob.rows, " x ", prob.cols, ")");
  dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y), static_cast<unsigned>(splits));
  if constexpr (std::is_same_v<T, float>) {
    if (wide) {
      EMBER_LAUNCH(grid, kThreads, 0, stream, implicit_gemm_kernel<T, 128, Problem>)(prob);
    } else {
      EMBER_LAUNCH(grid, kThreads, 0, stream, implicit_gemm_kernel<T, 64, Problem>)(prob);
    }
  } else {
    EMBER_LAUNCH(grid, kThreads, 0, stream, implicit_gemm_kernel<T, 64, Problem>)(prob);
  }
  EMBER_CUDA_LAUNCH_CHECK(op);
}

// How conv2d_backward_weight splits the batch: enough grid slices to fill the GPU (about 512
// blocks), whole images per slice. Independent of the dtype and device, so the workspace size
// query and the call agree.
struct WeightSplit {
  int64_t splits, images_per_split;
};

WeightSplit weight_split(const Conv2dShape& s) {
  if (s.batch <= 0) return {1, 1};
  const int64_t crs = s.group_in() * s.kernel_h * s.kernel_w;
  const int64_t blocks = s.groups * ((s.group_out() + 63) / 64) * ((crs + kBN - 1) / kBN);
  int64_t want = std::max<int64_t>(1, (512 + blocks - 1) / blocks);
  want = std::min({want, s.batch, std::max<int64_t>(1, kMaxGridYZ / s.groups)});
  const int64_t per = (s.batch + want - 1) / want;
  return {(s.batch + per - 1) / per, per};
}

unsigned blocks_for(int64_t n) { return detail::grid_for(n, 256, 65535); }

}  // namespace

template <class T>
void conv2d_forward(const T* x, const T* w, const T* bias_or_null, T* y, const Conv2dShape& s,
                    cudaStream_t stream) {
  if (s.depthwise()) {
    conv2d_depthwise_forward<T>(x, w, bias_or_null, y, s, stream);
    return;
  }
  ForwardProblem<T> p{};
  p.x = p.x_all = x, p.w = p.w_all = w, p.bias = p.bias_all = bias_or_null, p.y = p.y_all = y;
  p.d = dims_of(s, "conv2d");
  p.crs = digits_of_step(p.d.R, p.d.S);
  p.rows = p.d.K;
  p.cols = static_cast<int64_t>(p.d.N) * p.d.PQ;
  launch<T>(p, p.d.G, stream, "conv2d");
}

template <class T>
void conv2d_backward_input(const T* dy, const T* w, T* dx, const Conv2dShape& s, cudaStream_t stream) {
  if (s.depthwise()) {
    conv2d_depthwise_backward_input<T>(dy, w, dx, s, stream);
    return;
  }
  BackwardInputProblem<T> p{};
  p.dy = p.dy_all = dy, p.w = p.w_all = w, p.dx = p.dx_all = dx;
  p.d = dims_of(s, "conv2d backward (input)");
  p.krs = digits_of_step(p.d.R, p.d.S);
  p.k_rs = digits_of_step(1, p.d.RS);
  p.rows = p.d.C;
  p.cols = static_cast<int64_t>(p.d.N) * p.d.HW;
  launch<T>(p, p.d.G, stream, "conv2d backward (input)");
}

int64_t conv2d_backward_weight_workspace(const Conv2dShape& s) {
  if (s.depthwise()) return 0;
  WeightSplit split = weight_split(s);
  if (split.splits <= 1) return 0;
  return split.splits * s.out_channels * s.group_in() * s.kernel_h * s.kernel_w;
}

template <class T>
void conv2d_backward_weight(const T* dy, const T* x, T* dw, T* dbias_or_null, const Conv2dShape& s,
                            T* workspace, cudaStream_t stream) {
  constexpr const char* op = "conv2d backward (weight)";
  BackwardWeightProblem<T> p{};
  p.dy = p.dy_all = dy, p.x = p.x_all = x;
  p.d = dims_of(s, op);
  if (s.depthwise()) {
    conv2d_depthwise_backward_weight<T>(dy, x, dw, s, stream);
    if (dbias_or_null != nullptr && s.out_channels > 0) {
      EMBER_LAUNCH(static_cast<unsigned>(s.out_channels), kThreads, 0, stream, bias_grad_kernel<T>)(dy, p.d,
                                                                                                  dbias_or_null);
      EMBER_CUDA_LAUNCH_CHECK("conv2d backward (bias)");
    }
    return;
  }
  p.npq = digits_of_step(p.d.P, p.d.Q);
  p.n_pq = digits_of_step(1, p.d.PQ);
  p.rows = p.d.K;
  p.cols = p.d.CRS;
  WeightSplit split = weight_split(s);
  p.images_per_split = static_cast<int>(split.images_per_split);
  p.splits = static_cast<int>(split.splits);
  const bool partial = split.splits > 1;
  EMBER_CHECK(!partial || workspace != nullptr, op, " (CUDA): needs a workspace of ",
              cuda::conv2d_backward_weight_workspace(s), " elements, got none");
  p.out = partial ? workspace : dw;
  launch<T>(p, split.splits * p.d.G, stream, op);
  if (partial && p.rows * p.cols > 0) {
    const int64_t n = p.d.G * p.rows * p.cols;
    EMBER_LAUNCH(blocks_for(n), 256, 0, stream, sum_splits_kernel<T>)(workspace, split.splits, n, dw);
    EMBER_CUDA_LAUNCH_CHECK(op);
  }
  if (dbias_or_null != nullptr && p.d.K > 0) {
    EMBER_LAUNCH(static_cast<unsigned>(s.out_channels), kThreads, 0, stream, bias_grad_kernel<T>)(dy, p.d, dbias_or_null);
    EMBER_CUDA_LAUNCH_CHECK("conv2d backward (bias)");
  }
}

template void conv2d_forward<float>(const float*, const float*, const float*, float*, const Conv2dShape&,
                                    cudaStream_t);
template void conv2d_forward<double>(const double*, const double*, const double*, double*,
                                     const Conv2dShape&, cudaStream_t);
template void conv2d_backward_input<float>(const float*, const float*, float*, const Conv2dShape&, cudaStream_t);
template void conv2d_backward_input<double>(const double*, const double*, double*, const Conv2dShape&,
                                            cudaStream_t);
template void conv2d_backward_weight<float>(const float*, const float*, float*, float*, const Conv2dShape&,
                                            float*, cudaStream_t);
template void conv2d_backward_weight<double>(const double*, const double*, double*, double*,
                                             const Conv2dShape&, double*, cudaStream_t);

}  // namespace ember::kernels::cuda
