// Multipart: the parts of a whole multipart/form-data body (RFC 7578,
// RFC 2046 5.1), as views into it. No copy and no I/O: the body may be a
// mapped upload file of any size.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace edri::http {

struct MultipartPart {
  std::string_view name;          // Content-Disposition name
  std::string_view filename;      // Content-Disposition filename, if any
  std::string_view content_type;  // the part's Content-Type, if any
  std::string_view data;
};

// True when `content_type` is multipart/form-data.
bool is_multipart_form(std::string_view content_type);

// Parses `body`, sent with `content_type`, into `out`. Returns what is
// wrong with it (for a 400), or an empty string.
std::string parse_multipart(std::string_view content_type, std::string_view body, std::vector<MultipartPart>& out,
                            std::size_t max_parts = 1000);

}  // namespace edri::http
