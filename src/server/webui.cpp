#include "server/webui.h"

#include <string>

#include "core/check.h"
#include "server/api_error.h"
#include "server/embedded_file.h"
#include "server/server_context.h"

namespace strata::server {
namespace {

constexpr std::string_view kIndex = "index.html";
constexpr std::string_view kAssetPrefix = "/webui/";

// The page loads its own script and style sheet and talks to this server only: everything else
// (inline script, other origins, plugins, framing) is refused by the browser.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const EmbeddedFile* find_file(std::string_view name) {
  for (const EmbeddedFile& f : webui_files())
    if (f.name == name) return &f;
  return nullptr;
}

void send_file(const EmbeddedFile& f, httplib::Response& res) {
  res.status = 200;
  // Revalidated on every load, so that a new binary's page is never mixed with a cached one.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  if (f.name.ends_with(".html")) res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  res.set_content(std::string(f.bytes), std::string(web_content_type(f.name)));
}

}  // namespace

std::string_view web_content_type(std::string_view name) {
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

bool is_webui_path(std::string_view path) {
  if (path == "/" || path == "/index.html") return true;
  return path.starts_with(kAssetPrefix) && find_file(path.substr(kAssetPrefix.size())) != nullptr;
}

void install_webui_routes(httplib::Server& http) {
  const EmbeddedFile* index = find_file(kIndex);
  STRATA_CHECK(index != nullptr, "the web UI was built without its ", kIndex);
  auto page = [index](const httplib::Request&, httplib::Response& res) { send_file(*index, res); };
  http.Get("/", page);
  http.Get("/index.html", page);
  http.Get(R"(/webui/([A-Za-z0-9_.-]+))", [](const httplib::Request& req, httplib::Response& res) {
    const EmbeddedFile* f = find_file(req.matches[1].str());
    if (!f) {
      set_error(res, 404, not_found("No such file.").body());
      return;
    }
    send_file(*f, res);
  });
}

}  // namespace strata::server
