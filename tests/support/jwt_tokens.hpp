// Keys and JSON Web Tokens made at test time with OpenSSL and libjwt, for
// the tests of edri::JwtVerifier (unit) and of the plugin that uses it
// (integration): PEM text of a key, base64url, a key's JWK, a token
// signed by libjwt.
#pragma once

#include <jwt.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include <edri/jwt.hpp>

namespace edri::test {

using json = nlohmann::json;
using Key = std::unique_ptr<EVP_PKEY, edri::jwt_detail::PkeyFree>;

inline Key rsa_key(unsigned bits = 2048) { return Key(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", std::size_t{bits})); }
inline Key ec_key(const char* curve = "P-256") { return Key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve)); }

inline std::string pem(EVP_PKEY* k, bool is_private) {
  std::unique_ptr<BIO, edri::jwt_detail::BioFree> bio(BIO_new(BIO_s_mem()));
  const int ok = is_private ? PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr)
                            : PEM_write_bio_PUBKEY(bio.get(), k);
  REQUIRE(ok == 1);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

inline std::string b64url(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

inline std::string bn_param(EVP_PKEY* k, const char* name, int pad = 0) {
  BIGNUM* bn = nullptr;
  REQUIRE(EVP_PKEY_get_bn_param(k, name, &bn) == 1);
  std::string bytes(pad ? static_cast<std::size_t>(pad) : static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
  if (pad)
    BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(bytes.data()), pad);
  else
    BN_bn2bin(bn, reinterpret_cast<unsigned char*>(bytes.data()));
  BN_free(bn);
  return bytes;
}

// A JWK of `k`'s public half.
inline json jwk(EVP_PKEY* k, const std::string& kid = {}) {
  json j;
  if (EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA)
    j = {{"kty", "RSA"},
         {"n", b64url(bn_param(k, OSSL_PKEY_PARAM_RSA_N))},
         {"e", b64url(bn_param(k, OSSL_PKEY_PARAM_RSA_E))}};
  else
    j = {{"kty", "EC"},
         {"crv", "P-256"},
         {"x", b64url(bn_param(k, OSSL_PKEY_PARAM_EC_PUB_X, 32))},
         {"y", b64url(bn_param(k, OSSL_PKEY_PARAM_EC_PUB_Y, 32))}};
  if (!kid.empty()) j["kid"] = kid;
  return j;
}

// A token signed by libjwt: `alg` with `key` (a PEM private key, or the
// HS256 secret), these claims and extra header members.
inline std::string sign(jwt_alg_t alg, const std::string& key, const json& claims,
                        const json& header = json::object()) {
  jwt_t* raw = nullptr;
  REQUIRE(jwt_new(&raw) == 0);
  std::unique_ptr<jwt_t, edri::jwt_detail::JwtFree> j(raw);
  REQUIRE(jwt_add_grants_json(j.get(), claims.dump().c_str()) == 0);
  if (!header.empty()) REQUIRE(jwt_add_headers_json(j.get(), header.dump().c_str()) == 0);
  REQUIRE(jwt_set_alg(j.get(), alg, key.empty() ? nullptr : reinterpret_cast<const unsigned char*>(key.data()),
                      static_cast<int>(key.size())) == 0);
  std::unique_ptr<char, edri::jwt_detail::CFree> token(jwt_encode_str(j.get()));
  REQUIRE(token);
  return token.get();
}

inline long now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace edri::test
