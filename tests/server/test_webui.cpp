// The browser chat page: the files compiled in are the files of src/server/webui, served with
// their types at / and /webui/NAME without the API key, and absent with webui off.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "server/embedded_file.h"
#include "server/webui.h"
#include "server_fixture.h"

namespace strata::test {
namespace {

namespace fs = std::filesystem;

const fs::path kWebuiDir = fs::path(STRATA_SOURCE_DIR) / "src" / "server" / "webui";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Webui, EmbedsEveryFileOfTheFolderByteForByte) {
  std::set<std::string> on_disk;
  for (const auto& entry : fs::directory_iterator(kWebuiDir)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".html" || ext == ".css" || ext == ".js" || ext == ".svg")
      on_disk.insert(entry.path().filename().string());
  }
  std::set<std::string> embedded;
  for (const server::EmbeddedFile& f : server::webui_files()) {
    embedded.insert(std::string(f.name));
    EXPECT_EQ(f.bytes, read_file(kWebuiDir / f.name)) << f.name;
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_TRUE(embedded.count("index.html"));
}

TEST(Webui, ContentTypeFollowsTheExtension) {
  EXPECT_EQ(server::web_content_type("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(server::web_content_type("app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(server::web_content_type("style.css"), "text/css; charset=utf-8");
  EXPECT_EQ(server::web_content_type("favicon.svg"), "image/svg+xml");
  EXPECT_EQ(server::web_content_type("notes.txt"), "application/octet-stream");
  EXPECT_EQ(server::web_content_type("js"), "application/octet-stream");
}

TEST(Webui, PagePathsAreThePageAndItsFilesOnly) {
  EXPECT_TRUE(server::is_webui_path("/"));
  EXPECT_TRUE(server::is_webui_path("/index.html"));
  EXPECT_TRUE(server::is_webui_path("/webui/app.js"));
  EXPECT_FALSE(server::is_webui_path("/webui/"));
  EXPECT_FALSE(server::is_webui_path("/webui/missing.js"));
  EXPECT_FALSE(server::is_webui_path("/webui/../v1/models"));
  EXPECT_FALSE(server::is_webui_path("/v1/models"));
  EXPECT_FALSE(server::is_webui_path("/metrics"));
}

TEST(Webui, ServedWithTypesAndWithoutTheApiKey) {
  server::ServerOptions options;
  options.api_key = "sekrit";
  LiveServer s(options);
  httplib::Client c("127.0.0.1", s.port());  // no key (s.client() would send the server's)
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(page->body, read_file(kWebuiDir / "index.html"));
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  auto script = c.Get("/webui/app.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->status, 200);
  EXPECT_EQ(script->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(script->body, read_file(kWebuiDir / "app.js"));
  auto style = c.Get("/webui/style.css");
  ASSERT_TRUE(style);
  EXPECT_EQ(style->get_header_value("Content-Type"), "text/css; charset=utf-8");
  // The page needs no key; everything else still does.
  auto missing = c.Get("/webui/missing.js");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401);
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 401);
  auto keyed = s.client("sekrit").Get("/webui/missing.js");
  ASSERT_TRUE(keyed);
  EXPECT_EQ(keyed->status, 404);
}

TEST(Webui, OffMeansNotFound) {
  server::ServerOptions options;
  options.webui = false;
  LiveServer s(options);
  httplib::Client c = s.client();
  for (const char* path : {"/", "/index.html", "/webui/app.js"}) {
    auto res = c.Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
  }
  auto models = c.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
}

}  // namespace
}  // namespace strata::test
