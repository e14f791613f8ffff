// Exchange: one HTTP request on its way to its answer, as the front sees it.
// It knows the connection, how the answer must be framed (keep-alive,
// HTTP/1.0, HEAD), the header lines middleware added, and, once routed, the
// route's row in the metrics; so every answer the front gives itself is one
// call that opens the request's slot and writes into it.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include <edri/plugin.hpp>

#include "listener/answers.hpp"
#include "listener/connection.hpp"

namespace edri::listener {

class Exchange {
 public:
  Exchange(Connection& c, Answers& answers, bool keep_alive, bool http10, bool head)
      : c_(c), answers_(answers), keep_alive_(keep_alive), http10_(http10), head_(head) {}

  Connection& connection() const { return c_; }
  bool http10() const { return http10_; }
  // Middleware ran: its header lines go with every answer from here on.
  void add_middleware_lines(const ResponseHeaders& added) { added_ = &added; }
  // The request reached route `row` (its metrics row).
  void set_route(std::uint32_t row) { route_ = row; }
  // The access log's record of the request (EDRI_ACCESS_LOG), handed to
  // its slot when it opens.
  void set_access(std::unique_ptr<AccessRecord> r) { access_ = std::move(r); }
  AccessRecord* access() const { return access_.get(); }
  std::unique_ptr<AccessRecord> take_access() { return std::move(access_); }

  // The request's slot, for the answer that will come back.
  std::uint32_t open() { return c_.open_slot(keep_alive_, http10_, head_, lines(), route_, std::move(access_)); }
  // The same, keeping the connection whatever the request asked: its
  // answer is a stream that lasts as long as the connection.
  std::uint32_t open_kept() { return c_.open_slot(true, http10_, head_, lines(), route_, std::move(access_)); }
  void answer(int status, std::string_view content_type, std::string_view body, std::string_view headers = {}) {
    const auto seq = open();
    answers_.reply(c_.answers(), seq, status, content_type, body, headers);
  }
  void problem(int status, std::string_view detail, std::string_view headers = {}) {
    const auto seq = open();
    answers_.problem(c_.answers(), seq, status, detail, headers);
  }
  // A refusal: its answer closes the connection, and nothing sent after
  // the request is read (RFC 9112 9.6).
  void refuse(int status, std::string_view detail) {
    answers_.answer_locally(c_, false, http10_, head_, status, detail, {}, std::move(access_));
  }

 private:
  std::string_view lines() const { return added_ ? std::string_view(added_->lines()) : std::string_view(); }

  Connection& c_;
  Answers& answers_;
  bool keep_alive_;
  bool http10_;
  bool head_;
  const ResponseHeaders* added_ = nullptr;
  std::uint32_t route_ = Connection::kNoRoute;
  std::unique_ptr<AccessRecord> access_;
};

}  // namespace edri::listener
