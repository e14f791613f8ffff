#include "manager/owned_request.hpp"

namespace edri::manager {

namespace {

// Calls `f` on every view of `r`.
template <class F>
void for_each_view(Request& r, F&& f) {
  for (std::string_view* v : {&r.path, &r.event, &r.protocol, &r.client_address, &r.principal, &r.claims_json, &r.id,
                              &r.traceparent, &r.tracestate, &r.query, &r.body, &r.content_type, &r.body_file})
    f(*v);
  for (auto* params : {&r.path_params, &r.query_params, &r.headers, &r.cookies})
    for (Param& p : *params) f(p.name), f(p.value);
  for (FormPart& part : r.form) f(part.name), f(part.filename), f(part.content_type), f(part.data);
}

}  // namespace

void OwnedRequest::assign(const Request& from) {
  request_ = from;
  std::size_t total = 0;
  for_each_view(request_, [&](std::string_view v) { total += v.size(); });
  // Reserved once: the views taken below point into it, so it must never
  // grow again.
  storage_.clear();
  storage_.reserve(total);
  for_each_view(request_, [&](std::string_view& v) {
    const std::size_t at = storage_.size();
    storage_.append(v);
    v = std::string_view(storage_.data() + at, v.size());
  });
}

}  // namespace edri::manager
