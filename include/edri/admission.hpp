// Admission: what a middleware adds to a request it lets through. It is
// ResponseHeaders (header lines for the eventual response) and, beside
// them, who the caller is: a principal (an identity and its claims) that
// the handler reads as Request::principal and Request::claims(). The same
// on every protocol: an HTTP request, a WebSocket command, a gRPC call.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include <edri/response.hpp>

namespace edri {

class Admission : public ResponseHeaders {
 public:
  // Names the caller; `claims` should be a JSON object (a token's claims,
  // roles). A later middleware may replace both.
  void set_principal(std::string id, nlohmann::json claims = nlohmann::json::object()) {
    principal_ = std::move(id);
    claims_ = std::move(claims);
    has_principal_ = true;
  }
  bool has_principal() const { return has_principal_; }
  const std::string& principal() const { return principal_; }
  const nlohmann::json& claims() const { return claims_; }

  // Everything forgotten: the next request starts with nothing.
  void clear() {
    ResponseHeaders::clear();
    principal_.clear();
    claims_ = nullptr;
    has_principal_ = false;
  }

 private:
  std::string principal_;
  nlohmann::json claims_;
  bool has_principal_ = false;
};

}  // namespace edri
