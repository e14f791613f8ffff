#include "manager/answer_compression.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>

#include "http/field_text.hpp"

namespace edri::manager {

namespace env = edri::envelope;

namespace {

using Header = std::pair<std::string, std::string>;

Header* find_header(Response& resp, std::string_view name) {
  const auto it = std::find_if(resp.headers.begin(), resp.headers.end(),
                               [&](const Header& h) { return http::iequals(h.first, name); });
  return it == resp.headers.end() ? nullptr : &*it;
}

// Whether the answer's coding depends on Accept-Encoding: a body of a
// compressible type that the handler did not encode itself (nor marked
// Content-Encoding: identity), in an answer
// that is not partial (a Range answer's bytes are the identity's) and has
// a body at all.
bool varies(const Config& config, Response& resp) {
  const int status = resp.status;
  if (status < 200 || status == 204 || status == 206 || status == 304) return false;
  if (Header* coding = find_header(resp, "content-encoding")) {
    // "identity": the handler's word that this answer stays as it is (a
    // secret beside echoed input: BREACH), not a header to send.
    if (http::iequals(coding->second, "identity"))
      std::erase_if(resp.headers, [](const Header& h) { return http::iequals(h.first, "content-encoding"); });
    return false;
  }
  return http::is_compressible(resp.content_type, config.compression_types);
}

// Vary: Accept-Encoding, merged into a Vary the handler set.
void add_vary(Response& resp) {
  Header* vary = find_header(resp, "vary");
  if (!vary) return void(resp.headers.emplace_back("Vary", "Accept-Encoding"));
  const std::string lowered = http::lowered(vary->second);
  if (lowered.find("accept-encoding") == std::string::npos && http::trim_ows(lowered) != "*")
    vary->second += ", Accept-Encoding";
}

http::Coding coding_asked(const env::EnvelopeHeader& request) {
  if (request.flags & env::kFlagCodingBrotli) return http::Coding::Brotli;
  return request.flags & env::kFlagCodingGzip ? http::Coding::Gzip : http::Coding::Identity;
}

// The coding for an answer of `size` bytes; Identity: none. Vary is added
// whenever the coding depended on the request, compressed or not.
http::Coding coding_for(const Config& config, const env::EnvelopeHeader& request, Response& resp, std::uint64_t size) {
  if (!config.compression || !(request.flags & env::kFlagCodingAsked) || !varies(config, resp))
    return http::Coding::Identity;
  // Under the minimum the bytes are the same whatever the client accepts:
  // nothing varies, and the small answers most APIs give carry no Vary.
  if (size < config.compression_min_size) return http::Coding::Identity;
  add_vary(resp);
  return coding_asked(request);
}

int level_of(const Config& config, http::Coding coding) {
  return coding == http::Coding::Brotli ? config.compression_brotli_quality : config.compression_gzip_level;
}

// The headers of an encoded body: its coding, no length of the identity's
// (the listener writes the body's own), and a strong ETag made weak, as
// the bytes are no longer the ones it named (nginx does the same).
void mark_encoded(Response& resp, http::Coding coding) {
  std::erase_if(resp.headers, [](const Header& h) { return http::iequals(h.first, "content-length"); });
  if (Header* etag = find_header(resp, "etag"); etag && !etag->second.starts_with("W/")) etag->second.insert(0, "W/");
  resp.headers.emplace_back("Content-Encoding", std::string(http::coding_token(coding)));
}

}  // namespace

void compress_answer(const Config& config, const env::EnvelopeHeader& request, Response& resp) {
  auto* body = std::get_if<std::string>(&resp.body);
  if (!body || body->empty()) return;
  const http::Coding coding = coding_for(config, request, resp, body->size());
  if (coding == http::Coding::Identity) return;
  try {
    std::string packed = http::compress(coding, level_of(config, coding), *body);
    if (packed.size() >= body->size()) return;  // it did not shrink: sent as it is
    *body = std::move(packed);
    mark_encoded(resp, coding);
  } catch (const std::exception& e) {
    spdlog::warn("an answer goes uncompressed: {}", e.what());
  }
}

std::unique_ptr<http::Encoder> stream_encoder(const Config& config, const env::EnvelopeHeader& request,
                                              Response& resp) {
  const auto& length = std::get<StreamBody>(resp.body).length;
  const auto size = length.value_or(std::numeric_limits<std::uint64_t>::max());
  const http::Coding coding = size == 0 ? http::Coding::Identity : coding_for(config, request, resp, size);
  if (coding == http::Coding::Identity) return nullptr;
  try {
    auto encoder = std::make_unique<http::Encoder>(coding, level_of(config, coding));
    mark_encoded(resp, coding);
    return encoder;
  } catch (const std::exception& e) {
    spdlog::warn("a streamed answer goes uncompressed: {}", e.what());
    return nullptr;
  }
}

}  // namespace edri::manager
