#include "engine/kv_fingerprint.h"

#include <openssl/evp.h>

#include <algorithm>
#include <string>

#include "core/check.h"

namespace strata {
namespace {

template <typename T>
void put(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

}  // namespace

BlockHash kv_fingerprint(const Model& model, const KvGeometry& g, const KvWindowPolicy& window) {
  std::string s = "strata-kv-tier-v2";
  constexpr size_t kSample = 4096;
  for (const TensorInfo& t : model.file().tensors()) {
    put(s, static_cast<uint64_t>(t.name.size()));
    s += t.name;
    put(s, static_cast<int32_t>(t.type));
    for (int64_t d : t.ne) put(s, d);
    put(s, static_cast<uint64_t>(t.nbytes));
    if (!t.data) continue;
    const auto* p = static_cast<const char*>(t.data);
    const size_t head = std::min(kSample, t.nbytes);
    s.append(p, head);
    if (t.nbytes > head)
      s.append(p + t.nbytes - std::min(kSample, t.nbytes - head), std::min(kSample, t.nbytes - head));
  }
  put(s, static_cast<int32_t>(g.type.k));
  put(s, static_cast<int32_t>(g.type.v));
  put(s, static_cast<int32_t>(g.rotate_k()));
  for (int32_t v :
       {g.n_layer, g.n_head_kv, g.head_dim, g.v_dim(), static_cast<int32_t>(g.v_in_k), g.block_size})
    put(s, v);
  put(s, static_cast<uint64_t>(g.bytes_per_block()));
  put(s, window.sinks);
  put(s, window.window);
  const ModelLoadOptions& lo = model.load_options();
  put(s, static_cast<int32_t>(lo.w8a8 ? 1 + int{lo.w8a8->static_act} : 0));
  if (lo.w8a8)
    for (const auto& [name, absmax] : lo.w8a8->act_absmax) {
      put(s, static_cast<uint64_t>(name.size()));
      s += name;
      put(s, absmax);
    }
  if (model.config().rope_orig_ctx > 0) put(s, lo.n_ctx);
  BlockHash out;
  unsigned int len = 0;
  STRATA_CHECK(EVP_Digest(s.data(), s.size(), out.data(), &len, EVP_sha256(), nullptr) == 1 &&
               len == out.size());
  return out;
}

}  // namespace strata
