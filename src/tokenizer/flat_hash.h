// Small open-addressing hash tables for the tokenizers' hot lookups (token text -> id, merge
// pairs, character pairs): flat arrays, linear probing, no per-entry allocation. Faster than
// std::unordered_map here because every character of the input costs a few lookups.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace strata {

inline uint64_t mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ull;
  h ^= h >> 33;
  return h;
}

inline uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t chunk;
    std::memcpy(&chunk, s.data() + i, 8);
    h = (h ^ chunk) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  if (i < s.size()) {
    uint64_t chunk = 0;
    std::memcpy(&chunk, s.data() + i, s.size() - i);
    h = (h ^ chunk) * 0x94D049BB133111EBull;
  }
  return mix64(h);
}

inline size_t table_capacity(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap <<= 1;
  return cap;
}

// uint64 key -> V. insert() keeps the first value of a key.
template <typename V>
class FlatU64Map {
 public:
  void reserve(size_t n) {
    keys_.assign(table_capacity(n), 0);
    values_.assign(keys_.size(), V{});
    used_.assign(keys_.size(), 0);
    mask_ = keys_.size() - 1;
  }
  void insert(uint64_t key, const V& value) {
    if (keys_.empty() || 2 * (size_ + 1) > keys_.size()) grow();
    for (size_t i = mix64(key) & mask_;; i = (i + 1) & mask_) {
      if (!used_[i]) {
        used_[i] = 1;
        keys_[i] = key;
        values_[i] = value;
        ++size_;
        return;
      }
      if (keys_[i] == key) return;
    }
  }
  const V* find(uint64_t key) const {
    if (keys_.empty()) return nullptr;
    for (size_t i = mix64(key) & mask_; used_[i]; i = (i + 1) & mask_)
      if (keys_[i] == key) return &values_[i];
    return nullptr;
  }
  size_t size() const { return size_; }

 private:
  void grow() {
    FlatU64Map bigger;
    bigger.reserve(keys_.empty() ? 8 : keys_.size());
    for (size_t i = 0; i < keys_.size(); ++i)
      if (used_[i]) bigger.insert(keys_[i], values_[i]);
    *this = std::move(bigger);
  }

  std::vector<uint64_t> keys_;
  std::vector<V> values_;
  std::vector<uint8_t> used_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// Text -> int32 id over strings owned elsewhere (they must outlive the index). insert() lets a
// later id of the same text replace the earlier one.
class StringIndex {
 public:
  void build(const std::vector<std::string_view>& texts) {
    slots_.assign(table_capacity(texts.size()), Slot{0, -1});
    texts_ = texts;
    mask_ = slots_.size() - 1;
    for (size_t id = 0; id < texts.size(); ++id) {
      if (texts[id].empty()) continue;
      const uint64_t h = hash_bytes(texts[id]);
      for (size_t i = h & mask_;; i = (i + 1) & mask_) {
        Slot& s = slots_[i];
        if (s.id < 0 || (s.hash == static_cast<uint32_t>(h) && texts_[s.id] == texts[id])) {
          s = {static_cast<uint32_t>(h), static_cast<int32_t>(id)};
          break;
        }
      }
    }
  }
  int32_t find(std::string_view text) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash_bytes(text);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.hash == static_cast<uint32_t>(h) && texts_[s.id] == text) return s.id;
    }
  }

 private:
  struct Slot {
    uint32_t hash;
    int32_t id;  // -1: empty
  };
  std::vector<Slot> slots_;
  std::vector<std::string_view> texts_;
  size_t mask_ = 0;
};

}  // namespace strata
