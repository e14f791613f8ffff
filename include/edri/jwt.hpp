// Bearer tokens for middleware: JwtVerifier checks a JSON Web Token (RFC
// 7519) from `Authorization: Bearer <token>` (RFC 6750) and names its
// subject the caller (Admission::set_principal), or answers 401.
//
// Opt-in, and the one part of the plugin API that is not self-contained:
// it needs libjwt (Debian libjwt-dev, 1.10) and OpenSSL's libcrypto, so a
// plugin that includes it links edri::jwt instead of (or beside) edri::api;
// out of the tree, `find_package(edri REQUIRED COMPONENTS jwt)`. A plugin
// that does not include it needs neither library.
//
//   auto verify = std::make_shared<edri::JwtVerifier>(edri::JwtVerifier::Options{
//       .algorithm = "RS256", .key_file = "/etc/app/issuer.pem", .audience = "api",
//       .issuer = "https://issuer.example"});
//   r.middleware({"jwt", 1, [verify](const edri::Request& req, edri::Admission& a) {
//                   return verify->admit(req, a);
//                 }});
//
// What is checked (docs/security.md, "JWT bearer tokens"):
//   - the algorithm is the configured one, read from the token's header
//     before any key is touched and again after libjwt verified it: a token
//     signed otherwise is refused, `alg: none` always, and so is the classic
//     confusion of an HS256 token "signed" with an RSA public key;
//   - the signature, by libjwt with the configured key: HS256 a secret (at
//     least 32 bytes, RFC 7518), RS256 an RSA public key (2048 bits or
//     more), ES256 a P-256 public key; from a PEM file (a public key or a
//     certificate; for HS256 the raw secret) or from a JSON Web Key Set
//     (RFC 7517; RSA `n`/`e`, EC P-256 `x`/`y`, `oct` `k`), the token's
//     `kid` choosing the key;
//   - `exp` (required unless require_exp is false) and `nbf`, with
//     `leeway` for clocks that differ; `iss` and `aud` when configured;
//   - a subject: the `principal_claim` (`sub`), a non-empty string.
// Keys are read once, by the constructor, which throws std::runtime_error
// naming the file when one cannot be used: declared at registration, that
// stops start-up. Headers that point at keys elsewhere (`jku`, `x5u`,
// `jwk`) are ignored: only the configured keys verify.
//
// libjwt 1.10 refuses a token whose header has a `typ` other than "JWT"
// (RFC 9068's "at+jwt" included).
#pragma once

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <edri/admission.hpp>
#include <edri/json_depth.hpp>
#include <edri/request.hpp>
#include <edri/response.hpp>

