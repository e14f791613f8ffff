#include "http/http1_reader.hpp"

#include <utility>

namespace edri::http {

Http1Reader::Http1Reader(ParserLimits limits, RequestParser::OnRequest on_request,
                         RequestParser::OnContinue on_continue, RequestParser::OnSpill on_spill)
    : parser_(limits, std::move(on_request), std::move(on_continue), std::move(on_spill)) {}

Http1Reader::Outcome Http1Reader::feed(std::string_view bytes, Clock::time_point now) {
  using Kind = Outcome::Kind;
  if (stopped_) {
    if (!bytes.empty()) input_refused_ = true;
    return {Kind::Ended, 0, "", {}};
  }
  const bool was_in_head = parser_.in_head();
  const auto r = parser_.feed(bytes.data(), bytes.size());
  if (!was_in_head && parser_.in_head()) head_started_ = now;
  if (!r.ok) {
    // Requests before the error are answered; then the error, then close.
    input_refused_ = true;
    stopped_ = true;
    return {Kind::Refused, r.status, r.reason, {}};
  }
  const std::string_view rest = bytes.substr(r.consumed);
  if (stopped_) {
    if (!rest.empty()) input_refused_ = true;  // bytes after the last request read
    return {Kind::Ended, 0, "", {}};
  }
  if (r.paused) {
    held_.assign(rest);
    return {Kind::Held, 0, "", {}};
  }
  if (r.upgrade) return {Kind::Upgrade, 0, "", rest};
  return {Kind::More, 0, "", {}};
}

Http1Reader::Outcome Http1Reader::resume(Clock::time_point now) {
  if (held_.empty()) return {};
  // Moved out first: feed() may hold a part of it again.
  const std::string input = std::exchange(held_, {});
  auto outcome = feed(input, now);
  // `rest` would point into `input`: an upgrade's is kept here, valid
  // until the next resume().
  if (outcome.kind == Outcome::Kind::Upgrade) {
    upgrade_rest_.assign(outcome.rest);
    outcome.rest = upgrade_rest_;
  }
  return outcome;
}

void Http1Reader::stop() {
  if (stopped_) return;
  // What follows the request being answered is never read as a request.
  stopped_ = true;
  if (!held_.empty() || parser_.mid_message()) input_refused_ = true;
  held_.clear();
  parser_.pause();
}

const char* Http1Reader::overdue(Clock::time_point now, Clock::time_point last_input, const Limits& limits,
                                 bool stopped_reading, bool waiting) const {
  if (parser_.in_head()) {
    if (stopped_reading || now - head_started_ <= limits.header) return nullptr;
    return "the request head did not arrive within EDRI_HEADER_TIMEOUT";
  }
  // A body in progress. Not while this side stopped reading: then the
  // client waits for us.
  if (!parser_.mid_message() || stopped_reading || waiting || now - last_input <= limits.body) return nullptr;
  return "the request body stopped arriving for EDRI_BODY_TIMEOUT";
}

}  // namespace edri::http
