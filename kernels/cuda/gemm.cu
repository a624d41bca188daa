// Hand-written GEMM on CUDA: the float32 SGEMM (after siboehm's "How to optimize a CUDA matmul
// kernel" worklog: block tiling, 2-D register blocking, vectorised loads, double buffering), a
// simple float64 kernel.
#include "ember/kernels/cuda/gemm.h"

#include <algorithm>
#include <cstdint>

#include "ember/common/cuda_check.h"
#include "ember/kernels/cuda/launch.cuh"
#include "ember/common/error.h"

namespace ember::kernels::cuda {

namespace {

// --- float32: 128x128x8 tiles, 256 threads, 8x8 outputs per thread ----------------------------
//
// Thread (ty, tx) = (tid / 16, tid % 16) owns rows {ty*4 + 0..3, 64 + ty*4 + 0..3} and columns
// {tx*4 + 0..3, 64 + tx*4 + 0..3} of the block tile, so its shared-memory reads are four float4
// loads per k step with no bank conflicts (a warp reads 2 distinct As addresses, broadcast, and 16
// consecutive float4 of Bs). As holds the A tile transposed ([k][m]), Bs the B tile ([k][n]).
// Each row is padded by 4 floats: the transposing scalar stores then hit 32 distinct banks, and
// every row still starts 16-byte aligned for the float4 reads.
//
// Double buffering: while the block computes on tile t (buffer t % 2), each thread holds tile
// t + 1 in registers (fetched from global memory before the math, so the load latency overlaps
// it) and stores it into the other buffer afterwards; one __syncthreads per tile suffices, since
// the buffer written in iteration t was last read in iteration t - 1, before its barrier.
constexpr int kThreads = 256;
constexpr int kBM = 128, kBN = 128, kBK = 8, kPad = 4;

struct SgemmArgs {
  int64_t M, N, K;
  float alpha, beta;
  const float* A;
  int64_t lda, stride_a;
  const float* B;
  int64_t ldb, stride_b;
  float* C;
  int64_t ldc, stride_c;
  int64_t batch_offset;  // first batch index of this launch (the grid's z covers <= 65535)
  bool vec_a, vec_b, vec_c;
};

// p[0..3], with the elements at or past `left` read as 0. One 16-byte load when `vec` (p is then
// 16-byte aligned) and all four are in range.
__device__ __forceinline__ float4 load4(const float* p, int64_t left, bool vec) {
  if (vec && left >= 4) return __ldg(reinterpret_cast<const float4*>(p));
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (left > 0) v.x = __ldg(p);
  if (left > 1) v.y = __ldg(p + 1);
  if (left > 2) v.z = __ldg(p + 2);
  if (left > 3) v.w = __ldg(p + 3);
  return v;
}

// Thread `tid`'s 4 elements of each A (or B) tile: `p` points at them for the current tile and
// moves by `step` per tile. The 4 run either along k (`k_along`) or along the fixed dimension
// (rows of A, columns of B); `fixed_left` counts how many of them lie inside the matrix along
// the fixed dimension (<= 0: none), `k` is the k of the first one.
static_assert(kBM == kBN, "A and B tiles share one shared-memory row type");
struct TileLoader {
  const float* p;
  int64_t step;
  int64_t fixed_left;
  int64_t k;
  bool k_along;
};

// Not transposed A (A[m * lda + k]): row tid / 2, k (tid % 2) * 4 + 0..3, contiguous.
// Transposed A (A[k * lda + m]): k tid / 32, rows (tid % 32) * 4 + 0..3, contiguous.
// B mirrors it: not transposed (B[k * ldb + n]) is laid out like a transposed A, transposed B
// (B[n * ldb + k]) like a plain A.
__device__ __forceinline__ TileLoader make_loader(bool along_k, const float* X, int64_t ld,
                                                  int64_t fixed0, int64_t fixed_size, int tid) {
  TileLoader l;
  if (along_k) {  // X[f * ld + k]: f = fixed0 + tid / 2, k = (tid % 2) * 4
    const int64_t f = fixed0 + (tid >> 1);
    const int64_t k = (tid & 1) * 4;
    l.p = X + f * ld + k;
    l.step = kBK;
    l.fixed_left = f < fixed_size ? 4 : 0;
    l.k = k;
    l.k_along = true;
  } else {  // X[k * ld + f]: k = tid / 32, f = fixed0 + (tid % 32) * 4
    const int64_t k = tid >> 5;
    const int64_t f = fixed0 + (tid & 31) * 4;
    l.p = X + k * ld + f;
    l.step = kBK * ld;
    l.fixed_left = fixed_size - f;
    l.k = k;
    l.k_along = false;
  }
  return l;
}

// The loader's 4 elements at its current tile, zeros outside the matrix; then moves it on.
__device__ __forceinline__ float4 load_next(TileLoader& l, int64_t K, bool vec) {
  int64_t left = l.k_along ? (l.fixed_left > 0 ? K - l.k : 0) : (l.k < K ? l.fixed_left : 0);
  float4 v = load4(l.p, left, vec);
  l.p += l.step;
  l.k += kBK;
  return v;
}

// Stores a loader's 4 elements into the [k][m] (or [k][n]) shared tile.
__device__ __forceinline__ void store_tile(float (*S)[kBM + kPad], bool along_k, float4 v, int tid) {
  if (along_k) {
    const int f = tid >> 1, k = (tid & 1) * 4;
    S[k + 0][f] = v.x;
    S[k + 1][f] = v.y;
    S[k + 2][f] = v.z;
    S[k + 3][f] = v.w;
  } else {
    *reinterpret_cast<float4*>(&S[tid >> 5][(tid & 31) * 4]) = v;
  }
}

// Grid: x over 128-row tiles of C, y over 128-column tiles, z over the batch.
template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 2) sgemm_kernel(SgemmArgs g) {
  __shared__ __align__(16) float As[2][kBK][kBM + kPad];
  __shared__ __align__(16) float Bs[2][kBK][kBN + kPad];

  const int tid = threadIdx.x;
  const int tx = tid & 15, ty = tid >> 4;
  const int64_t batch = g.batch_offset + blockIdx.z;
  const float* A = g.A + batch * g.stride_a;
  const float* B = g.B + batch * g.stride_b;
  float* C = g.C + batch * g.stride_c;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kBM;
  const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kBN;

  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;
  }

