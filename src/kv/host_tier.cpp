#include "kv/host_tier.h"

#include <chrono>
#include <cstring>

namespace strata {
namespace {

int64_t since_ns(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

HostTier::HostTier(size_t capacity_bytes, KvTier* next) : capacity_(capacity_bytes), next_(next) {}

bool HostTier::lookup(const BlockHash& hash) {
  return index_.count(hash) > 0;
}

bool HostTier::fetch(const BlockHash& hash, uint8_t* out, size_t n) {
  auto it = index_.find(hash);
  if (it == index_.end() || it->second->bytes.size() != n) return false;
  const auto t0 = std::chrono::steady_clock::now();
  std::memcpy(out, it->second->bytes.data(), n);
  touch(it->second);
  stats_.hits += 1;
  stats_.bytes_read += static_cast<int64_t>(n);
  stats_.read_ns += since_ns(t0);
  return true;
}

void HostTier::insert(const BlockHash& hash, const uint8_t* data, size_t n) {
  auto it = index_.find(hash);
  if (it != index_.end()) {
    touch(it->second);
    return;
  }
  if (n > capacity_) {  // no room in RAM at all: straight to the next tier
    if (next_) next_->insert(hash, data, n);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  while (bytes_ + n > capacity_) {
    Entry& victim = lru_.front();
    if (next_) next_->insert(victim.hash, victim.bytes.data(), victim.bytes.size());
    bytes_ -= victim.bytes.size();
    index_.erase(victim.hash);
    lru_.pop_front();
  }
  lru_.push_back({hash, std::vector<uint8_t>(data, data + n)});
  index_.emplace(hash, std::prev(lru_.end()));
  bytes_ += n;
  stats_.bytes_written += static_cast<int64_t>(n);
  stats_.write_ns += since_ns(t0);
  stats_.bytes_stored = static_cast<int64_t>(bytes_);
  stats_.blocks_stored = static_cast<int64_t>(lru_.size());
}

}  // namespace strata
