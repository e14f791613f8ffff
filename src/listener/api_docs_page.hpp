// ApiDocsPage: the page at /docs, Swagger UI over /openapi.json, where each
// route can be tried (EDRI_API_DOCS; docs/writing-a-plugin.md, "OpenAPI").
//
// The page and its start-up script are made here; Swagger UI's own files
// (npm swagger-ui-dist, installed by scripts/setup.sh) are served from a
// folder: EDRI_API_DOCS_UI, else share/edri/swagger-ui beside the server's
// bin/ folder, where the build tree and the package put them. Nothing is
// fetched from the network, by the server or by the page.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "http/request_parser.hpp"
#include "listener/static_files.hpp"

namespace edri::listener {

class ApiDocsPage {
 public:
  // `folder`: EDRI_API_DOCS_UI, or empty for the default.
  explicit ApiDocsPage(const std::string& folder);

  static bool is_page_path(std::string_view path) { return path == "/docs" || path.starts_with("/docs/"); }
  // Whether Swagger UI's files are there (else /docs answers 404 saying so).
  bool installed() const { return installed_; }
  const std::string& folder() const { return folder_; }

  // What GET `path` (is_page_path) answers.
  struct Answer {
    int status = 200;
    std::string_view content_type;
    std::string_view body;                    // the page, its script, or a problem's detail
    std::optional<StaticFiles::Answer> file;  // one of Swagger UI's files
  };
  Answer answer(std::string_view path, const http::HttpRequest& req) const;

 private:
  std::string folder_;
  bool installed_ = false;
  StaticFiles files_;
};

}  // namespace edri::listener