  // A's elements run along k unless A is transposed; B's run along k only when B is transposed.
  constexpr bool kAAlongK = !kTransA, kBAlongK = kTransB;
  TileLoader la = make_loader(kAAlongK, A, g.lda, row0, g.M, tid);
  TileLoader lb = make_loader(kBAlongK, B, g.ldb, col0, g.N, tid);
  const int tiles = static_cast<int>((g.K + kBK - 1) / kBK);
  if (tiles > 0) {
    float4 next_a = load_next(la, g.K, g.vec_a);
    float4 next_b = load_next(lb, g.K, g.vec_b);
    store_tile(As[0], kAAlongK, next_a, tid);
    store_tile(Bs[0], kBAlongK, next_b, tid);
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
      const int cur = t & 1;
      const bool more = t + 1 < tiles;
      if (more) {  // fetch tile t + 1 now; it is stored after the math on tile t
        next_a = load_next(la, g.K, g.vec_a);
        next_b = load_next(lb, g.K, g.vec_b);
      }
#pragma unroll
      for (int kk = 0; kk < kBK; ++kk) {
        float a[8], b[8];
        float4 v = *reinterpret_cast<const float4*>(&As[cur][kk][ty * 4]);
        a[0] = v.x, a[1] = v.y, a[2] = v.z, a[3] = v.w;
        v = *reinterpret_cast<const float4*>(&As[cur][kk][64 + ty * 4]);
        a[4] = v.x, a[5] = v.y, a[6] = v.z, a[7] = v.w;
        v = *reinterpret_cast<const float4*>(&Bs[cur][kk][tx * 4]);
        b[0] = v.x, b[1] = v.y, b[2] = v.z, b[3] = v.w;
        v = *reinterpret_cast<const float4*>(&Bs[cur][kk][64 + tx * 4]);
        b[4] = v.x, b[5] = v.y, b[6] = v.z, b[7] = v.w;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
#pragma unroll
          for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
      }
      if (more) {
        store_tile(As[cur ^ 1], kAAlongK, next_a, tid);
        store_tile(Bs[cur ^ 1], kBAlongK, next_b, tid);
      }
      __syncthreads();
    }
  }

  // Epilogue: acc[i][j] is C[row0 + ty*4 + (i % 4) + 64 * (i / 4)][col0 + tx*4 + (j % 4) + 64 * (j / 4)].
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t row = row0 + ty * 4 + (i & 3) + (i >> 2) * 64;
    if (row >= g.M) continue;
    float* c_row = C + row * g.ldc;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t col = col0 + tx * 4 + h * 64;
      if (g.vec_c && col + 3 < g.N) {
        float4 out = make_float4(g.alpha * acc[i][h * 4 + 0], g.alpha * acc[i][h * 4 + 1],
                                 g.alpha * acc[i][h * 4 + 2], g.alpha * acc[i][h * 4 + 3]);
        if (g.beta != 0.f) {
          float4 old = *reinterpret_cast<const float4*>(c_row + col);
          out.x = fmaf(g.beta, old.x, out.x);
          out.y = fmaf(g.beta, old.y, out.y);
          out.z = fmaf(g.beta, old.z, out.z);
          out.w = fmaf(g.beta, old.w, out.w);
        }
        *reinterpret_cast<float4*>(c_row + col) = out;
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (col + j < g.N) {
            float out = g.alpha * acc[i][h * 4 + j];
            if (g.beta != 0.f) out = fmaf(g.beta, c_row[col + j], out);
            c_row[col + j] = out;
          }
        }
      }
    }
  }
}

