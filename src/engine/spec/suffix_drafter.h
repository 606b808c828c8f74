// Suffix drafting: a suffix trie over the request's own prompt and output, plus a bounded
// cross-request trie of earlier outputs. The longer match of the two proposes. The
// cross-request trie is partitioned by cache salt and tenant (API key), so no tenant's text is
// ever proposed to another.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <unordered_map>

#include "engine/spec/drafter.h"
#include "engine/spec/suffix_tree.h"

namespace strata {

class SuffixDrafter final : public Drafter {
 public:
  // max_shared_nodes: node budget of all cross-request tries together.
  explicit SuffixDrafter(size_t max_shared_nodes = size_t{1} << 20);

  const DraftMethodSpec& method() const override { return method_; }
  bool uses_kv() const override { return false; }
  void draft(std::span<DraftSlot* const> slots) override;
  void release(uint64_t seq_id) override { local_.erase(seq_id); }
  void observe_finished(const std::string& partition, const std::vector<int32_t>& tokens,
                        int64_t n_prompt) override;

  size_t shared_nodes() const;

 private:
  struct Local {
    SuffixTree tree;
    size_t n_added = 0;
  };
  struct Shared {
    SuffixTree tree;
    std::deque<std::vector<int32_t>> recent;  // outputs in the trie, oldest first
  };
  void evict_until_fits();

  DraftMethodSpec method_{DraftMethod::Suffix, ""};
  size_t max_shared_nodes_;
  std::unordered_map<uint64_t, Local> local_;
  std::map<std::string, Shared> shared_;  // by partition
};

}  // namespace strata
