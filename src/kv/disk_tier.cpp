#include "kv/disk_tier.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "core/check.h"
#include "core/log.h"
#include "kv/tier_file.h"

namespace fs = std::filesystem;

namespace strata {
namespace {

int64_t since_ns(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

std::string hex(const BlockHash& h) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : h) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

// Reads at most `limit` bytes of a file; false if it cannot be opened or read.
bool read_file(const fs::path& path, size_t limit, std::vector<uint8_t>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.resize(limit);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(limit));
  out.resize(static_cast<size_t>(in.gcount()));
  return !in.bad();
}

}  // namespace

DiskTier::DiskTier(std::string dir, size_t capacity_bytes, const BlockHash& fingerprint, size_t block_bytes,
                   size_t queue_bytes)
    : dir_(std::move(dir)),
      capacity_(capacity_bytes),
      fingerprint_(fingerprint),
      block_bytes_(block_bytes),
      queue_limit_(std::max(queue_bytes, 4 * (block_bytes + kTierHeaderBytes))) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_)) STRATA_THROW("--kv-offload-dir ", dir_.string(), ": ", ec.message());
  scan();
  writer_ = std::thread([this] { writer_loop(); });
}

DiskTier::~DiskTier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  writer_.join();  // the writer empties the queue before it stops
}

fs::path DiskTier::file_of(const BlockHash& hash) const {
  return dir_ / (hex(hash) + ".kv");
}

void DiskTier::reject(const fs::path& path, const char* why) {
  std::error_code ec;
  fs::remove(path, ec);
  stats_.rejected += 1;
  log_warn("KV disk tier: deleted ", path.string(), " (", why, ")");
}

void DiskTier::scan() {
  struct Found {
    BlockHash hash;
    size_t bytes;
    fs::file_time_type mtime;
  };
  std::vector<Found> found;
  std::error_code ec;
  std::vector<uint8_t> head;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const fs::path p = e.path();
    const std::string name = p.filename().string();
    if (name.find(".kv.tmp") != std::string::npos) {  // a write that never finished
      reject(p, "unfinished write");
      continue;
    }
    if (p.extension() != ".kv" || !e.is_regular_file()) continue;  // not ours: left alone
    TierFileHeader h;
    TierFileStatus st = TierFileStatus::Truncated;
    if (read_file(p, kTierHeaderBytes, head)) st = parse_tier_header(head.data(), head.size(), h);
    if (st == TierFileStatus::Ok && h.fingerprint != fingerprint_) st = TierFileStatus::ForeignModel;
    if (st == TierFileStatus::Ok && h.payload_bytes != block_bytes_) st = TierFileStatus::WrongSize;
    if (st == TierFileStatus::Ok && name != hex(h.hash) + ".kv") st = TierFileStatus::WrongBlock;
    const size_t size = static_cast<size_t>(e.file_size(ec));
    if (st == TierFileStatus::Ok && size != kTierHeaderBytes + block_bytes_) st = TierFileStatus::Truncated;
    if (st != TierFileStatus::Ok) {
      reject(p, tier_file_status_name(st));
      continue;
    }
    found.push_back({h.hash, size, e.last_write_time(ec)});
  }
  // Oldest first, so the least recently written files are evicted first.
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) { return a.mtime < b.mtime; });
  std::lock_guard<std::mutex> lock(mu_);
  for (const Found& f : found) index_file(f.hash, f.bytes);
  evict_over_capacity();
  if (!files_.empty()) log_info("KV disk tier: ", files_.size(), " blocks reused from ", dir_.string());
}

void DiskTier::index_file(const BlockHash& hash, size_t bytes) {
  if (files_.count(hash)) return;
  lru_.push_back(hash);
  files_.emplace(hash, File{std::prev(lru_.end()), bytes});
  file_bytes_ += bytes;
  stats_.bytes_stored = static_cast<int64_t>(file_bytes_);
  stats_.blocks_stored = static_cast<int64_t>(files_.size());
}

void DiskTier::forget(const BlockHash& hash) {
  auto it = files_.find(hash);
  if (it == files_.end()) return;
  file_bytes_ -= it->second.bytes;
  lru_.erase(it->second.lru);
  files_.erase(it);
  stats_.bytes_stored = static_cast<int64_t>(file_bytes_);
  stats_.blocks_stored = static_cast<int64_t>(files_.size());
}