namespace edri {

// What JwtVerifier::verify found: a valid token's subject and claims, or
// why the token is refused (an RFC 6750 error_description: printable
// ASCII, no quotes).
struct JwtResult {
  std::string error;  // empty: valid
  std::string subject;
  nlohmann::json claims = nlohmann::json::object();
  bool valid() const { return error.empty(); }
};

namespace jwt_detail {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const { EVP_PKEY_CTX_free(c); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};
struct ParamBldFree {
  void operator()(OSSL_PARAM_BLD* b) const { OSSL_PARAM_BLD_free(b); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
};
struct JwtFree {
  void operator()(jwt_t* j) const { jwt_free(j); }
};
struct CFree {
  void operator()(char* p) const { std::free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// Base64url without padding (RFC 7515 section 2), strictly: nothing but
// its alphabet. nullopt when `in` is not that.
inline std::optional<std::string> base64url_decode(std::string_view in) {
  if (in.size() % 4 == 1) return std::nullopt;
  std::string b64;
  b64.reserve(in.size() + 3);
  for (const char c : in) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
      b64 += c;
    else if (c == '-')
      b64 += '+';
    else if (c == '_')
      b64 += '/';
    else
      return std::nullopt;
  }
  const std::size_t pad = (4 - b64.size() % 4) % 4;
  b64.append(pad, '=');
  std::string out(b64.size() / 4 * 3, '\0');
  if (b64.empty()) return out;
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  if (n < 0 || static_cast<std::size_t>(n) < pad) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot read it: " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw std::runtime_error(path + ": cannot read it");
  return text;
}

// A public key as SubjectPublicKeyInfo PEM, what libjwt verifies with.
inline std::string to_pem(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key) != 1) {
    ERR_clear_error();
    throw std::runtime_error("cannot write the key as PEM");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

// Why `key` cannot verify `algorithm` ("RS256" or "ES256"); empty if it can.
inline std::string unfit(EVP_PKEY* key, const std::string& algorithm) {
  if (algorithm == "RS256") {
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_RSA) return "not an RSA key, which RS256 needs";
    if (EVP_PKEY_get_bits(key) < 2048)
      return "an RSA key of " + std::to_string(EVP_PKEY_get_bits(key)) + " bits; RS256 needs 2048 or more";
    return {};
  }
  if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return "not an EC key, which ES256 needs";
  char group[64] = {};
  std::size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &len) != 1 ||
      std::string_view(group, len) != "prime256v1") {
    ERR_clear_error();
    return "an EC key not on P-256, which ES256 needs";
  }
  return {};
}

// A PEM public key or certificate.
inline Pkey pem_public_key(const std::string& text) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  Pkey key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) {
    bio.reset(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
    std::unique_ptr<X509, X509Free> cert(bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr);
    if (cert) key.reset(X509_get_pubkey(cert.get()));
  }
  ERR_clear_error();
  return key;
}

// A key built from parameters (EVP_PKEY_fromdata), checked as a public key.
inline Pkey from_params(const char* type, OSSL_PARAM_BLD* bld) {
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    ERR_clear_error();
    return nullptr;
  }
  Pkey key(raw);
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> check(EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr));
  const bool ok = check && EVP_PKEY_public_check(check.get()) == 1;
  ERR_clear_error();
  return ok ? std::move(key) : nullptr;
}

// A JWK member that must be a base64url string.
inline std::string jwk_bytes(const nlohmann::json& jwk, const char* name) {
  const auto it = jwk.find(name);
  if (it == jwk.end() || !it->is_string()) throw std::runtime_error(std::string("no \"") + name + "\" string");
  auto bytes = base64url_decode(it->get<std::string>());
  if (!bytes || bytes->empty()) throw std::runtime_error(std::string("\"") + name + "\" is not base64url");
  return *bytes;
}

inline std::unique_ptr<BIGNUM, BnFree> bignum(const std::string& bytes) {
  return std::unique_ptr<BIGNUM, BnFree>(
      BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()), nullptr));
}

// An RSA JWK's public key (n, e).
inline Pkey rsa_jwk(const nlohmann::json& jwk) {
  const auto n = bignum(jwk_bytes(jwk, "n")), e = bignum(jwk_bytes(jwk, "e"));
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!n || !e || !bld || OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1)
    throw std::runtime_error("cannot build the RSA key");
  Pkey key = from_params("RSA", bld.get());
  if (!key) throw std::runtime_error("not a valid RSA public key");
  return key;
}

// An EC P-256 JWK's public key (x, y: 32 bytes each).
inline Pkey ec_jwk(const nlohmann::json& jwk) {
  const std::string x = jwk_bytes(jwk, "x"), y = jwk_bytes(jwk, "y");
  if (x.size() != 32 || y.size() != 32) throw std::runtime_error("\"x\" and \"y\" must be 32 bytes each for P-256");
  const std::string point = '\x04' + x + y;  // uncompressed (SEC 1)
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld || OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) != 1)
    throw std::runtime_error("cannot build the EC key");
  Pkey key = from_params("EC", bld.get());
  if (!key) throw std::runtime_error("not a point on P-256");
  return key;
}

// A string RFC 6750 allows in a quoted challenge parameter: printable
// ASCII but '"' and '\'.
inline std::string challenge_text(std::string_view s) {
  std::string out;
  for (const char c : s) out += (c >= 0x20 && c <= 0x7e && c != '"' && c != '\\') ? c : '?';
  return out;
}

}  // namespace jwt_detail

