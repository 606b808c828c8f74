#include "engine/spec/suffix_drafter.h"

namespace strata {

SuffixDrafter::SuffixDrafter(size_t max_shared_nodes) : max_shared_nodes_(max_shared_nodes) {}

void SuffixDrafter::draft(std::span<DraftSlot* const> slots) {
  for (DraftSlot* s : slots) {
    const std::vector<int32_t>& t = *s->tokens;
    Local& local = local_[s->seq_id];
    if (local.n_added > t.size()) local = Local();  // the sequence was rewound
    local.tree.add(t, local.n_added);
    local.n_added = t.size();
    // The context's own last windows are paths without a successor yet: only a suffix that also
    // occurred earlier has a continuation to follow.
    std::vector<int32_t> mine, theirs;
    const int32_t len_mine = local.tree.propose(t, s->max_draft, mine);
    int32_t len_theirs = 0;
    if (s->partition) {
      const auto it = shared_.find(*s->partition);
      if (it != shared_.end()) len_theirs = it->second.tree.propose(t, s->max_draft, theirs);
    }
    s->draft = len_theirs > len_mine ? std::move(theirs) : std::move(mine);
  }
}

void SuffixDrafter::observe_finished(const std::string& partition, const std::vector<int32_t>& tokens,
                                     int64_t n_prompt) {
  if (static_cast<int64_t>(tokens.size()) <= n_prompt) return;
  std::vector<int32_t> output(tokens.begin() + n_prompt, tokens.end());
  Shared& sh = shared_[partition];
  sh.tree.add(output);
  sh.recent.push_back(std::move(output));
  evict_until_fits();
}

size_t SuffixDrafter::shared_nodes() const {
  size_t n = 0;
  for (const auto& [p, sh] : shared_) n += sh.tree.n_nodes();
  return n;
}

void SuffixDrafter::evict_until_fits() {
  // The largest partition drops its oldest outputs (rebuilt from the rest) until all fit.
  while (shared_nodes() > max_shared_nodes_) {
    auto largest = shared_.begin();
    for (auto it = shared_.begin(); it != shared_.end(); ++it)
      if (it->second.tree.n_nodes() > largest->second.tree.n_nodes()) largest = it;
    Shared& sh = largest->second;
    const size_t drop = std::max<size_t>(1, sh.recent.size() / 4);
    for (size_t i = 0; i < drop && !sh.recent.empty(); ++i) sh.recent.pop_front();
    if (sh.recent.empty()) {
      shared_.erase(largest);
      continue;
    }
    sh.tree.clear();
    for (const auto& out : sh.recent) sh.tree.add(out);
  }
}

}  // namespace strata