void DiskTier::evict_over_capacity() {
  while (file_bytes_ > capacity_ && !lru_.empty()) {
    const BlockHash victim = lru_.front();
    std::error_code ec;
    fs::remove(file_of(victim), ec);
    forget(victim);
  }
}

size_t DiskTier::n_files() const {
  std::lock_guard<std::mutex> lock(mu_);
  return files_.size();
}

bool DiskTier::lookup(const BlockHash& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  return files_.count(hash) > 0 || pending_.count(hash) > 0;
}

bool DiskTier::fetch(const BlockHash& hash, uint8_t* out, size_t n) {
  if (n != block_bytes_) return false;
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto q = pending_.find(hash); q != pending_.end()) {  // not written yet: served from the queue
      std::memcpy(out, q->second->bytes.data(), n);
      stats_.hits += 1;
      stats_.bytes_read += static_cast<int64_t>(n);
      return true;
    }
    auto it = files_.find(hash);
    if (it == files_.end()) return false;
    lru_.splice(lru_.end(), lru_, it->second.lru);
  }
  const fs::path path = file_of(hash);
  std::vector<uint8_t> data;
  // One byte more than a valid file, so a file that grew is told from a valid one.
  const bool opened = read_file(path, kTierHeaderBytes + n + 1, data);
  const TierFileStatus st =
      opened ? verify_tier_file(data.data(), data.size(), fingerprint_, hash, n) : TierFileStatus::Truncated;
  if (st != TierFileStatus::Ok) {
    std::lock_guard<std::mutex> lock(mu_);
    forget(hash);
    if (!opened) return false;  // removed behind our back (another process evicted it): a miss
    if (!read_error_logged_) log_error("KV disk tier: ", path.string(), ": ", tier_file_status_name(st));
    read_error_logged_ = true;
    std::error_code ec;
    fs::remove(path, ec);
    stats_.rejected += 1;
    return false;
  }
  std::memcpy(out, data.data() + kTierHeaderBytes, n);
  stats_.hits += 1;
  stats_.bytes_read += static_cast<int64_t>(n);
  stats_.read_ns += since_ns(t0);
  return true;
}

void DiskTier::insert(const BlockHash& hash, const uint8_t* data, size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = files_.find(hash);
  if (it != files_.end()) {  // held already: only marked recently used
    lru_.splice(lru_.end(), lru_, it->second.lru);
    return;
  }
  if (pending_.count(hash) || n != block_bytes_) return;
  if (queued_bytes_ + n > queue_limit_) {  // the disk is behind: the engine does not wait for it
    stats_.dropped += 1;
    return;
  }
  queue_.push_back({hash, std::vector<uint8_t>(data, data + n)});
  pending_.emplace(hash, &queue_.back());
  queued_bytes_ += n;
  cv_.notify_all();
}

void DiskTier::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

void DiskTier::writer_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stop_ and nothing left to write
    // A reference stays valid unlocked: only this thread pops, and push_back on a deque does
    // not move its elements.
    const Pending& p = queue_.front();
    writing_ = true;
    lock.unlock();
    write_one(p);
    lock.lock();
    // Popped only now, so lookup()/fetch() find the block until its file is indexed.
    queued_bytes_ -= p.bytes.size();
    pending_.erase(p.hash);
    queue_.pop_front();
    writing_ = false;
    cv_.notify_all();
  }
}

void DiskTier::write_one(const Pending& p) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<uint8_t> file = encode_tier_file(fingerprint_, p.hash, p.bytes.data(), p.bytes.size());
  const fs::path final_path = file_of(p.hash);
  fs::path tmp = final_path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(tmp_counter_++);
  bool ok = false;
  if (FILE* f = std::fopen(tmp.c_str(), "wb")) {
    ok = std::fwrite(file.data(), 1, file.size(), f) == file.size();
    ok = (std::fclose(f) == 0) && ok;
  }
  std::error_code ec;
  if (ok) {
    fs::rename(tmp, final_path, ec);
    ok = !ec;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!ok) {
    fs::remove(tmp, ec);
    stats_.dropped += 1;
    if (!write_error_logged_) log_error("KV disk tier: cannot write ", final_path.string(), " (disk full?)");
    write_error_logged_ = true;
    return;
  }
  index_file(p.hash, file.size());
  evict_over_capacity();
  stats_.bytes_written += static_cast<int64_t>(p.bytes.size());
  stats_.write_ns += since_ns(t0);
}

}  // namespace strata
