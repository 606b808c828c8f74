#include "kv/prefix_hash.h"

#include <openssl/evp.h>

#include "core/check.h"

namespace strata {
namespace {

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    STRATA_CHECK(ctx_ && EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) == 1, "SHA-256 unavailable");
  }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  void update(const void* data, size_t n) { STRATA_CHECK(EVP_DigestUpdate(ctx_, data, n) == 1); }
  BlockHash finish() {
    BlockHash out;
    unsigned int len = 0;
    STRATA_CHECK(EVP_DigestFinal_ex(ctx_, out.data(), &len) == 1 && len == out.size());
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace

BlockHash prefix_root_hash(const std::vector<std::string>& extra_keys) {
  Sha256 h;
  h.update("strata-prefix-v1", 16);
  for (const std::string& key : extra_keys) {
    const uint64_t len = key.size();  // length-prefixed: ("ab","c") != ("a","bc")
    h.update(&len, sizeof len);
    h.update(key.data(), key.size());
  }
  return h.finish();
}

BlockHash chain_block_hash(const BlockHash& parent, const int32_t* tokens, int32_t n_tokens) {
  Sha256 h;
  h.update(parent.data(), parent.size());
  h.update(tokens, static_cast<size_t>(n_tokens) * sizeof(int32_t));
  return h.finish();
}

}  // namespace strata
