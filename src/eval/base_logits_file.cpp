#include "eval/base_logits_file.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "eval/log_softmax.h"

namespace strata::eval {
namespace {

static_assert(std::endian::native == std::endian::little, "the base logits format is little-endian");

constexpr char kMagic[8] = {'S', 'K', 'L', 'D', 'B', 'A', 'S', 'E'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 64;
constexpr size_t kRecordFixedBytes = 16;  // nll, top1, lo, step
constexpr size_t kChecksumBytes = 8;
constexpr double kLogProbRange = 40.0;  // nats below the row maximum that are kept
constexpr double kLevels = 65535.0;     // u16 quantization steps
constexpr double kTopSlack = 1e-3;      // float rounding allowance on a row's top log-prob
constexpr int64_t kMaxVocab = int64_t{1} << 24;
constexpr int64_t kMaxCtx = int64_t{1} << 24;

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a(uint64_t h, const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

// The number of scored rows of a plan, with the plan rebuilt from header fields.
WindowPlan plan_from_header(const BaseLogitsHeader& h) {
  WindowPlanOptions o;
  o.n_ctx = h.n_ctx;
  o.stride = h.stride;
  o.max_windows = h.n_windows;
  return plan_windows(static_cast<int64_t>(h.tokens.size()), o);
}

}  // namespace

// ---- writer ----

BaseLogitsWriter::BaseLogitsWriter(const std::string& path, const BaseLogitsHeader& h)
    : path_(path), partial_path_(path + ".partial"), n_vocab_(h.n_vocab), checksum_(kFnvOffset) {
  STRATA_CHECK(h.n_vocab > 0 && h.n_vocab <= kMaxVocab && h.n_ctx >= 4 && h.n_windows > 0);
  const WindowPlan plan = plan_from_header(h);
  STRATA_CHECK(plan.windows.size() == static_cast<size_t>(h.n_windows));
  rows_expected_ = plan.n_scored();
  file_ = std::fopen(partial_path_.c_str(), "wb");
  if (!file_) STRATA_THROW(partial_path_, ": cannot create: ", std::strerror(errno));
  unsigned char header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, sizeof kMagic);
  store<uint32_t>(header + 8, kVersion);
  store<uint32_t>(header + 12, static_cast<uint32_t>(h.n_vocab));
  store<uint64_t>(header + 16, static_cast<uint64_t>(h.n_ctx));
  store<uint64_t>(header + 24, static_cast<uint64_t>(h.stride));
  store<uint64_t>(header + 32, static_cast<uint64_t>(h.n_windows));
  store<uint64_t>(header + 40, static_cast<uint64_t>(h.tokens.size()));
  store<uint64_t>(header + 48, h.vocab_fingerprint);
  store<int32_t>(header + 56, h.bos);
  store<uint32_t>(header + 60, 0);
  put(header, sizeof header);
  put(h.tokens.data(), h.tokens.size() * sizeof(int32_t));
  record_.resize(kRecordFixedBytes + 2 * static_cast<size_t>(n_vocab_));
}

BaseLogitsWriter::~BaseLogitsWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove(partial_path_.c_str());
  }
}

void BaseLogitsWriter::put(const void* data, size_t n) {
  checksum_ = fnv1a(checksum_, static_cast<const unsigned char*>(data), n);
  if (n > 0 && std::fwrite(data, 1, n, file_) != n)
    STRATA_THROW(partial_path_, ": write error: ", std::strerror(errno));
}

