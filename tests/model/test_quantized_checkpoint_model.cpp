// GPTQ / AWQ checkpoints run: a checkpoint packed by the test's writer gives the same logits
// loaded directly as converted to GGUF by `strata quantize DIR OUT COPY` (whose tensors are the
// directly loaded blocks, byte for byte), and a 4-bit GPTQ tinystories656k stays close to the F32
// model (KL divergence and perplexity computed here in float64 over a held-out text).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "backend/backend.h"
#include "common/direct_session.h"
#include "common/fixtures.h"
#include "formats/model_file.h"
#include "formats/quantized_checkpoint_writer.h"
#include "model/model.h"

namespace strata {
namespace {

const std::string kTiny = "models/tinystories656k";
const char* kText =
    "Once upon a time, there was a little girl named Lily. One day, Lily and her dog went to the woods. "
    "They saw a big tree with a red ball in it. Lily wanted the ball, so she asked her mom for help.";

std::vector<float> all_logits(Model& m, const std::vector<int32_t>& ids) {
  test::DirectSession s(m, static_cast<int64_t>(ids.size()));
  return s.eval(ids, true);
}

void expect_gguf_matches(const std::string& dir, const std::string& gguf) {
  const auto a = open_model_file(dir), b = open_model_file(gguf);
  ASSERT_EQ(a->tensors().size(), b->tensors().size());
  for (const TensorInfo& t : a->tensors()) {
    const TensorInfo* u = b->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_EQ(u->type, t.type) << t.name;
    EXPECT_EQ(u->ne, t.ne) << t.name;
    ASSERT_EQ(u->nbytes, t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp(u->data, t.data, t.nbytes), 0) << t.name;
  }
}

class QuantizedCheckpointModel : public ::testing::TestWithParam<test::QuantScheme> {};

TEST_P(QuantizedCheckpointModel, DirectLoadAndConvertedGgufGiveIdenticalLogits) {
  test::TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  test::write_quantized_checkpoint(test::shared_path(kTiny), ckpt, GetParam());
  const std::string gguf = dir.file("converted.gguf");
  const auto r = test::run_command({test::strata_binary(), "quantize", ckpt, gguf, "COPY", "--no-summary"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_gguf_matches(ckpt, gguf);

  auto backend = make_cpu_backend(1);
  auto direct = Model::load(ckpt, *backend);
  auto converted = Model::load(gguf, *backend);
  const auto ids = direct->tokenizer().encode(kText, true, false);
  ASSERT_EQ(converted->tokenizer().encode(kText, true, false), ids);
  const auto a = all_logits(*direct, ids), b = all_logits(*converted, ids);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(Schemes, QuantizedCheckpointModel,
                         ::testing::Values(test::QuantScheme{"gptq", 4, 32, false},       // Q4_1
                                           test::QuantScheme{"gptq", 4, 128, true},       // Q4_0
                                           test::QuantScheme{"gptq", 8, 128, true},       // Q8_0
                                           test::QuantScheme{"gptq", 4, 32, true, true},  // F16
                                           test::QuantScheme{"awq", 4, 64, false}),       // Q4_1
                         [](const ::testing::TestParamInfo<test::QuantScheme>& info) {
                           const auto& s = info.param;
                           return s.method + std::to_string(s.bits) + "_g" + std::to_string(s.group_size) +
                                  (s.sym ? "_sym" : "_asym") + (s.act_order ? "_act_order" : "");
                         });

// log-softmax of one row, in float64.
std::vector<double> log_probs(const float* logits, int64_t n) {
  double mx = logits[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(logits[i] - mx);
  std::vector<double> lp(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lp[static_cast<size_t>(i)] = logits[i] - mx - std::log(sum);
  return lp;
}

struct Divergence {
  double kld = 0, ppl_base = 0, ppl_q = 0;
};

// Mean KL(base || q) per position and the perplexity of both over the next tokens.
Divergence divergence(Model& base, Model& q, const std::vector<int32_t>& ids) {
  const auto a = all_logits(base, ids), b = all_logits(q, ids);
  const int64_t n_vocab = base.config().n_vocab, n = static_cast<int64_t>(ids.size()) - 1;
  Divergence d;
  double nll_a = 0, nll_b = 0;
  for (int64_t t = 0; t < n; ++t) {
    const auto la = log_probs(&a[static_cast<size_t>(t * n_vocab)], n_vocab);
    const auto lb = log_probs(&b[static_cast<size_t>(t * n_vocab)], n_vocab);
    for (int64_t v = 0; v < n_vocab; ++v) d.kld += std::exp(la[v]) * (la[v] - lb[v]);
    nll_a -= la[static_cast<size_t>(ids[static_cast<size_t>(t + 1)])];
    nll_b -= lb[static_cast<size_t>(ids[static_cast<size_t>(t + 1)])];
  }
  d.kld /= static_cast<double>(n);
  d.ppl_base = std::exp(nll_a / static_cast<double>(n));
  d.ppl_q = std::exp(nll_b / static_cast<double>(n));
  return d;
}

TEST(QuantizedCheckpointModel, FourAndEightBitStayCloseToF32) {
  auto backend = make_cpu_backend(1);
  auto base = Model::load(test::shared_path(kTiny), *backend);
  const std::string text =
      test::read_file(test::source_dir() + "/data/stories260K-heldout.txt").substr(0, 1500);
  auto ids = base->tokenizer().encode(text, true, false);
  ids.resize(std::min<size_t>(ids.size(), 400));
  for (const test::QuantScheme& s :
       {test::QuantScheme{"gptq", 4, 128, true}, test::QuantScheme{"gptq", 4, 32, false},
        test::QuantScheme{"gptq", 4, 32, true, true}, test::QuantScheme{"gptq", 8, 128, true},
        test::QuantScheme{"awq", 4, 128, false}}) {
    test::TempDir dir;
    test::write_quantized_checkpoint(test::shared_path(kTiny), dir.path(), s);
    auto q = Model::load(dir.path(), *backend);
    const Divergence d = divergence(*base, *q, ids);
    std::fprintf(stderr, "%s %d-bit g%lld %s%s: KLD %.5f, PPL %.4f (F32 %.4f) over %zu tokens\n",
                 s.method.c_str(), s.bits, static_cast<long long>(s.group_size), s.sym ? "sym" : "asym",
                 s.act_order ? " act-order" : "", d.kld, d.ppl_q, d.ppl_base, ids.size());
    // Round-to-nearest 4-bit of a 656k-parameter model: a few hundredths of a nat; a wrong
    // packing (one nibble order or zero off) is orders of magnitude worse.
    EXPECT_GT(d.kld, 0.0);
    EXPECT_LT(d.kld, 0.25);
    EXPECT_LT(d.ppl_q, d.ppl_base * 1.5);
  }
}

}  // namespace
}  // namespace strata