// --- float64: 64x64x8 tiles, 256 threads, 4x4 outputs per thread, single buffered -------------
//
// Thread (ty, tx) owns rows ty + 16 * i and columns tx + 16 * j (i, j < 4). Loads are mapped so
// consecutive threads read consecutive addresses for either layout.
constexpr int kDT = 64, kDK = 8;

template <class T>
struct GemmArgs {
  int64_t M, N, K;
  T alpha, beta;
  const T* A;
  int64_t lda, stride_a;
  const T* B;
  int64_t ldb, stride_b;
  T* C;
  int64_t ldc, stride_c;
  int64_t batch_offset;
};

template <bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads) dgemm_kernel(GemmArgs<double> g) {
  __shared__ double As[kDK][kDT + 1];  // [k][m]
  __shared__ double Bs[kDK][kDT + 1];  // [k][n]
  const int tid = threadIdx.x;
  const int tx = tid & 15, ty = tid >> 4;
  const int64_t batch = g.batch_offset + blockIdx.z;
  const double* A = g.A + batch * g.stride_a;
  const double* B = g.B + batch * g.stride_b;
  double* C = g.C + batch * g.stride_c;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kDT;
  const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kDT;

  double acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  }

  for (int64_t k0 = 0; k0 < g.K; k0 += kDK) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {  // 512 elements of each tile, 2 per thread
      const int idx = tid + e * kThreads;
      {
        const int m = kTransA ? (idx & 63) : (idx >> 3);
        const int k = kTransA ? (idx >> 6) : (idx & 7);
        const int64_t gm = row0 + m, gk = k0 + k;
        double v = 0.0;
        if (gm < g.M && gk < g.K) v = kTransA ? A[gk * g.lda + gm] : A[gm * g.lda + gk];
        As[k][m] = v;
      }
      {
        const int n = kTransB ? (idx >> 3) : (idx & 63);
        const int k = kTransB ? (idx & 7) : (idx >> 6);
        const int64_t gn = col0 + n, gk = k0 + k;
        double v = 0.0;
        if (gn < g.N && gk < g.K) v = kTransB ? B[gn * g.ldb + gk] : B[gk * g.ldb + gn];
        Bs[k][n] = v;
      }
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kDK; ++kk) {
      double a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
      }
    }
    __syncthreads();  // the next iteration overwrites the tiles
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int64_t row = row0 + ty + 16 * i;
    if (row >= g.M) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int64_t col = col0 + tx + 16 * j;
      if (col >= g.N) continue;
      double out = g.alpha * acc[i][j];
      if (g.beta != 0.0) out = fma(g.beta, C[row * g.ldc + col], out);
      C[row * g.ldc + col] = out;
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

constexpr int64_t kMaxGridY = 65535, kMaxGridZ = 65535;

void check_sizes(int64_t M, int64_t N, int64_t K, int64_t batch, int64_t tile) {
  EMBER_CHECK(M >= 0 && N >= 0 && K >= 0 && batch >= 0, "gemm (CUDA): sizes must be non-negative, got M=", M,
              " N=", N, " K=", K, " batch=", batch);
  EMBER_CHECK((N + tile - 1) / tile <= kMaxGridY, "gemm (CUDA): N = ", N, " columns exceed the kernel's limit of ",
              kMaxGridY * tile);
}

