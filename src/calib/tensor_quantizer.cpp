#include "calib/tensor_quantizer.h"

#include "calib/level_descent.h"
#include "calib/output_error.h"
#include "calib/scale_refit.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "quant/block_grid.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

InputStats unweighted(int64_t n) {
  InputStats in;
  in.n = n;
  in.msq.assign(static_cast<size_t>(n), 1.0f);
  in.mean_abs.assign(static_cast<size_t>(n), 1.0f);
  return in;
}

// The result, dequantized on the sampled rows and mapped back through the folds: [R, n_in].
std::vector<float> effective_rows(const MatrixJob& j, const void* q, const std::vector<int64_t>& rows) {
  const int64_t n = j.m.n_in;
  const size_t rb = row_bytes(j.m.type, n);
  std::vector<float> out(rows.size() * static_cast<size_t>(n));
  for (size_t k = 0; k < rows.size(); ++k) {
    float* y = out.data() + k * static_cast<size_t>(n);
    dequantize_row(j.m.type, static_cast<const uint8_t*>(q) + static_cast<size_t>(rows[k]) * rb, y, n);
    const float rd = j.row_div.empty() ? 1.0f : j.row_div[static_cast<size_t>(rows[k])];
    for (int64_t i = 0; i < n; ++i) {
      const float cs = j.col_scale.empty() ? 1.0f : j.col_scale[static_cast<size_t>(i)];
      y[i] = y[i] * rd / cs;
    }
  }
  return out;
}

double relative_error_rows(const std::vector<float>& ref, const std::vector<float>& got, int64_t R,
                           const InputStats& in, ThreadPool* pool) {
  std::vector<float> d(ref.size());
  for (size_t i = 0; i < d.size(); ++i) d[i] = got[i] - ref[i];
  const double den = quadratic_error(ref.data(), R, in, pool);
  return den > 0 ? quadratic_error(d.data(), R, in, pool) / den : 0.0;
}

}  // namespace

const char* method_name(Method m) {
  switch (m) {
    case Method::Rtn:
      return "rtn";
    case Method::Gptq:
      return "gptq";
    case Method::Awq:
      return "awq";
    case Method::AwqGptq:
      return "awq+gptq";
  }
  return "?";
}

Method parse_method(const std::string& name) {
  for (Method m : {Method::Rtn, Method::Gptq, Method::Awq, Method::AwqGptq})
    if (name == method_name(m)) return m;
  STRATA_THROW("unknown method '", name, "' (use rtn, gptq, awq or awq+gptq)");
}

MatrixReport quantize_matrix(const MatrixJob& j, const MatrixQuantOptions& o, void* out, ThreadPool* pool) {
  const WeightMatrix& m = j.m;
  const int64_t n = m.n_in;
  MatrixReport rep;
  const bool quantized_type = type_traits(m.type).quantized;
  const bool have_gram = j.in && j.in->has_gram();
  if (quantized_type && uses_gptq(o.method) && have_gram && has_block_grid(m.type)) {
    const double damp = gptq_quantize(m.type, m.w.data(), m.n_out, n, j.in->gram.data(), o.gptq, out, pool);
    rep.how = "gptq";
    if (o.gptq.refit_scales && has_refittable_scales(m.type)) {
      refit_block_scales(m.type, m.w.data(), m.n_out, n, j.in->gram.data(), damp, out, pool);
      rep.how = "gptq+refit";
    }
    for (int round = 0; round < o.gptq.descent_rounds; ++round) {
      descend_levels(m.type, m.w.data(), m.n_out, n, j.in->gram.data(), damp, o.gptq.descent_sweeps, out,
                     pool);
      if (o.gptq.refit_scales && has_refittable_scales(m.type))
        refit_block_scales(m.type, m.w.data(), m.n_out, n, j.in->gram.data(), damp, out, pool);
    }
    if (o.gptq.descent_rounds > 0) rep.how += "+cd";
  } else if (quantized_type && o.method == Method::Awq && j.in && o.clip && j.allow_clip) {
    awq_clip_quantize(m, *j.in, out, pool);
    rep.how = have_gram ? "awq clip" : "awq clip (diag)";
  } else {
    quantize_rows(m.type, m.w.data(), out, m.n_out, n, j.in ? j.in->msq.data() : nullptr, pool);
    rep.how = !quantized_type ? std::string(type_name(m.type)) : j.in ? "rtn+imatrix" : "rtn";
  }
  if (uses_awq(o.method) && (!j.col_scale.empty() || !j.row_div.empty())) rep.how = "awq scales, " + rep.how;

  // Errors against the original weights, on sampled rows.
  if (o.metric_rows == 0 || !quantized_type) return rep;
  const InputStats fallback = j.in_orig ? InputStats{} : unweighted(n);
  const InputStats& ref_in = j.in_orig ? *j.in_orig : fallback;
  const std::vector<int64_t> rows = sample_rows(m.n_out, o.metric_rows);
  const auto R = static_cast<int64_t>(rows.size());
  std::vector<float> ref(static_cast<size_t>(R * n));
  for (int64_t k = 0; k < R; ++k)
    std::copy(j.original.begin() + rows[static_cast<size_t>(k)] * n,
              j.original.begin() + (rows[static_cast<size_t>(k)] + 1) * n, ref.begin() + k * n);
  std::vector<float> rtn_rows(static_cast<size_t>(R * n));
  for (int64_t k = 0; k < R; ++k) {
    std::vector<uint8_t> q(row_bytes(m.type, n));
    quantize_row(m.type, ref.data() + k * n, q.data(), n);
    dequantize_row(m.type, q.data(), rtn_rows.data() + k * n, n);
  }
  rep.err_before = relative_error_rows(ref, rtn_rows, R, ref_in, pool);
  rep.err_after = relative_error_rows(ref, effective_rows(j, out, rows), R, ref_in, pool);
  return rep;
}

}  // namespace strata::calib
