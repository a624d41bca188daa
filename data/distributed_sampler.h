// Which part of every batch a rank of a multi-process job takes.
// defines: ember::data::DistributedSampler, shard_range
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace ember::data {

// Set DataLoaderOptions::distributed to train one model over `num_replicas` processes: every
// rank draws the same epoch order (same seed) and cuts it into the same global batches of
// batch_size, then keeps only its own rows of each one (shard_range), so that the ranks together
// see each global batch exactly once, and N ranks with batch_size B take the same steps as one
// process with batch size B. A last global batch with fewer rows than num_replicas is dropped so
// that no rank gets an empty batch.
struct DistributedSampler {
  int num_replicas = 1;  // >= 1
  int rank = 0;          // 0 <= rank < num_replicas
};

// Rows [begin, end) of a batch of `n` rows that replica `rank` of `replicas` takes: the first
// n % replicas replicas take one row more (65 over 2: 33 + 32). The split DataParallel uses too.
inline std::pair<int64_t, int64_t> shard_range(int64_t n, int rank, int replicas) {
  int64_t base = n / replicas, extra = n % replicas;
  int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

// Replica `sampler.rank`'s rows of each global batch, in order (see DistributedSampler).
std::vector<std::vector<int64_t>> shard_batches(const std::vector<std::vector<int64_t>>& global_batches,
                                                const DistributedSampler& sampler);

}  // namespace ember::data