// Calls launch(trans_a, trans_b) as a template pair.
template <class Launch>
void with_transposes(bool trans_a, bool trans_b, Launch launch) {
  if (trans_a) {
    if (trans_b) launch(std::true_type{}, std::true_type{});
    else launch(std::true_type{}, std::false_type{});
  } else {
    if (trans_b) launch(std::false_type{}, std::true_type{});
    else launch(std::false_type{}, std::false_type{});
  }
}

void launch_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb,
                 int64_t stride_b, float beta, float* C, int64_t ldc, int64_t stride_c, int64_t batch,
                 cudaStream_t stream) {
  check_sizes(M, N, K, batch, kBN);
  if (M == 0 || N == 0 || batch == 0) return;
  SgemmArgs g{};
  g.M = M, g.N = N, g.K = K, g.alpha = alpha, g.beta = beta;
  g.A = A, g.lda = lda, g.stride_a = stride_a;
  g.B = B, g.ldb = ldb, g.stride_b = stride_b;
  g.C = C, g.ldc = ldc, g.stride_c = stride_c;
  const bool one = batch == 1;
  g.vec_a = aligned16(A) && lda % 4 == 0 && (one || stride_a % 4 == 0);
  g.vec_b = aligned16(B) && ldb % 4 == 0 && (one || stride_b % 4 == 0);
  g.vec_c = aligned16(C) && ldc % 4 == 0 && (one || stride_c % 4 == 0);
  for (int64_t offset = 0; offset < batch; offset += kMaxGridZ) {
    g.batch_offset = offset;
    dim3 grid(static_cast<unsigned>((M + kBM - 1) / kBM), static_cast<unsigned>((N + kBN - 1) / kBN),
              static_cast<unsigned>(std::min(batch - offset, kMaxGridZ)));
    with_transposes(trans_a, trans_b, [&](auto ta, auto tb) {
      EMBER_LAUNCH(grid, kThreads, 0, stream, sgemm_kernel<decltype(ta)::value, decltype(tb)::value>)(g);
    });
    EMBER_CUDA_LAUNCH_CHECK("gemm (float32)");
  }
}

void launch_gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
                 const double* A, int64_t lda, int64_t stride_a, const double* B, int64_t ldb,
                 int64_t stride_b, double beta, double* C, int64_t ldc, int64_t stride_c, int64_t batch,
                 cudaStream_t stream) {
  check_sizes(M, N, K, batch, kDT);
  if (M == 0 || N == 0 || batch == 0) return;
  GemmArgs<double> g{};
  g.M = M, g.N = N, g.K = K, g.alpha = alpha, g.beta = beta;
  g.A = A, g.lda = lda, g.stride_a = stride_a;
  g.B = B, g.ldb = ldb, g.stride_b = stride_b;
  g.C = C, g.ldc = ldc, g.stride_c = stride_c;
  for (int64_t offset = 0; offset < batch; offset += kMaxGridZ) {
    g.batch_offset = offset;
    dim3 grid(static_cast<unsigned>((M + kDT - 1) / kDT), static_cast<unsigned>((N + kDT - 1) / kDT),
              static_cast<unsigned>(std::min(batch - offset, kMaxGridZ)));
    with_transposes(trans_a, trans_b, [&](auto ta, auto tb) {
      EMBER_LAUNCH(grid, kThreads, 0, stream, dgemm_kernel<decltype(ta)::value, decltype(tb)::value>)(g);
    });
    EMBER_CUDA_LAUNCH_CHECK("gemm (float64)");
  }
}

}  // namespace

template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, T beta,
                  T* C, int64_t ldc, int64_t stride_c, int64_t batch, cudaStream_t stream) {
  launch_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc,
              stride_c, batch, stream);
}

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, T beta, T* C, int64_t ldc, cudaStream_t stream) {
  gemm_batched<T>(trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, stream);
}

template void gemm_batched<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                  int64_t, const float*, int64_t, int64_t, float, float*, int64_t,
                                  int64_t, int64_t, cudaStream_t);
template void gemm_batched<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                   int64_t, const double*, int64_t, int64_t, double, double*, int64_t,
                                   int64_t, int64_t, cudaStream_t);
template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                          int64_t, float, float*, int64_t, cudaStream_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t, cudaStream_t);

}  // namespace ember::kernels::cuda
