// sum and max / min on the CPU, as one strided walk over kept dims, then reduced dims innermost.
#include "ember/kernels/cpu/reduce.h"

#include <algorithm>
#include <type_traits>

#include "ember/common/error.h"
#include "ember/kernels/cpu/elementwise.h"

namespace ember::kernels::cpu {

namespace {

template <class T>
using SumOut = std::conditional_t<std::is_floating_point_v<T>, T, int64_t>;

// out (zeroed) += in over the kept dims then the reduced dims (output stride 0), so each innermost
// run over a reduced dim accumulates in a wide register type.
template <class I, class O>
void run_sum(O* out, const I* in, const ReduceLoop& reduce) {
  using Acc = std::conditional_t<std::is_floating_point_v<O>, double, int64_t>;
  std::fill(out, out + numel_of(reduce.kept.sizes), O(0));
  StridedLoop<2> loop;
  loop.sizes = reduce.kept.sizes;
  loop.strides[0] = contiguous_strides(reduce.kept.sizes);
  loop.strides[1] = reduce.kept.strides[0];
  loop.sizes.insert(loop.sizes.end(), reduce.reduced.sizes.begin(), reduce.reduced.sizes.end());
  loop.strides[0].resize(loop.sizes.size(), 0);
  loop.strides[1].insert(loop.strides[1].end(), reduce.reduced.strides[0].begin(), reduce.reduced.strides[0].end());
  for_each_strided(loop, [&](const auto& off, int64_t n, const auto& step) {
    if (step[0] == 0) {
      Acc acc = 0;
      for (int64_t k = 0; k < n; ++k) acc += static_cast<Acc>(in[off[1] + k * step[1]]);
      out[off[0]] = static_cast<O>(static_cast<Acc>(out[off[0]]) + acc);
    } else {
      for (int64_t k = 0; k < n; ++k) out[off[0] + k * step[0]] += static_cast<O>(in[off[1] + k * step[1]]);
    }
  });
}

template <class T, bool take_max>
inline bool better(T x, T best) {
  if constexpr (take_max) return x != x || x > best;  // NaN wins
  else return x != x || x < best;
}

// values / indices over the kept dims; each output scans the reduced range in row-major order and
// stops at the first NaN.
template <class T, bool take_max>
void run_extremum(T* values, int64_t* indices, const T* in, const ReduceLoop& reduce) {
  const StridedLoop<1> reduced = coalesce(reduce.reduced);
  const size_t rdim = reduced.sizes.size();
  const int64_t length = rdim == 0 ? 1 : reduced.sizes[rdim - 1];
  const int64_t step_in = rdim == 0 ? 0 : reduced.strides[0][rdim - 1];
  const int64_t runs = rdim <= 1 ? 1 : numel_of(reduced.sizes) / length;
  StridedLoop<2> loop{reduce.kept.sizes, {contiguous_strides(reduce.kept.sizes), reduce.kept.strides[0]}};
  std::vector<int64_t> counter(rdim, 0);
  for_each_strided(loop, [&](const auto& off, int64_t n, const auto& step) {
    for (int64_t k = 0; k < n; ++k) {
      const T* base = in + off[1] + k * step[1];
      T best = base[0];
      int64_t best_at = 0;
      // Runs of the innermost reduced dim; outer reduced dims (rare) are walked by a counter.
      std::fill(counter.begin(), counter.end(), 0);
      int64_t run_offset = 0;
      for (int64_t r = 0; r < runs && best == best; ++r) {
        const T* row = base + run_offset;
        for (int64_t j = r == 0 ? 1 : 0; j < length && best == best; ++j) {
          T x = row[j * step_in];
          if (better<T, take_max>(x, best)) {
            best = x;
            best_at = r * length + j;
          }
        }
        for (size_t d = rdim > 1 ? rdim - 1 : 0; d-- > 0;) {  // next run: advance the outer reduced dims
          run_offset += reduced.strides[0][d];
          if (++counter[d] < reduced.sizes[d]) break;
          run_offset -= reduced.strides[0][d] * reduced.sizes[d];
          counter[d] = 0;
        }
      }
      values[off[0] + k * step[0]] = best;
      indices[off[0] + k * step[0]] = best_at;
    }
  });
}

}  // namespace

void sum(void* out, int out_dtype, const void* in, int in_dtype, const ReduceLoop& loop) {
  dispatch_dtype(in_dtype, "sum", [&](auto tag) {
    using T = decltype(tag);
    const int expected = std::is_floating_point_v<T> ? in_dtype : kDTypeInt64;
    EMBER_CHECK(out_dtype == expected, "sum: a sum of dtype code ", in_dtype, " is written as dtype code ",
                expected, ", got ", out_dtype);
    run_sum<T, SumOut<T>>(static_cast<SumOut<T>*>(out), static_cast<const T*>(in), loop);
  });
}

void extremum(bool take_max, void* values, int64_t* indices, const void* in, int dtype, const ReduceLoop& loop) {
  const char* name = take_max ? "max" : "min";
  EMBER_CHECK(numel_of(loop.reduced.sizes) > 0, name, ": cannot reduce over 0 elements");
  dispatch_dtype(dtype, name, [&](auto tag) {
    using T = decltype(tag);
    if (take_max) run_extremum<T, true>(static_cast<T*>(values), indices, static_cast<const T*>(in), loop);
    else run_extremum<T, false>(static_cast<T*>(values), indices, static_cast<const T*>(in), loop);
  });
}

}  // namespace ember::kernels::cpu