class JwtVerifier {
 public:
  struct Options {
    // The one algorithm accepted: "HS256", "RS256" or "ES256".
    std::string algorithm = {};
    // One key: a PEM public key or certificate (RS256, ES256) or the raw
    // secret (HS256; trailing CR/LF removed). Or, instead, a JSON Web Key
    // Set, whose keys for the algorithm are chosen by the token's `kid`.
    std::string key_file = {};
    std::string jwks_file = {};
    // When not empty: `aud` must be it or an array holding it; `iss` must
    // be it.
    std::string audience = {};
    std::string issuer = {};
    // How far the clocks of issuer and server may differ, for exp and nbf.
    std::chrono::seconds leeway{30};
    // A token without `exp` never expires; refused unless this is false.
    bool require_exp = true;
    // The claim that names the caller (a non-empty string).
    std::string principal_claim = "sub";
    // Sent as the challenge's realm when not empty.
    std::string realm = {};
    // How many tokens that verified are remembered (their claims, by the
    // token's exact text), so that a client sending the same token again
    // costs no signature check (libjwt 1.10 reads the PEM key anew for
    // each, some 0.5 ms); time, issuer and audience are checked again on
    // every use. 0: none.
    std::size_t cache_size = 1024;
  };

  // Reads the keys; throws std::runtime_error (naming the file) for a key
  // or key set that cannot verify options.algorithm, or for options that
  // make no sense.
  explicit JwtVerifier(Options options) : o_(std::move(options)) {
    if (o_.algorithm == "HS256")
      alg_ = JWT_ALG_HS256;
    else if (o_.algorithm == "RS256")
      alg_ = JWT_ALG_RS256;
    else if (o_.algorithm == "ES256")
      alg_ = JWT_ALG_ES256;
    else
      throw std::runtime_error("JWT algorithm '" + o_.algorithm + "': only HS256, RS256 and ES256 are supported");
    if (o_.key_file.empty() == o_.jwks_file.empty())
      throw std::runtime_error("JWT verifier: name exactly one of key_file and jwks_file");
    if (o_.leeway.count() < 0) throw std::runtime_error("JWT verifier: a negative leeway");
    if (o_.principal_claim.empty()) throw std::runtime_error("JWT verifier: an empty principal_claim");
    if (jwt_detail::challenge_text(o_.realm) != o_.realm)
      throw std::runtime_error("JWT verifier: the realm holds a quote, a backslash or a control character");
    if (!o_.key_file.empty())
      load_key_file();
    else
      load_jwks();
  }

  const Options& options() const { return o_; }

