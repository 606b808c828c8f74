#include "kv/kv_offload.h"

#include "core/check.h"

namespace strata {

KvOffload::KvOffload(KvStorage& storage, size_t host_bytes, std::unique_ptr<KvTier> disk)
    : storage_(storage), disk_(std::move(disk)), scratch_(storage.geometry().bytes_per_block()) {
  // Staged (KIVI) blocks keep part of their state outside the block tiles.
  STRATA_CHECK(!storage.geometry().staged(), "KV offloading does not support KIVI cache types");
  if (host_bytes > 0) host_ = std::make_unique<HostTier>(host_bytes, disk_.get());
}

void KvOffload::demote(BlockId block, const BlockHash& hash) {
  KvTier* top = host_ ? static_cast<KvTier*>(host_.get()) : disk_.get();
  if (!top) return;
  if (top->lookup(hash)) {  // already there (restored from it earlier): just mark it used
    top->insert(hash, nullptr, 0);
    return;
  }
  storage_.read_block(block, scratch_.data());
  top->insert(hash, scratch_.data(), scratch_.size());
}

void KvOffload::persist(BlockId block, const BlockHash& hash) {
  if (!disk_ || disk_->lookup(hash)) return;
  storage_.read_block(block, scratch_.data());
  disk_->insert(hash, scratch_.data(), scratch_.size());
}

bool KvOffload::lookup(const BlockHash& hash) {
  return (host_ && host_->lookup(hash)) || (disk_ && disk_->lookup(hash));
}

bool KvOffload::restore(const BlockHash& hash, BlockId dst) {
  for (KvTier* t : {static_cast<KvTier*>(host_.get()), disk_.get()}) {
    if (!t || !t->fetch(hash, scratch_.data(), scratch_.size())) continue;
    storage_.write_block(dst, scratch_.data());
    return true;
  }
  return false;
}

}  // namespace strata
