#include "engine/spec/model_drafter.h"

#include <algorithm>

#include "core/check.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "engine/spec/draft_rounds.h"
#include "model/requantized_model_file.h"

namespace strata {

namespace {

bool same_geometry(const KvGeometry& a, const KvGeometry& b) {
  return a.n_layer == b.n_layer && a.n_head_kv == b.n_head_kv && a.head_dim == b.head_dim &&
         a.v_dim() == b.v_dim() && a.v_in_k == b.v_in_k && a.block_size == b.block_size && a.type == b.type &&
         a.staging_slots == b.staging_slots;
}

}  // namespace

void check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft, const std::string& draft_name) {
  if (target.n_vocab() != draft.n_vocab())
    STRATA_THROW("draft model ", draft_name, " has ", draft.n_vocab(), " tokens but the target has ",
                 target.n_vocab(), ": speculative decoding needs the same vocabulary");
  for (int32_t id = 0; id < target.n_vocab(); ++id)
    if (target.token_to_piece(id, true) != draft.token_to_piece(id, true))
      STRATA_THROW("draft model ", draft_name, " has a different vocabulary (token ", id,
                   " differs): speculative decoding needs the same vocabulary");
  if (target.bos() != draft.bos() || target.eos() != draft.eos())
    STRATA_THROW("draft model ", draft_name, " has different BOS/EOS tokens than the target");
}

ModelDrafter::ModelDrafter(const DraftMethodSpec& method, Model& target, int32_t block_size,
                           const KvCacheType& kv_type)
    : method_(method) {
  Backend& backend = target.backend();
  if (method.method == DraftMethod::SelfQuant) {
    const auto type = tensor_type_from_name(method.arg);
    if (!type) STRATA_THROW("self-draft: unknown weight type '", method.arg, "'");
    ThreadPool pool(backend.n_threads());
    // Shares the target's unchanged tensors: the target outlives its drafters.
    model_ = Model::load(requantize_model_file(target.file(), *type, &pool), backend);
  } else {
    STRATA_CHECK(method.method == DraftMethod::DraftModel);
    model_ = Model::load(method.arg, backend);
    check_same_vocabulary(target.tokenizer(), model_->tokenizer(), method.arg);
  }
  geometry_ = model_->kv_geometry(kv_type, block_size);
  shares_kv_ = method.method == DraftMethod::SelfQuant && !geometry_.staged() &&
               same_geometry(geometry_, target.kv_geometry(kv_type, block_size));
  relative_cost_ = static_cast<double>(model_->weight_bytes()) /
                   static_cast<double>(std::max<size_t>(1, target.weight_bytes()));
  log_info("speculative drafter ", method.name(), ": ", model_->config().summary(), " (",
           model_->weight_bytes() >> 20, " MiB of weights, ", static_cast<int>(relative_cost_ * 100.0 + 0.5),
           "% of the target's)", shares_kv_ ? ", over the target's KV cache" : "");
}

ModelDrafter::~ModelDrafter() = default;

void ModelDrafter::allocate_kv(int32_t n_blocks, KvStorage& target_kv) {
  if (shares_kv_)
    executor_ = std::make_unique<SharedKvExecutor>(*model_, target_kv);
  else
    executor_ = std::make_unique<ModelExecutor>(*model_, geometry_, n_blocks);
}

void ModelDrafter::copy_blocks(const std::vector<BlockCopy>& copies) {
  if (!copies.empty() && !shares_kv_) executor_->execute(copies, ForwardBatch{});
}

int64_t ModelDrafter::lag(uint64_t seq_id, const std::vector<int32_t>& tokens) const {
  if (shares_kv_ || tokens.empty()) return 0;
  const auto it = fed_.find(seq_id);
  const int64_t valid =
      it == fed_.end()
          ? 0
          : std::mismatch(it->second.begin(), it->second.end(), tokens.begin(), tokens.end()).first -
                it->second.begin();
  return std::max<int64_t>(0, static_cast<int64_t>(tokens.size()) - 1 - valid);
}

std::vector<int64_t> ModelDrafter::own_kv_starts(std::span<DraftSlot* const> slots) {
  std::vector<int64_t> start(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    const std::vector<int32_t>& t = *slots[i]->tokens;
    std::vector<int32_t>& fed = fed_[slots[i]->seq_id];
    const size_t common =
        static_cast<size_t>(std::mismatch(fed.begin(), fed.end(), t.begin(), t.end()).first - fed.begin());
    fed.resize(std::min(common, t.size() - 1));  // the last token is always fed: its row drafts
    start[i] = static_cast<int64_t>(fed.size());
  }
  return start;
}

void ModelDrafter::record_fed(std::span<DraftSlot* const> slots, const std::vector<int64_t>& start,
                              const std::vector<int64_t>& n_fed) {
  for (size_t i = 0; i < slots.size(); ++i) {
    const DraftSlot& s = *slots[i];
    std::vector<int32_t>& fed = fed_[s.seq_id];
    for (int64_t j = 0; j < n_fed[i]; ++j) {
      const int64_t pos = start[i] + j;
      const int64_t n_tok = static_cast<int64_t>(s.tokens->size());
      fed.push_back(pos < n_tok ? (*s.tokens)[static_cast<size_t>(pos)]
                                : s.draft[static_cast<size_t>(pos - n_tok)]);
    }
  }
}

void ModelDrafter::draft(std::span<DraftSlot* const> slots) {
  STRATA_CHECK(executor_, "draft KV storage not allocated");
  std::vector<int64_t> start;
  if (shares_kv_) {
    // The target's K/V covers every accepted token but the last one.
    for (DraftSlot* s : slots) start.push_back(static_cast<int64_t>(s->tokens->size()) - 1);
  } else {
    start = own_kv_starts(slots);
  }
  DraftRoundsInput in;
  in.executor = executor_.get();
  in.n_vocab = static_cast<int32_t>(model_->config().n_vocab);
  in.timing = &timing_;
  const std::vector<int64_t> n_fed = run_draft_rounds(in, slots, start);
  if (!shares_kv_) record_fed(slots, start, n_fed);
}

}  // namespace strata
