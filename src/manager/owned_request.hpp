// OwnedRequest: a Request whose views point into storage of its own, not
// into the channel record the manager reads. A coroutine handler is given
// one: it stays valid while the handler waits, after the record is gone.
#pragma once

#include <string>

#include <edri/request.hpp>

namespace edri::manager {

class OwnedRequest {
 public:
  // Copies every byte `from` views (body included) into one buffer.
  explicit OwnedRequest(const Request& from) { assign(from); }
  // The same again, into the buffer and vectors this one already has: a
  // spare one is used again without allocating.
  void assign(const Request& from);
  // The views point into this object: it stays where it is made.
  OwnedRequest(const OwnedRequest&) = delete;
  OwnedRequest& operator=(const OwnedRequest&) = delete;

  const Request& request() const { return request_; }
  // Bytes held: what a waiting request costs, besides its frame.
  std::size_t bytes() const { return storage_.capacity(); }

 private:
  std::string storage_;
  Request request_;
};

}  // namespace edri::manager
