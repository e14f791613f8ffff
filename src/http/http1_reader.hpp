// Http1Reader: the reading side of an HTTP/1.1 connection, with no I/O
// (decision 0035). What the client sends goes to the request parser; what
// comes past a request the reader was told to stop after (a full
// pipeline) is held until reading resumes; after the last request to be
// read (a refused one, one that asked to close) nothing more is parsed,
// and whether the client had sent more is remembered (its close should
// linger). It keeps the clock of the request head in progress, so the
// header and body timeouts are answered here too. The connection holding
// it reads, writes and waits; the fuzz target and the unit tests drive it
// alone.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "http/request_parser.hpp"

namespace edri::http {

class Http1Reader final {
 public:
  using Clock = std::chrono::steady_clock;

  // What one feed() came to.
  struct Outcome {
    enum class Kind {
      More,     // read on
      Held,     // a pause was asked during a request: the rest is held (resume())
      Ended,    // reading stopped (stop()): nothing more is read
      Refused,  // the input broke the protocol or a limit: answer `status`, then close
      Upgrade,  // the request just delivered asked for an upgrade: `rest` follows it
    };
    // Upgrade: the bytes after the upgrade request, within the bytes fed
    // (or, from resume(), held by the reader).
    Kind kind = Kind::More;
    int status = 0;
    const char* reason = "";
    std::string_view rest;
  };
  // The time limits of a request in progress (EDRI_HEADER_TIMEOUT,
  // EDRI_BODY_TIMEOUT).
  struct Limits {
    Clock::duration header;
    Clock::duration body;
  };

  Http1Reader(ParserLimits limits, RequestParser::OnRequest on_request, RequestParser::OnContinue on_continue,
              RequestParser::OnSpill on_spill);

  // Bytes the client sent, at `now`.
  Outcome feed(std::string_view bytes, Clock::time_point now);
  // Input held since a pause, fed again (More when none is held). An
  // Upgrade's `rest` stays valid until the next resume().
  Outcome resume(Clock::time_point now);
  // Called while a request is delivered: stop after it (Held).
  void pause() { parser_.pause(); }
  // Reads no request after the one being answered (RFC 9112 9.6).
  void stop();
  // The upgrade was not taken: what follows is the next request.
  void decline_upgrade() { parser_.resume_after_upgrade(); }

  // The client sent what will not be read: a request begun, bytes held or
  // past the last request, or input refused. Its close should linger, so
  // that it reads its answer instead of a reset.
  bool input_left() const { return input_refused_ || parser_.mid_message(); }
  bool stopped() const { return stopped_; }
  bool mid_message() const { return parser_.mid_message(); }
  // A request was read: the keep-alive timeout applies between requests,
  // not the header timeout.
  bool served() const { return served_; }
  void mark_served() { served_ = true; }
  // Why the request in progress is answered 408, or null when it is not
  // overdue: a head not whole within limits.header of its first byte, or
  // a body with nothing new for limits.body since `last_input`. `waiting`:
  // this side is not reading (paused or stopped), so the client waits for
  // us, and no body timeout runs.
  const char* overdue(Clock::time_point now, Clock::time_point last_input, const Limits& limits, bool stopped_reading,
                      bool waiting) const;

 private:
  RequestParser parser_;
  std::string held_;          // bytes read past the request the parser paused after
  std::string upgrade_rest_;  // what followed an upgrade request resume() fed
  Clock::time_point head_started_{};
  bool stopped_ = false;
  bool input_refused_ = false;
  bool served_ = false;
};

}  // namespace edri::http
