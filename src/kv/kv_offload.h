// Offloading of prefix-cache blocks to the tiers below the pool (kv_tier.h): the glue between
// the block pool, the KV storage that holds the blocks' bytes, and the host and disk tiers.
//
//   demote:  the pool evicts a cached block -> its bytes go to the host tier (RAM), whose own
//            LRU overflow goes to the disk tier;
//   persist: a block is published -> with a disk tier, it is also written through to disk (by
//            the tier's writer thread), so a restarted server finds it;
//   restore: a prefix lookup misses the pool -> the block is copied from host or disk into a
//            fresh pool block, which is then published like a computed one.
// Preempted sequences ride on the same path: their full blocks are published, so freeing them
// demotes them when the pool needs the room, and readmission restores them.
#pragma once

#include <memory>
#include <vector>

#include "kv/host_tier.h"
#include "kv/kv_storage.h"

namespace strata {

class KvOffload {
 public:
  // host_bytes: RAM for the host tier (0: none); disk: the disk tier or nullptr.
  KvOffload(KvStorage& storage, size_t host_bytes, std::unique_ptr<KvTier> disk);

  void demote(BlockId block, const BlockHash& hash);
  void persist(BlockId block, const BlockHash& hash);
  bool lookup(const BlockHash& hash);
  // Fills `dst` with the block's bytes from the first tier that has them and verifies.
  bool restore(const BlockHash& hash, BlockId dst);

  size_t block_bytes() const { return scratch_.size(); }
  const TierStats* host_stats() const { return host_ ? &host_->stats() : nullptr; }
  const TierStats* disk_stats() const { return disk_ ? &disk_->stats() : nullptr; }

 private:
  KvStorage& storage_;
  std::unique_ptr<KvTier> disk_;    // declared first: the host tier spills into it
  std::unique_ptr<HostTier> host_;  // null without host RAM
  std::vector<uint8_t> scratch_;    // [bytes_per_block]
};

}  // namespace strata
