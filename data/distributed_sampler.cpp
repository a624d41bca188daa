#include "ember/data/distributed_sampler.h"

#include <algorithm>

#include "ember/common/error.h"

namespace ember::data {

std::vector<std::vector<int64_t>> shard_batches(const std::vector<std::vector<int64_t>>& global_batches,
                                                const DistributedSampler& sampler) {
  EMBER_CHECK(sampler.num_replicas >= 1 && sampler.rank >= 0 && sampler.rank < sampler.num_replicas,
              "DistributedSampler: rank ", sampler.rank, " is out of range for ", sampler.num_replicas, " replicas");
  std::vector<std::vector<int64_t>> out;
  for (const auto& batch : global_batches) {
    int64_t n = static_cast<int64_t>(batch.size());
    if (n < sampler.num_replicas) continue;  // only ever the last one: see DistributedSampler
    auto [begin, end] = shard_range(n, sampler.rank, sampler.num_replicas);
    out.emplace_back(batch.begin() + begin, batch.begin() + end);
  }
  return out;
}

}  // namespace ember::data