void BaseLogitsWriter::write_row(const BaseRow& row) {
  STRATA_CHECK(file_ && static_cast<int64_t>(row.logp.size()) == n_vocab_ && rows_written_ < rows_expected_);
  const auto [min_it, max_it] = std::minmax_element(row.logp.begin(), row.logp.end());
  const double hi = *max_it;
  const float lo = static_cast<float>(std::max(*min_it, hi - kLogProbRange));
  const float step = static_cast<float>(std::max(0.0, (hi - static_cast<double>(lo)) / kLevels));
  unsigned char* r = record_.data();
  store<float>(r, static_cast<float>(row.nll));
  store<int32_t>(r + 4, row.top1);
  store<float>(r + 8, lo);
  store<float>(r + 12, step);
  for (int64_t i = 0; i < n_vocab_; ++i) {
    double level = 0.0;
    if (step > 0.0f) level = std::round((row.logp[static_cast<size_t>(i)] - lo) / static_cast<double>(step));
    store<uint16_t>(r + kRecordFixedBytes + 2 * i, static_cast<uint16_t>(std::clamp(level, 0.0, kLevels)));
  }
  put(record_.data(), record_.size());
  ++rows_written_;
}

void BaseLogitsWriter::finish() {
  STRATA_CHECK(file_ && rows_written_ == rows_expected_, "base logits: ", rows_written_, " rows written of ",
               rows_expected_);
  unsigned char tail[kChecksumBytes];
  store<uint64_t>(tail, checksum_);
  put(tail, sizeof tail);
  const bool ok = std::fflush(file_) == 0 && !std::ferror(file_);
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!ok || !closed) {
    std::remove(partial_path_.c_str());
    STRATA_THROW(partial_path_, ": write error");
  }
  if (std::rename(partial_path_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    std::remove(partial_path_.c_str());
    STRATA_THROW(path_, ": cannot rename the finished file: ", std::strerror(err));
  }
}

// ---- reader ----

BaseLogitsReader::BaseLogitsReader(const std::string& path) : file_(path) {
  try {
    validate_header();
    validate_records();
  } catch (const Error& e) {
    STRATA_THROW(path, ": ", e.what());
  }
}

void BaseLogitsReader::validate_header() {
  const uint8_t* d = file_.data();
  const size_t size = file_.size();
  if (size < kHeaderBytes + kChecksumBytes || std::memcmp(d, kMagic, sizeof kMagic) != 0)
    STRATA_THROW("not a Strata base logits file (bad magic or too short)");
  if (const uint32_t v = load<uint32_t>(d + 8); v != kVersion)
    STRATA_THROW("unsupported base logits version ", v, " (this build reads version ", kVersion, ")");
  const uint64_t n_vocab = load<uint32_t>(d + 12), n_ctx = load<uint64_t>(d + 16),
                 stride = load<uint64_t>(d + 24);
  const uint64_t n_windows = load<uint64_t>(d + 32), n_tokens = load<uint64_t>(d + 40);
  if (n_vocab < 1 || n_vocab > static_cast<uint64_t>(kMaxVocab))
    STRATA_THROW("bad vocabulary size ", n_vocab);
  if (n_ctx < 4 || n_ctx > static_cast<uint64_t>(kMaxCtx)) STRATA_THROW("bad context size ", n_ctx);
  // Every window advances by `stride` inside the text, so a stride beyond the text is as good
  // as any other single-window stride; bounding it keeps the arithmetic far from overflow.
  if (stride < 1 || stride > (uint64_t{1} << 40)) STRATA_THROW("bad stride ", stride);
  if (n_windows < 1) STRATA_THROW("no windows");
  if (n_tokens > (size - kHeaderBytes - kChecksumBytes) / sizeof(int32_t))
    STRATA_THROW("truncated: ", n_tokens, " tokens do not fit in ", size, " bytes");
  if (n_tokens < n_ctx)
    STRATA_THROW("the text (", n_tokens, " tokens) is shorter than one window (", n_ctx, ")");
  header_.n_vocab = static_cast<int64_t>(n_vocab);
  header_.n_ctx = static_cast<int64_t>(n_ctx);
  header_.stride = static_cast<int64_t>(stride);
  header_.vocab_fingerprint = load<uint64_t>(d + 48);
  header_.bos = load<int32_t>(d + 56);
  if (header_.bos < -1 || header_.bos >= header_.n_vocab) STRATA_THROW("bad BOS id ", header_.bos);
  if (load<uint32_t>(d + 60) != 0) STRATA_THROW("reserved header field is not zero");
  const int64_t max_windows = (static_cast<int64_t>(n_tokens) - header_.n_ctx) / header_.stride + 1;
  if (n_windows > static_cast<uint64_t>(max_windows))
    STRATA_THROW(n_windows, " windows do not fit in a text of ", n_tokens, " tokens");
  header_.n_windows = static_cast<int64_t>(n_windows);
  header_.tokens.resize(n_tokens);
  std::memcpy(header_.tokens.data(), d + kHeaderBytes, n_tokens * sizeof(int32_t));
  for (const int32_t t : header_.tokens)
    if (t < 0 || t >= header_.n_vocab) STRATA_THROW("token id ", t, " is outside the vocabulary");
  plan_ = plan_from_header(header_);
  n_rows_ = plan_.n_scored();
  records_offset_ = kHeaderBytes + n_tokens * sizeof(int32_t);
  record_bytes_ = kRecordFixedBytes + 2 * n_vocab;
  const size_t room = size - records_offset_ - kChecksumBytes;
  if (room / record_bytes_ != static_cast<size_t>(n_rows_) || room % record_bytes_ != 0)
    STRATA_THROW("size mismatch: expected ", n_rows_, " records of ", record_bytes_, " bytes, found ", room,
                 " bytes");
}

