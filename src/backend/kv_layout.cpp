#include "backend/kv_layout.h"

#include <array>
#include <cctype>

#include "core/check.h"
#include "quant/blocks.h"

namespace strata {
namespace {

constexpr std::array<std::string_view, kNumKvTypes> kNames = {
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "kivi2", "kivi4"};

// Bytes of one 32-element group of a TokenRows quantized type.
size_t group_bytes(KvType type) {
  switch (type) {
    case KvType::Q8_0:
      return sizeof(BlockQ8_0);
    case KvType::Q4_0:
      return sizeof(BlockQ4_0);
    case KvType::Q4_1:
      return sizeof(BlockQ4_1);
    case KvType::Q5_0:
      return sizeof(BlockQ5_0);
    case KvType::Q5_1:
      return sizeof(BlockQ5_1);
    case KvType::IQ4_NL:
      return sizeof(BlockIQ4_NL);
    case KvType::KIVI2:
      return sizeof(KvBlockKivi2);
    case KvType::KIVI4:
      return sizeof(BlockQ4_1);
    default:
      break;
  }
  STRATA_CHECK(false, "not a block-quantized KV type");
}

}  // namespace

std::string_view kv_type_name(KvType type) {
  return kNames[static_cast<size_t>(type)];
}

std::optional<KvType> kv_type_from_name(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    const std::string_view n = kNames[i];
    bool same = n.size() == name.size();
    for (size_t j = 0; same && j < n.size(); ++j)
      same = std::tolower(static_cast<unsigned char>(name[j])) == n[j];
    if (same) return static_cast<KvType>(i);
  }
  return std::nullopt;
}

std::string kv_type_names() {
  std::string out;
  for (std::string_view n : kNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

bool kv_type_is_float(KvType type) {
  return type == KvType::F32 || type == KvType::F16 || type == KvType::BF16;
}
bool kv_type_is_kivi(KvType type) {
  return type == KvType::KIVI2 || type == KvType::KIVI4;
}
int kv_kivi_bits(KvType type) {
  return type == KvType::KIVI2 ? 2 : type == KvType::KIVI4 ? 4 : 0;
}

KvTileLayout kv_tile_layout(KvType type, bool is_k, int32_t dim, int32_t block_size) {
  STRATA_CHECK(dim > 0 && block_size > 0);
  KvTileLayout t;
  t.type = type;
  t.dim = t.padded_dim = dim;
  t.block_size = block_size;
  if (kv_type_is_float(type)) {
    t.elem_bytes = type == KvType::F32 ? 4 : 2;
    t.order = is_k ? KvTileOrder::Transposed : KvTileOrder::TokenRows;
    t.row_bytes = t.elem_bytes * static_cast<size_t>(is_k ? block_size : dim);
    t.bytes = t.elem_bytes * static_cast<size_t>(dim) * block_size;
    return t;
  }
  if (is_k && kv_type_is_kivi(type)) {
    const int bits = kv_kivi_bits(type);
    if (block_size * bits % 8 != 0)
      STRATA_THROW("KV type ", kv_type_name(type), " needs a block size that is a multiple of ", 8 / bits);
    t.order = KvTileOrder::ChannelRows;
    t.row_bytes = kivi_channel_bytes(bits, block_size);
    t.bytes = t.row_bytes * static_cast<size_t>(dim);
    return t;
  }
  t.order = is_k && (type == KvType::Q8_0 || type == KvType::Q4_0) ? KvTileOrder::Interleaved
                                                                   : KvTileOrder::TokenRows;
  t.padded_dim = (dim + kQK - 1) / kQK * kQK;
  t.row_bytes = group_bytes(type) * static_cast<size_t>(t.padded_dim / kQK);
  t.bytes = t.row_bytes * static_cast<size_t>(block_size);
  return t;
}

}  // namespace strata
