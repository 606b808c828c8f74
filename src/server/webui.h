// The browser chat page (src/server/webui, compiled in): GET / and /index.html serve the page,
// GET /webui/NAME its scripts, style sheet and icon. `strata serve --no-webui` leaves it out.
#pragma once

#include <httplib.h>

#include <string_view>

namespace strata::server {

// The Content-Type of a page file by its extension; "application/octet-stream" when unknown.
std::string_view web_content_type(std::string_view name);

// True for the paths the page is served on. They need no API key: the files are the same for
// everyone and hold no secret, and the page itself asks the user for the key.
bool is_webui_path(std::string_view path);

void install_webui_routes(httplib::Server& http);

}  // namespace strata::server
