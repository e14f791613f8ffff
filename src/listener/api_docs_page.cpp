#include "listener/api_docs_page.hpp"

#include <filesystem>

namespace edri::listener {

namespace {

// Absolute paths: the page is served at /docs with or without the slash.
constexpr std::string_view kPage = R"(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API</title>
<link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
)";

// "Try it out" open on every operation: the page is for trying.
constexpr std::string_view kInit = R"(window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  tryItOutEnabled: true,
  displayRequestDuration: true
});
)";

constexpr std::string_view kNotInstalled =
    "the API docs page needs Swagger UI's files (npm swagger-ui-dist), which scripts/setup.sh installs and the build "
    "copies to share/edri/swagger-ui; or name their folder with EDRI_API_DOCS_UI";

// share/edri/swagger-ui beside the folder of the running binary.
std::string default_folder() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return (exe.parent_path().parent_path() / "share" / "edri" / "swagger-ui").string();
}

}  // namespace

ApiDocsPage::ApiDocsPage(const std::string& folder) : folder_(folder.empty() ? default_folder() : folder) {
  std::error_code ec;
  installed_ = !folder_.empty() && std::filesystem::is_regular_file(folder_ + "/swagger-ui-bundle.js", ec);
  if (installed_) files_.mount("/docs/", folder_);
}

ApiDocsPage::Answer ApiDocsPage::answer(std::string_view path, const http::HttpRequest& req) const {
  if (!installed_) return {404, "text/plain; charset=utf-8", kNotInstalled, std::nullopt};
  if (path == "/docs" || path == "/docs/") return {200, "text/html; charset=utf-8", kPage, std::nullopt};
  if (path == "/docs/init.js") return {200, "text/javascript; charset=utf-8", kInit, std::nullopt};
  auto file = files_.serve(path, req);
  if (!file) return {404, "text/plain; charset=utf-8", "no such file of the API docs page", std::nullopt};
  return {file->status, {}, {}, std::move(file)};
}

}  // namespace edri::listener
