#include "zarrflow/pipeline/shard_index_cache.h"

namespace zarrflow {

Result<std::shared_ptr<const ShardIndex>> ShardIndexCache::find_or_load(const std::string& name,
                                                                        const Load& load) {
  std::shared_ptr<Loading> mine;
  {
    std::unique_lock lock(mu_);
    if (auto kept = lru_.find(name); kept && *kept) {
      ++hits_;
      return *kept;
    }
    if (auto it = loading_.find(name); it != loading_.end()) {
      std::shared_ptr<Loading> other = it->second;
      ++hits_;
      loaded_.wait(lock, [&] { return other->result.has_value(); });
      return *other->result;
    }
    ++misses_;
    mine = std::make_shared<Loading>();
    loading_.emplace(name, mine);
  }
  // The waiters are released whatever happens, an exception from `load` included.
  auto finish = [&](const Result<std::shared_ptr<const ShardIndex>>& result) {
    {
      std::lock_guard lock(mu_);
      mine->result = result;
      loading_.erase(name);
    }
    loaded_.notify_all();
  };
  try {
    Result<std::shared_ptr<const ShardIndex>> result = load();
    if (result.ok()) insert(name, *result, shard_index_bytes(name, **result));
    finish(result);
    return result;
  } catch (...) {
    finish(internal_error("reading the shard index of " + name + " failed with an exception"));
    throw;
  }
}

}  // namespace zarrflow
