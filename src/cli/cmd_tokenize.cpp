// `strata tokenize` and `strata detokenize`: text <-> token ids with a model's tokenizer. The
// model may be a GGUF file (vocab-only files included), a llama2.c checkpoint or a Hugging Face
// directory (only its tokenizer files are read). Results go to stdout, timing to stderr.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "core/check.h"
#include "core/log.h"
#include "formats/hf_tokenizer.h"
#include "formats/model_file.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace strata::cli {
namespace {

struct TokenizerOptions {
  std::string model;
  std::string tokenizer;  // llama2.c tokenizer .bin
};

std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerOptions& o) {
  std::error_code ec;
  if (std::filesystem::is_directory(o.model, ec)) {
    Metadata md;
    add_hf_tokenizer_metadata(o.model, md);
    return Tokenizer::from_metadata(md);
  }
  const std::unique_ptr<ModelFile> file = open_model_file(o.model, o.tokenizer);
  return Tokenizer::from_metadata(file->metadata());
}

void add_tokenizer_options(CLI::App& cmd, TokenizerOptions& o) {
  cmd.add_option("-m,--model", o.model,
                 "GGUF file (vocab-only is fine), llama2.c .bin or Hugging Face directory")
      ->required();
  cmd.add_option("--tokenizer", o.tokenizer, "llama2.c tokenizer .bin (for a .bin checkpoint)");
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) STRATA_THROW(path, ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) STRATA_THROW(path, ": read error");
  return ss.str();
}

// "1,2,3", "1 2 3" or "[1, 2, 3]".
std::vector<TokenId> parse_id_list(const std::string& s) {
  std::vector<TokenId> ids;
  std::string cur;
  const auto flush = [&] {
    if (cur.empty()) return;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(cur, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != cur.size() || v < INT32_MIN || v > INT32_MAX) STRATA_THROW("invalid token id '", cur, "'");
    ids.push_back(static_cast<TokenId>(v));
    cur.clear();
  };
  for (char c : s) {
    if (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '[' || c == ']')
      flush();
    else
      cur += c;
  }
  flush();
  return ids;
}

struct TokenizeOptions {
  TokenizerOptions tok;
  std::string prompt, file;
  bool add_special = false, parse_special = false;
};

// CPU time of this thread: unlike wall time it does not grow when other processes share the cores.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void run_tokenize(const TokenizeOptions& o, bool have_prompt) {
  const auto tok = load_tokenizer(o.tok);
  const std::string text = have_prompt ? o.prompt : read_file_bytes(o.file);
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_seconds();
  const std::vector<TokenId> ids = tok->encode(text, o.add_special, o.parse_special);
  const double cpu = thread_cpu_seconds() - cpu0;
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string line;
  line.reserve(ids.size() * 6);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  const double mib = static_cast<double>(text.size()) / (1 << 20);
  log_info("tokenize: ", text.size(), " bytes -> ", ids.size(), " tokens in ", s * 1e3, " ms wall, ",
           cpu * 1e3, " ms cpu (", cpu > 0 ? mib / cpu : 0.0, " MiB/s of cpu)");
}

void setup_tokenize(CLI::App& cmd) {
  auto o = std::make_shared<TokenizeOptions>();
  add_tokenizer_options(cmd, o->tok);
  auto* p = cmd.add_option("-p,--prompt", o->prompt, "Text to tokenize");
  auto* f = cmd.add_option("-f,--file", o->file, "Tokenize the bytes of this file");
  p->excludes(f);
  cmd.add_flag("--add-special", o->add_special, "Add BOS/EOS as the model does");
  cmd.add_flag("--parse-special", o->parse_special, "Recognise special token texts such as <|im_start|>");
  cmd.callback([o, p, f] {
    if (p->count() == 0 && f->count() == 0) STRATA_THROW("text is required: -p TEXT or -f FILE");
    run_tokenize(*o, p->count() > 0);
  });
}

struct DetokenizeOptions {
  TokenizerOptions tok;
  std::string ids;
  bool render_special = false;
};

void setup_detokenize(CLI::App& cmd) {
  auto o = std::make_shared<DetokenizeOptions>();
  add_tokenizer_options(cmd, o->tok);
  cmd.add_option("--ids", o->ids, "Token ids: 1,2,3")->required();
  cmd.add_flag("--render-special", o->render_special, "Show control tokens such as </s>");
  cmd.callback([o] {
    const auto tok = load_tokenizer(o->tok);
    // Printed text is always valid UTF-8: bytes that do not form characters become U+FFFD.
    const std::string text =
        unicode::sanitize_utf8(tok->decode(parse_id_list(o->ids), o->render_special)) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "tokenize", setup_tokenize, "Print the token ids of a text");
STRATA_REGISTER_COMMAND("", "detokenize", setup_detokenize, "Print the text of token ids");
}  // namespace strata::cli
