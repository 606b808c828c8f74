// A file of the source tree compiled into the binary (cmake/EmbedFiles.cmake writes the tables).
#pragma once

#include <span>
#include <string_view>

namespace strata::server {

struct EmbeddedFile {
  std::string_view name;   // relative to its folder, e.g. "app.js"
  std::string_view bytes;  // the file's content, byte for byte
};

// src/server/webui: the browser chat page served at GET / (generated source, see CMakeLists.txt).
std::span<const EmbeddedFile> webui_files();

}  // namespace strata::server
