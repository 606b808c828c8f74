#include "model/requantized_model_file.h"

#include <vector>

#include "core/check.h"
#include "quant/quantize.h"

namespace strata {
namespace {

class RequantizedModelFile final : public ModelFile {
 public:
  RequantizedModelFile(const ModelFile& src, TensorType type, ThreadPool* pool) {
    format_ = src.format();
    path_ = src.path() + " (as " + std::string(type_name(type)) + ")";
    metadata_ = src.metadata();
    const int64_t block = type_traits(type).block_size;
    std::vector<float> rows;
    for (const TensorInfo& t : src.tensors()) {
      TensorInfo out = t;
      const bool matrix = t.n_dims == 2 && t.ne[1] > 1 && t.name.size() > 7 &&
                          t.name.compare(t.name.size() - 7, 7, ".weight") == 0;
      if (matrix && t.type != type && t.ne[0] % block == 0) {
        rows.resize(static_cast<size_t>(t.n_elements()));
        const size_t in_row = row_bytes(t.type, t.ne[0]);
        for (int64_t r = 0; r < t.ne[1]; ++r)
          dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + in_row * static_cast<size_t>(r),
                         rows.data() + r * t.ne[0], t.ne[0]);
        out.type = type;
        out.nbytes = row_bytes(type, t.ne[0]) * static_cast<size_t>(t.ne[1]);
        uint8_t* buf = own_buffer(out.nbytes);
        quantize_rows(type, rows.data(), buf, t.ne[1], t.ne[0], nullptr, pool);
        out.data = buf;
      }
      tensors_.push_back(out);
    }
  }
};

}  // namespace

std::unique_ptr<ModelFile> requantize_model_file(const ModelFile& source, TensorType type, ThreadPool* pool) {
  if (!is_storage_type(type) || !type_traits(type).quantized)
    STRATA_THROW("cannot re-quantize a model to ", type_name(type), ": choose a quantized weight type");
  return std::make_unique<RequantizedModelFile>(source, type, pool);
}

}  // namespace strata
