#include "python_reference.h"

#include <stdexcept>

#include "common/fixtures.h"

namespace strata::test {

std::vector<ReferenceResult> render_with_python(const std::vector<ReferenceCase>& cases) {
  nlohmann::ordered_json request = {{"cases", nlohmann::ordered_json::array()}};
  for (const ReferenceCase& c : cases) {
    nlohmann::ordered_json j = {{"template", c.template_source}, {"context", c.context}};
    j["now"] = c.now ? nlohmann::ordered_json(*c.now) : nlohmann::ordered_json(nullptr);
    request["cases"].push_back(std::move(j));
  }
  const std::string script = source_dir() + "/tests/template/hf_jinja_reference.py";
  const CommandResult r = run_command({"python3", script}, request.dump());
  if (r.exit_code != 0)
    throw std::runtime_error("python3 " + script + " failed (is python3-jinja2 installed?): " + r.err);
  const auto results = nlohmann::json::parse(r.out);
  if (!results.is_array() || results.size() != cases.size())
    throw std::runtime_error("unexpected output from " + script);
  std::vector<ReferenceResult> out;
  for (const auto& j : results) {
    ReferenceResult res;
    res.ok = j.contains("output");
    if (res.ok) {
      res.output = j["output"].get<std::string>();
    } else {
      res.error_type = j["error"].get<std::string>();
      res.message = j["message"].get<std::string>();
      res.raised = j["raised"].get<bool>();
    }
    out.push_back(std::move(res));
  }
  return out;
}

nlohmann::ordered_json load_test_json(const std::string& name) {
  return nlohmann::ordered_json::parse(read_file(source_dir() + "/tests/template/" + name));
}

}  // namespace strata::test
