#include "calib/overlay_model_file.h"

#include "core/check.h"

namespace strata::calib {
namespace {

class OverlayModelFile final : public ModelFile {
 public:
  OverlayModelFile(const ModelFile& src, const std::map<std::string, TensorOverride>& overrides) {
    format_ = src.format();
    path_ = src.path();
    metadata_ = src.metadata();
    for (const TensorInfo& t : src.tensors()) {
      TensorInfo out = t;
      const auto it = overrides.find(t.name);
      if (it != overrides.end()) {
        const size_t want = row_bytes(it->second.type, t.ne[0]) *
                            static_cast<size_t>(t.n_elements() / std::max<int64_t>(1, t.ne[0]));
        if (want != it->second.nbytes)
          STRATA_THROW("replacement of '", t.name, "' has ", it->second.nbytes, " bytes, its shape needs ",
                       want);
        out.type = it->second.type;
        out.data = it->second.data;
        out.nbytes = it->second.nbytes;
        out.file_offset = 0;
      }
      tensors_.push_back(out);
    }
  }
};

}  // namespace

std::unique_ptr<ModelFile> overlay_model_file(const ModelFile& source,
                                              const std::map<std::string, TensorOverride>& overrides) {
  return std::make_unique<OverlayModelFile>(source, overrides);
}

}  // namespace strata::calib
