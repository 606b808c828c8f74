#include "bench/bench_serve.h"

#include <httplib.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/arrivals.h"
#include "bench/progress_bar.h"
#include "core/check.h"

namespace strata::bench {
namespace {

void validate(const BenchServeOptions& o) {
  if (o.url.empty()) STRATA_THROW("--url is required");
  if (o.max_concurrency < 0) STRATA_THROW("--max-concurrency must not be negative");
  if (!(o.timeout_s > 0.0 && o.timeout_s <= 1e6)) STRATA_THROW("--timeout must be in (0, 1e6] seconds");
  if (!(o.temperature >= 0.0 && o.temperature <= 100.0)) STRATA_THROW("--temperature must be in [0, 100]");
  if (!o.extra_body.empty()) {
    const auto extra = nlohmann::json::parse(o.extra_body, nullptr, /*allow_exceptions=*/false);
    if (!extra.is_object()) STRATA_THROW("--extra-body must be a JSON object");
  }
  for (const auto& [name, value] :
       {std::pair{"--slo-ttft", o.slo.ttft_ms}, std::pair{"--slo-tpot", o.slo.tpot_ms},
        std::pair{"--slo-e2e", o.slo.e2e_ms}}) {
    if (value && !(*value > 0.0 && std::isfinite(*value)))
      STRATA_THROW(name, " must be a positive number of ms");
  }
}

std::vector<BenchRequest> build_workload(const BenchServeOptions& o) {
  if (!o.dataset.empty()) return load_jsonl_workload(o.dataset, o.num_prompts, o.output_len);
  SyntheticWorkload spec;
  spec.num_prompts = o.num_prompts;
  spec.input_len = o.input_len;
  spec.output_len = o.output_len;
  spec.range_ratio = o.range_ratio;
  spec.prefix_len = o.prefix_len;
  spec.seed = o.seed;
  return make_synthetic_workload(spec);
}

std::string base_url_for_models(const HttpTarget& t) {
  const bool v6 = t.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + t.host + "]" : t.host) + ":" + std::to_string(t.port);
}

}  // namespace

std::vector<int64_t> parse_concurrency_list(const std::string& text) {
  std::vector<int64_t> levels;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 1'000'000)
      STRATA_THROW("--sweep-concurrency wants positive integers like 1,4,16,64, got '", text, "'");
    levels.push_back(v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return levels;
}

double parse_request_rate(const std::string& text) {
  if (text == "inf" || text == "Inf" || text == "INF") return std::numeric_limits<double>::infinity();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0.0) || !std::isfinite(v))
    STRATA_THROW("--request-rate must be a positive number or inf, got '", text, "'");
  return v;
}

std::string discover_model(const HttpTarget& target, const std::string& api_key) {
  httplib::Client client(base_url_for_models(target));
  client.set_connection_timeout(10);
  client.set_read_timeout(30);
  httplib::Headers headers;
  if (!api_key.empty()) headers.emplace("Authorization", "Bearer " + api_key);
  const std::string path = request_path(target, "/v1/models");
  auto res = client.Get(path.c_str(), headers);
  if (!res) STRATA_THROW("--model not given and GET ", path, " failed: ", httplib::to_string(res.error()));
  if (res->status != 200) STRATA_THROW("--model not given and GET ", path, " answered HTTP ", res->status);
  nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string())
    return j["data"][0]["id"].get<std::string>();
  STRATA_THROW("--model not given and GET ", path, " lists no model");
}

BenchServeResult run_bench_serve(const BenchServeOptions& options) {
  validate(options);
  const HttpTarget target = parse_http_url(options.url);
  BenchServeResult result;
  result.workload = build_workload(options);
  result.model = options.model.empty() ? discover_model(target, options.api_key) : options.model;
  const std::string path = request_path(target, endpoint_path(options.endpoint));
  result.request_url = base_url_for_models(target) + path;

  GenerationOptions gen;
  gen.model = result.model;
  gen.endpoint = options.endpoint;
  gen.ignore_eos = options.ignore_eos;
  gen.temperature = options.temperature;
  gen.extra_body = options.extra_body;
  const std::vector<double> offsets = arrival_offsets(static_cast<int64_t>(result.workload.size()),
                                                      options.request_rate, options.burstiness, options.seed);
  std::vector<LoadRequest> requests;
  requests.reserve(result.workload.size());
  for (size_t i = 0; i < result.workload.size(); ++i)
    requests.push_back({build_request_body(result.workload[i], gen),
                        result.workload[i].estimated_prompt_tokens, offsets[i]});

  std::vector<int64_t> levels = options.sweep_concurrency;
  if (levels.empty()) levels.push_back(options.max_concurrency);
  for (int64_t level : levels) {
    LoadOptions load;
    load.target = target;
    load.path = path;
    load.endpoint = options.endpoint;
    load.api_key = options.api_key;
    load.max_concurrency = level;
    load.timeout_s = options.timeout_s;
    const std::string label = level > 0 ? "concurrency " + std::to_string(level) : "";
    ProgressBar bar(options.progress, label);
    if (options.progress) load.on_progress = [&bar](const LoadProgress& p) { bar.update(p); };
    BenchRun run;
    run.max_concurrency = level;
    run.load = run_load(requests, load);
    bar.finish();
    run.metrics = compute_metrics(run.load.records, run.load.duration_s, options.slo);
    result.runs.push_back(std::move(run));
  }
  return result;
}

}  // namespace strata::bench