void BaseLogitsReader::validate_records() const {
  const uint8_t* d = file_.data();
  const size_t body = file_.size() - kChecksumBytes;
  if (fnv1a(kFnvOffset, d, body) != load<uint64_t>(d + body))
    STRATA_THROW("checksum mismatch (corrupted file)");
  for (int64_t i = 0; i < n_rows_; ++i) {
    const uint8_t* r = d + records_offset_ + static_cast<size_t>(i) * record_bytes_;
    const float nll = load<float>(r), lo = load<float>(r + 8), step = load<float>(r + 12);
    const int32_t top1 = load<int32_t>(r + 4);
    // -log p is >= 0; a float rounding of a probability of 1 may land a hair below.
    if (!std::isfinite(nll) || nll < -1e-3f) STRATA_THROW("record ", i, ": bad NLL ", nll);
    if (top1 < 0 || top1 >= header_.n_vocab)
      STRATA_THROW("record ", i, ": top-1 id ", top1, " outside the vocabulary");
    // The top level lo + 65535 * step is the row's largest log-probability: at most 0 and at
    // least -ln(n_vocab) (the largest of n probabilities is >= 1/n); the range is <= 40 nats.
    // The slack covers float rounding of lo and step.
    const double top = static_cast<double>(lo) + kLevels * static_cast<double>(step);
    if (!std::isfinite(lo) || !std::isfinite(step) || step < 0.0f || !(top <= kTopSlack) ||
        !(top >= -std::log(static_cast<double>(header_.n_vocab)) - kTopSlack) ||
        !(kLevels * static_cast<double>(step) <= kLogProbRange + kTopSlack))
      STRATA_THROW("record ", i, ": bad quantization range");
  }
}

void BaseLogitsReader::read_row(int64_t i, BaseRow& row) const {
  STRATA_CHECK(i >= 0 && i < n_rows_);
  const uint8_t* r = file_.data() + records_offset_ + static_cast<size_t>(i) * record_bytes_;
  row.nll = load<float>(r);
  row.top1 = load<int32_t>(r + 4);
  const double lo = load<float>(r + 8), step = load<float>(r + 12);
  scratch_.resize(static_cast<size_t>(header_.n_vocab));
  for (int64_t j = 0; j < header_.n_vocab; ++j)
    scratch_[static_cast<size_t>(j)] = lo + step * load<uint16_t>(r + kRecordFixedBytes + 2 * j);
  log_softmax(scratch_.data(), header_.n_vocab, row.logp);
}

}  // namespace strata::eval