  // Checks `token` (the compact form, three base64url parts) at `now`.
  JwtResult verify(std::string_view token,
                   std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const {
    JwtResult r;
    r.error = check(token, now, r);
    ERR_clear_error();  // the listener's TLS reads OpenSSL's error queue
    if (!r.valid()) {
      r.subject.clear();
      r.claims = nlohmann::json::object();
    }
    return r;
  }

  // For MiddlewareDecl::on_request: the request's `Authorization: Bearer`
  // token verified, its subject and claims named the caller, and nullopt;
  // otherwise a 401 (refusal()). Over WebSocket, middleware sees each
  // command with the handshake's headers, so a token that expires while
  // the socket is open stops its commands from then on.
  std::optional<Response> admit(const Request& req, Admission& admission) const {
    const auto credentials = bearer_token(req);
    if (!credentials) return refusal({});
    auto r = verify(*credentials);
    if (!r.valid()) return refusal(r.error);
    admission.set_principal(std::move(r.subject), std::move(r.claims));
    return std::nullopt;
  }

  // The token of `Authorization: Bearer <token>`, or nullopt when the
  // request has none (no such header, or another scheme). An empty token
  // is returned as such (and refused by verify as malformed).
  static std::optional<std::string_view> bearer_token(const Request& req) {
    const auto h = req.header("authorization");
    if (!h) return std::nullopt;
    std::string_view v = *h;
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    constexpr std::string_view scheme = "bearer";
    if (v.size() < scheme.size()) return std::nullopt;
    for (std::size_t i = 0; i < scheme.size(); ++i)
      if ((v[i] | 0x20) != scheme[i]) return std::nullopt;
    v.remove_prefix(scheme.size());
    if (!v.empty() && v.front() != ' ' && v.front() != '\t') return std::nullopt;  // "Bearerx"
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
    return v;
  }

  // The 401 answer (RFC 6750 section 3): `WWW-Authenticate: Bearer`, with
  // error="invalid_token" and `error_description` when there is one (none
  // when the request had no token at all), and the same as a problem's
  // detail.
  Response refusal(std::string_view error_description) const {
    std::string challenge = "Bearer";
    std::string sep = " ";
    if (!o_.realm.empty()) {
      challenge += sep + "realm=\"" + o_.realm + "\"";
      sep = ", ";
    }
    std::string detail = "a bearer token is needed";
    if (!error_description.empty()) {
      detail = jwt_detail::challenge_text(error_description);
      challenge += sep + "error=\"invalid_token\", error_description=\"" + detail + "\"";
    }
    return Response::problem(Status::Unauthorized, "Unauthorized", detail).header("WWW-Authenticate", challenge);
  }

 private:
  struct Key {
    std::string kid;       // empty: none (a key file's, or a JWK without one)
    std::string material;  // PEM public key, or the HS256 secret
  };

  static constexpr std::size_t kMaxToken = 16384;
  static constexpr std::size_t kMinSecret = 32;  // RFC 7518 section 3.2

  // Why the token is refused, or empty; fills `out` as it goes.
  std::string check(std::string_view token, std::chrono::system_clock::time_point now, JwtResult& out) const {
    if (token.empty()) return "malformed token: empty";
    if (token.size() > kMaxToken) return "malformed token: too long";
    if (o_.cache_size > 0) {
      std::unique_lock lock(cache_mutex_);
      if (const auto it = cache_.find(std::string(token)); it != cache_.end()) {
        nlohmann::json claims = it->second;
        lock.unlock();
        return check_claims(std::move(claims), now, out);
      }
    }
    const auto dot1 = token.find('.');
    const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
      return "malformed token: not three parts";
    const auto header_text = jwt_detail::base64url_decode(token.substr(0, dot1));
    if (!header_text || json_nests_deeper_than(*header_text, 4)) return "malformed token: bad header";
    const auto header = nlohmann::json::parse(*header_text, nullptr, false);
    if (header.is_discarded() || !header.is_object()) return "malformed token: bad header";

    // The algorithm, before any key is used.
    const auto alg = header.find("alg");
    if (alg == header.end() || !alg->is_string()) return "malformed token: no algorithm";
    const std::string alg_name = alg->get<std::string>();
    std::string lower = alg_name;
    for (char& c : lower) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    if (lower == "none") return "unsigned tokens (alg none) are refused";
    if (alg_name != o_.algorithm)
      return "algorithm " + jwt_detail::challenge_text(alg_name.substr(0, 16)) + " refused: only " + o_.algorithm +
             " is accepted";
    if (header.contains("crit")) return "unsupported critical header parameters (crit)";
    const auto typ = header.find("typ");
    if (typ != header.end()) {
      const bool jwt_typ = typ->is_string() && typ->get<std::string>().size() == 3 &&
                           (typ->get<std::string>()[0] | 0x20) == 'j' && (typ->get<std::string>()[1] | 0x20) == 'w' &&
                           (typ->get<std::string>()[2] | 0x20) == 't';
      if (!jwt_typ) return "unsupported token type (typ)";
    }

    // The key: the only one, or the one the token's kid names.
    const Key* key = nullptr;
    const auto kid = header.find("kid");
    if (kid != header.end() && !kid->is_string()) return "malformed token: kid is not a string";
    if (!o_.key_file.empty()) {
      key = &keys_.front();
    } else if (kid != header.end()) {
      for (const auto& k : keys_)
        if (!k.kid.empty() && k.kid == kid->get<std::string>()) key = &k;
      if (!key) return "unknown key id (kid)";
    } else {
      if (keys_.size() != 1) return "the token names no key (kid)";
      key = &keys_.front();
    }

    // The signature, by libjwt; the algorithm again, as libjwt read it.
    const std::string compact(token);
    jwt_t* raw = nullptr;
    const int rc = jwt_decode(&raw, compact.c_str(), reinterpret_cast<const unsigned char*>(key->material.data()),
                              static_cast<int>(key->material.size()));
    std::unique_ptr<jwt_t, jwt_detail::JwtFree> jwt(raw);
    if (rc != 0 || !jwt) return "invalid signature";
    if (jwt_get_alg(jwt.get()) != alg_) return "algorithm refused: only " + o_.algorithm + " is accepted";

    // The claims.
    std::unique_ptr<char, jwt_detail::CFree> grants(jwt_get_grants_json(jwt.get(), nullptr));
    if (!grants) return "malformed token: no claims";
    const std::string_view grants_text(grants.get());
    if (json_nests_deeper_than(grants_text, kDefaultMaxJsonDepth)) return "malformed token: claims nest too deep";
    auto claims = nlohmann::json::parse(grants_text, nullptr, false);
    if (claims.is_discarded() || !claims.is_object()) return "malformed token: claims are not an object";
    auto why = check_claims(claims, now, out);
    if (why.empty() && o_.cache_size > 0) {
      std::lock_guard lock(cache_mutex_);
      if (cache_.size() >= o_.cache_size) cache_.erase(cache_.begin());
      cache_.emplace(compact, out.claims);
    }
    return why;
  }

  // The checks of the claims, which depend on the time: every use of a
  // token, remembered or not.
  std::string check_claims(nlohmann::json claims, std::chrono::system_clock::time_point now, JwtResult& out) const {
    const double t = std::chrono::duration<double>(now.time_since_epoch()).count();
    const double leeway = static_cast<double>(o_.leeway.count());
    if (const auto exp = claims.find("exp"); exp != claims.end()) {
      if (!exp->is_number()) return "malformed token: exp is not a NumericDate";
      if (t >= exp->get<double>() + leeway) return "the token expired";
    } else if (o_.require_exp) {
      return "the token has no expiry (exp)";
    }
    if (const auto nbf = claims.find("nbf"); nbf != claims.end()) {
      if (!nbf->is_number()) return "malformed token: nbf is not a NumericDate";
      if (t + leeway < nbf->get<double>()) return "the token is not valid yet (nbf)";
    }
    if (!o_.issuer.empty()) {
      const auto iss = claims.find("iss");
      if (iss == claims.end() || !iss->is_string() || iss->get<std::string>() != o_.issuer) return "wrong issuer (iss)";
    }
    if (!o_.audience.empty()) {
      const auto aud = claims.find("aud");
      bool ok = false;
      if (aud != claims.end() && aud->is_string()) ok = aud->get<std::string>() == o_.audience;
      if (aud != claims.end() && aud->is_array())
        for (const auto& a : *aud) ok = ok || (a.is_string() && a.get<std::string>() == o_.audience);
      if (!ok) return "wrong audience (aud)";
    }
    const auto sub = claims.find(o_.principal_claim);
    if (sub == claims.end() || !sub->is_string() || sub->get<std::string>().empty())
      return "the token has no subject (" + jwt_detail::challenge_text(o_.principal_claim) + ")";
    out.subject = sub->get<std::string>();
    out.claims = std::move(claims);
    return {};
  }

  void load_key_file() {
    const std::string& path = o_.key_file;
    std::string text;
    try {
      text = jwt_detail::read_file(path);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("JWT key file ") + e.what());
    }
    if (alg_ == JWT_ALG_HS256) {
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
      if (text.size() < kMinSecret)
        throw std::runtime_error("JWT key file " + path + ": an HS256 secret of " + std::to_string(text.size()) +
                                 " bytes; at least " + std::to_string(kMinSecret) + " are needed");
      keys_.push_back({{}, std::move(text)});
      return;
    }
    const auto key = jwt_detail::pem_public_key(text);
    if (!key) throw std::runtime_error("JWT key file " + path + ": not a PEM public key or certificate");
    if (const auto why = jwt_detail::unfit(key.get(), o_.algorithm); !why.empty())
      throw std::runtime_error("JWT key file " + path + ": " + why);
    keys_.push_back({{}, jwt_detail::to_pem(key.get())});
  }

  void load_jwks() {
    const std::string& path = o_.jwks_file;
    auto fail = [&](const std::string& why) { return std::runtime_error("JWKS file " + path + ": " + why); };
    std::string text;
    try {
      text = jwt_detail::read_file(path);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("JWKS file ") + e.what());
    }
    const auto set = nlohmann::json::parse(text, nullptr, false);
    if (set.is_discarded()) throw fail("not JSON");
    if (!set.is_object() || !set.contains("keys") || !set["keys"].is_array())
      throw fail("not a JSON Web Key Set (an object with a \"keys\" array)");
    std::size_t index = 0;
    for (const auto& jwk : set["keys"]) {
      const std::string where = "key " + std::to_string(index++);
      if (!jwk.is_object()) throw fail(where + " is not an object");
      auto member = [&](const char* name) -> std::string {
        const auto it = jwk.find(name);
        if (it == jwk.end()) return {};
        if (!it->is_string()) throw fail(where + ": \"" + name + "\" is not a string");
        return it->get<std::string>();
      };
      const std::string kty = member("kty"), kid = member("kid"), use = member("use"), alg = member("alg"),
                        crv = member("crv");
      // Keys for something else (encryption, another algorithm) are not ours.
      if (!use.empty() && use != "sig") continue;
      if (!alg.empty() && alg != o_.algorithm) continue;
      const std::string named = kid.empty() ? where : where + " (kid " + kid + ")";
      try {
        if (alg_ == JWT_ALG_HS256 && kty == "oct") {
          std::string secret = jwt_detail::jwk_bytes(jwk, "k");
          if (secret.size() < kMinSecret)
            throw std::runtime_error("an HS256 secret of " + std::to_string(secret.size()) + " bytes; at least " +
                                     std::to_string(kMinSecret) + " are needed");
          add_key(kid, std::move(secret), fail);
        } else if (alg_ == JWT_ALG_RS256 && kty == "RSA") {
          const auto key = jwt_detail::rsa_jwk(jwk);
          if (const auto why = jwt_detail::unfit(key.get(), o_.algorithm); !why.empty()) throw std::runtime_error(why);
          add_key(kid, jwt_detail::to_pem(key.get()), fail);
        } else if (alg_ == JWT_ALG_ES256 && kty == "EC" && crv == "P-256") {
          add_key(kid, jwt_detail::to_pem(jwt_detail::ec_jwk(jwk).get()), fail);
        }
      } catch (const std::runtime_error& e) {
        if (std::string_view(e.what()).rfind("JWKS file ", 0) == 0) throw;
        throw fail(named + ": " + e.what());
      }
    }
    if (keys_.empty()) throw fail("no key for " + o_.algorithm + " in it");
  }

  template <class Fail>
  void add_key(const std::string& kid, std::string material, Fail& fail) {
    for (const auto& k : keys_)
      if (k.kid == kid) throw fail(kid.empty() ? "several keys without a kid" : "kid " + kid + " appears twice");
    keys_.push_back({kid, std::move(material)});
  }

  Options o_;
  jwt_alg_t alg_ = JWT_ALG_INVAL;
  std::vector<Key> keys_;
  // Tokens that verified, by their text: their claims.
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, nlohmann::json> cache_;
};

}  // namespace edri
