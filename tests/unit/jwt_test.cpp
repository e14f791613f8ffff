// edri::JwtVerifier (include/edri/jwt.hpp): keys and tokens are made here,
// at test time, with OpenSSL and libjwt, so nothing below is a recorded
// answer that could not fail.
#include <jwt.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include <edri/jwt.hpp>

#include "support/jwt_tokens.hpp"
#include "support/test_helpers.hpp"

using edri::JwtVerifier;
using nlohmann::json;
using namespace edri::test;

namespace {

// A token signed by OpenSSL alone (no libjwt): RS256 (PKCS #1 v1.5) or
// ES256 (the JOSE form of ECDSA, r || s, 32 bytes each).
std::string sign_openssl(const std::string& alg, EVP_PKEY* k, const json& claims) {
  const std::string input = b64url(json{{"alg", alg}, {"typ", "JWT"}}.dump()) + "." + b64url(claims.dump());
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  REQUIRE(EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, k) == 1);
  std::size_t len = 0;
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  REQUIRE(EVP_DigestSign(ctx.get(), nullptr, &len, in, input.size()) == 1);
  std::string sig(len, '\0');
  REQUIRE(EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, in, input.size()) == 1);
  sig.resize(len);
  if (alg == "ES256") {
    const auto* der = reinterpret_cast<const unsigned char*>(sig.data());
    ECDSA_SIG* s = d2i_ECDSA_SIG(nullptr, &der, static_cast<long>(sig.size()));
    REQUIRE(s);
    std::string rs(64, '\0');
    BN_bn2binpad(ECDSA_SIG_get0_r(s), reinterpret_cast<unsigned char*>(rs.data()), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(s), reinterpret_cast<unsigned char*>(rs.data()) + 32, 32);
    ECDSA_SIG_free(s);
    sig = rs;
  }
  return input + "." + b64url(sig);
}

// A token from parts of our own making, its signature whatever is given.
std::string assemble(const json& header, const json& claims, const std::string& signature) {
  return b64url(header.dump()) + "." + b64url(claims.dump()) + "." + signature;
}

json claims(const std::string& sub = "alice") {
  return {{"sub", sub}, {"exp", now_s() + 300}, {"role", "writer"}, {"aud", "api"}, {"iss", "https://issuer.test"}};
}

const std::string kSecret = "0123456789abcdef0123456789abcdef-secret";

struct Keys {
  edri::test::TempDir dir;
  Key rsa = rsa_key();
  Key ec = ec_key();
  std::string file(const std::string& name, const std::string& content) const {
    dir.write(name, content);
    return (dir.path / name).string();
  }
  JwtVerifier verifier(const std::string& alg, JwtVerifier::Options o = {}) const {
    o.algorithm = alg;
    if (o.key_file.empty() && o.jwks_file.empty())
      o.key_file = alg == "HS256"   ? file("secret", kSecret + "\n")
                   : alg == "RS256" ? file("rsa.pem", pem(rsa.get(), false))
                                    : file("ec.pem", pem(ec.get(), false));
    return JwtVerifier(o);
  }
  std::string token(const std::string& alg, const json& c = claims(), const json& header = json::object()) const {
    if (alg == "HS256") return sign(JWT_ALG_HS256, kSecret, c, header);
    if (alg == "RS256") return sign(JWT_ALG_RS256, pem(rsa.get(), true), c, header);
    return sign(JWT_ALG_ES256, pem(ec.get(), true), c, header);
  }
};

std::string error_of(const JwtVerifier& v, const std::string& token) { return v.verify(token).error; }

// What middleware sees: a request with these headers.
struct FakeRequest {
  std::vector<std::pair<std::string, std::string>> owned;
  edri::Request req;
  explicit FakeRequest(std::vector<std::pair<std::string, std::string>> headers) : owned(std::move(headers)) {
    req.protocol = "http/1.1";
    for (const auto& [n, v] : owned) req.headers.push_back({n, v});
  }
};

std::string header_of(const edri::Response& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return {};
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

}  // namespace

TEST_CASE("jwt: valid HS256, RS256 and ES256 tokens are accepted, naming the subject with the claims", "[jwt]") {
  Keys keys;
  for (const std::string alg : {"HS256", "RS256", "ES256"}) {
    INFO(alg);
    const auto v = keys.verifier(alg, {.audience = "api", .issuer = "https://issuer.test"});
    const auto r = v.verify(keys.token(alg, claims("alice")));
    CHECK(r.error == "");
    CHECK(r.valid());
    CHECK(r.subject == "alice");
    CHECK(r.claims["role"] == "writer");
    CHECK(r.claims["iss"] == "https://issuer.test");

    // As middleware: the caller named, nothing answered.
    FakeRequest fake({{"authorization", "Bearer " + keys.token(alg, claims("bob"))}});
    edri::Admission admission;
    CHECK_FALSE(v.admit(fake.req, admission));
    CHECK(admission.has_principal());
    CHECK(admission.principal() == "bob");
    CHECK(admission.claims()["role"] == "writer");
    CHECK(admission.claims()["sub"] == "bob");
  }
}

TEST_CASE("jwt: tokens signed by OpenSSL alone (no libjwt) verify: the standard RS256 and ES256 forms", "[jwt]") {
  Keys keys;
  CHECK(error_of(keys.verifier("RS256"), sign_openssl("RS256", keys.rsa.get(), claims())) == "");
  CHECK(error_of(keys.verifier("ES256"), sign_openssl("ES256", keys.ec.get(), claims())) == "");
  // And one with another key does not.
  const auto other = ec_key();
  CHECK(error_of(keys.verifier("ES256"), sign_openssl("ES256", other.get(), claims())) == "invalid signature");
}

TEST_CASE("jwt: a token signed with another key, or altered, is refused", "[jwt]") {
  Keys keys;
  const auto other_rsa = rsa_key();
  const auto other_ec = ec_key();
  CHECK(error_of(keys.verifier("RS256"), sign(JWT_ALG_RS256, pem(other_rsa.get(), true), claims())) ==
        "invalid signature");
  CHECK(error_of(keys.verifier("ES256"), sign(JWT_ALG_ES256, pem(other_ec.get(), true), claims())) ==
        "invalid signature");
  CHECK(error_of(keys.verifier("HS256"), sign(JWT_ALG_HS256, kSecret + "x", claims())) == "invalid signature");
  // The claims changed after signing (sub: alice -> admin).
  for (const std::string alg : {"HS256", "RS256", "ES256"}) {
    INFO(alg);
    const std::string good = keys.token(alg);
    const auto dot1 = good.find('.'), dot2 = good.rfind('.');
    json changed = claims("admin");
    const std::string forged = good.substr(0, dot1) + "." + b64url(changed.dump()) + good.substr(dot2);
    CHECK(error_of(keys.verifier(alg), forged) == "invalid signature");
    CHECK(error_of(keys.verifier(alg), good) == "");
  }
}

TEST_CASE("jwt: the configured algorithm is pinned: alg none, another alg and the HS256 confusion are refused",
          "[jwt]") {
  Keys keys;
  const auto rs = keys.verifier("RS256");
  const std::string public_pem = pem(keys.rsa.get(), false);
  // The classic confusion: an HS256 token whose "secret" is the server's
  // RSA public key, which an attacker knows. libjwt alone, given that key,
  // accepts it (which is what makes the attack real) ...
  const std::string confused = sign(JWT_ALG_HS256, public_pem, claims("mallory"));
  jwt_t* raw = nullptr;
  const int libjwt_alone = jwt_decode(&raw, confused.c_str(), reinterpret_cast<const unsigned char*>(public_pem.data()),
                                      static_cast<int>(public_pem.size()));
  jwt_free(raw);
  CHECK(libjwt_alone == 0);
  // ... the verifier, pinned to RS256, does not.
  CHECK(error_of(rs, confused) == "algorithm HS256 refused: only RS256 is accepted");

  // Unsigned tokens: libjwt's own, and hand-made ones with a signature part.
  CHECK(error_of(rs, sign(JWT_ALG_NONE, "", claims())) == "unsigned tokens (alg none) are refused");
  CHECK(error_of(rs, assemble({{"alg", "none"}}, claims(), "")) == "unsigned tokens (alg none) are refused");
  CHECK(error_of(rs, assemble({{"alg", "none"}}, claims(), "c2ln")) == "unsigned tokens (alg none) are refused");
  CHECK(error_of(keys.verifier("HS256"), assemble({{"alg", "None"}}, claims(), "")) ==
        "unsigned tokens (alg none) are refused");
  CHECK(error_of(keys.verifier("HS256"), assemble({{"alg", "nOnE"}}, claims(), "")) ==
        "unsigned tokens (alg none) are refused");
  // A header without alg, or with one that is not a string.
  CHECK(error_of(rs, assemble({{"typ", "JWT"}}, claims(), "c2ln")) == "malformed token: no algorithm");
  CHECK(error_of(rs, assemble({{"alg", 1}}, claims(), "c2ln")) == "malformed token: no algorithm");

  // Each verifier takes its own algorithm only, even with a valid signature
  // of another.
  CHECK(error_of(rs, keys.token("ES256")) == "algorithm ES256 refused: only RS256 is accepted");
  CHECK(error_of(keys.verifier("ES256"), keys.token("RS256")) == "algorithm RS256 refused: only ES256 is accepted");
  CHECK(error_of(keys.verifier("HS256"), keys.token("RS256")) == "algorithm RS256 refused: only HS256 is accepted");
  CHECK(error_of(rs, sign(JWT_ALG_RS512, pem(keys.rsa.get(), true), claims())) ==
        "algorithm RS512 refused: only RS256 is accepted");
  // Critical header parameters this verifier does not know.
  CHECK(error_of(keys.verifier("HS256"), keys.token("HS256", claims(), {{"crit", {"exp"}}, {"x", 1}})) ==
        "unsupported critical header parameters (crit)");
}

TEST_CASE("jwt: exp and nbf are checked with the configured leeway", "[jwt]") {
  Keys keys;
  const auto v = keys.verifier("ES256", {.leeway = std::chrono::seconds(30)});
  const long now = now_s();
  auto with = [&](json extra) {
    json c = {{"sub", "alice"}};
    c.update(extra);
    return keys.token("ES256", c);
  };
  CHECK(error_of(v, with({{"exp", now + 60}})) == "");
  CHECK(error_of(v, with({{"exp", now - 10}})) == "");  // within the leeway
  CHECK(error_of(v, with({{"exp", now - 120}})) == "the token expired");
  CHECK(error_of(v, with({{"exp", now + 60}, {"nbf", now + 10}})) == "");  // within the leeway
  CHECK(error_of(v, with({{"exp", now + 600}, {"nbf", now + 120}})) == "the token is not valid yet (nbf)");
  CHECK(error_of(v, with({{"exp", 1.5e12}})) == "");  // a NumericDate may be fractional
  CHECK(error_of(v, with({{"exp", std::to_string(now + 60)}})) == "malformed token: exp is not a NumericDate");
  CHECK(error_of(v, with({{"exp", now + 60}, {"nbf", "soon"}})) == "malformed token: nbf is not a NumericDate");
  // The boundary, at a fixed `now`: valid until exp + leeway, not at it.
  const std::string t = with({{"exp", 2000000000}, {"nbf", 1999999000}});
  using std::chrono::seconds;
  const std::chrono::system_clock::time_point at{};
  CHECK(v.verify(t, at + seconds(2000000029)).valid());
  CHECK(v.verify(t, at + seconds(2000000030)).error == "the token expired");
  CHECK(v.verify(t, at + seconds(1999998970)).valid());
  CHECK(v.verify(t, at + seconds(1999998969)).error == "the token is not valid yet (nbf)");
  // No leeway: exactly exp is too late.
  const auto strict = keys.verifier("ES256", {.leeway = std::chrono::seconds(0)});
  CHECK(strict.verify(t, at + seconds(1999999999)).valid());
  CHECK(strict.verify(t, at + seconds(2000000000)).error == "the token expired");
  // No exp: refused unless the configuration allows it.
  CHECK(error_of(v, with(json::object())) == "the token has no expiry (exp)");
  CHECK(error_of(keys.verifier("ES256", {.require_exp = false}), with(json::object())) == "");
}

TEST_CASE("jwt: a token remembered after it verified is still checked for time, and only its exact text is", "[jwt]") {
  Keys keys;
  for (const std::size_t cache_size : {std::size_t{0}, std::size_t{1}, std::size_t{1024}}) {
    INFO(cache_size);
    const auto v = keys.verifier("RS256", {.leeway = std::chrono::seconds(0), .cache_size = cache_size});
    using std::chrono::seconds;
    const std::chrono::system_clock::time_point at{};
    const std::string t = keys.token("RS256", {{"sub", "alice"}, {"exp", 2000000000}, {"nbf", 1999999000}});
    for (int round = 0; round < 2; ++round) {
      CHECK(v.verify(t, at + seconds(1999999500)).subject == "alice");
      CHECK(v.verify(t, at + seconds(2000000000)).error == "the token expired");
      CHECK(v.verify(t, at + seconds(1999998000)).error == "the token is not valid yet (nbf)");
      CHECK(v.verify(t, at + seconds(1999999500)).claims["exp"] == 2000000000);
    }
    // The same claims, another (broken) signature: verified, and refused.
    std::string altered = t;
    altered[altered.size() - 5] = altered[altered.size() - 5] == 'A' ? 'B' : 'A';
    CHECK(v.verify(altered, at + seconds(1999999500)).error == "invalid signature");
    // A second token pushes the first out of a cache of one; both still verify.
    const std::string t2 = keys.token("RS256", {{"sub", "bob"}, {"exp", 2000000000}});
    CHECK(v.verify(t2, at + seconds(1999999500)).subject == "bob");
    CHECK(v.verify(t, at + seconds(1999999500)).subject == "alice");
  }
}

TEST_CASE("jwt: aud and iss are checked when configured", "[jwt]") {
  Keys keys;
  const auto v = keys.verifier("HS256", {.audience = "api", .issuer = "https://issuer.test"});
  auto with = [&](json extra) {
    json c = {{"sub", "alice"}, {"exp", now_s() + 60}};
    c.update(extra);
    return keys.token("HS256", c);
  };
  CHECK(error_of(v, with({{"aud", "api"}, {"iss", "https://issuer.test"}})) == "");
  CHECK(error_of(v, with({{"aud", {"other", "api"}}, {"iss", "https://issuer.test"}})) == "");
  CHECK(error_of(v, with({{"aud", "apis"}, {"iss", "https://issuer.test"}})) == "wrong audience (aud)");
  CHECK(error_of(v, with({{"aud", {"other"}}, {"iss", "https://issuer.test"}})) == "wrong audience (aud)");
  CHECK(error_of(v, with({{"iss", "https://issuer.test"}})) == "wrong audience (aud)");
  CHECK(error_of(v, with({{"aud", "api"}, {"iss", "https://evil.test"}})) == "wrong issuer (iss)");
  CHECK(error_of(v, with({{"aud", "api"}})) == "wrong issuer (iss)");
  // Not configured: not checked.
  CHECK(error_of(keys.verifier("HS256"), with({{"aud", "anything"}, {"iss", "anyone"}})) == "");
  // The subject, by default `sub`, or the claim configured.
  CHECK(error_of(keys.verifier("HS256"), keys.token("HS256", {{"exp", now_s() + 60}})) ==
        "the token has no subject (sub)");
  CHECK(error_of(keys.verifier("HS256"), keys.token("HS256", {{"exp", now_s() + 60}, {"sub", ""}})) ==
        "the token has no subject (sub)");
  const auto by_client = keys.verifier("HS256", {.principal_claim = "client_id"});
  const auto r = by_client.verify(keys.token("HS256", {{"exp", now_s() + 60}, {"client_id", "svc-1"}}));
  CHECK(r.subject == "svc-1");
}

TEST_CASE("jwt: keys from a JSON Web Key Set, chosen by the token's kid", "[jwt]") {
  Keys keys;
  const auto second = rsa_key();
  const json set = {{"keys",
                     {jwk(keys.rsa.get(), "a"), jwk(second.get(), "b"), jwk(keys.ec.get(), "e"),
                      // another use, another algorithm: not RS256 signing keys
                      json{{"kty", "RSA"}, {"kid", "enc"}, {"use", "enc"}, {"n", "AQAB"}, {"e", "AQAB"}},
                      json{{"kty", "RSA"}, {"kid", "ps"}, {"alg", "PS256"}, {"n", "AQAB"}, {"e", "AQAB"}}}}};
  const auto rs = keys.verifier("RS256", {.jwks_file = keys.file("jwks.json", set.dump())});
  const std::string second_pem = pem(second.get(), true);
  CHECK(error_of(rs, sign(JWT_ALG_RS256, second_pem, claims(), {{"kid", "b"}})) == "");
  CHECK(error_of(rs, keys.token("RS256", claims(), {{"kid", "a"}})) == "");
  // The kid picks the key: key b's signature under kid a does not verify.
  CHECK(error_of(rs, sign(JWT_ALG_RS256, second_pem, claims(), {{"kid", "a"}})) == "invalid signature");
  CHECK(error_of(rs, sign(JWT_ALG_RS256, second_pem, claims(), {{"kid", "zzz"}})) == "unknown key id (kid)");
  CHECK(error_of(rs, sign(JWT_ALG_RS256, second_pem, claims(), {{"kid", "enc"}})) == "unknown key id (kid)");
  CHECK(error_of(rs, sign(JWT_ALG_RS256, second_pem, claims())) == "the token names no key (kid)");

  // EC P-256 from x and y; a set of one key needs no kid.
  const auto es =
      keys.verifier("ES256", {.jwks_file = keys.file("ec.json", json{{"keys", {jwk(keys.ec.get())}}}.dump())});
  CHECK(error_of(es, keys.token("ES256")) == "");
  CHECK(error_of(es, keys.token("ES256", claims(), {{"kid", "x"}})) == "unknown key id (kid)");
  CHECK(error_of(es, sign_openssl("ES256", keys.ec.get(), claims())) == "");

  // HS256 from an `oct` key.
  const json oct = {{"keys", {{{"kty", "oct"}, {"kid", "s"}, {"k", b64url(kSecret)}}}}};
  const auto hs = keys.verifier("HS256", {.jwks_file = keys.file("oct.json", oct.dump())});
  CHECK(error_of(hs, keys.token("HS256", claims(), {{"kid", "s"}})) == "");
  CHECK(error_of(hs, sign(JWT_ALG_HS256, kSecret + "!", claims(), {{"kid", "s"}})) == "invalid signature");
}

TEST_CASE("jwt: malformed tokens and requests without one are answered 401 as RFC 6750 says", "[jwt]") {
  Keys keys;
  const auto v = keys.verifier("RS256", {.realm = "notes"});
  const std::string good = keys.token("RS256");
  CHECK(error_of(v, "") == "malformed token: empty");
  CHECK(error_of(v, "garbage") == "malformed token: not three parts");
  CHECK(error_of(v, "a.b") == "malformed token: not three parts");
  CHECK(error_of(v, good + ".x") == "malformed token: not three parts");
  CHECK(error_of(v, "!!!." + good.substr(good.find('.') + 1)) == "malformed token: bad header");
  CHECK(error_of(v, b64url("not json") + ".e30.c2ln") == "malformed token: bad header");
  CHECK(error_of(v, b64url("[1]") + ".e30.c2ln") == "malformed token: bad header");
  CHECK(error_of(v, b64url(R"({"alg":"RS256","x":[[[[[[]]]]]]})") + ".e30.c2ln") == "malformed token: bad header");
  CHECK(error_of(v, std::string(20000, 'a')) == "malformed token: too long");
  CHECK(error_of(v, good.substr(0, good.size() - 4)) == "invalid signature");  // cut short

  auto refused = [&](std::vector<std::pair<std::string, std::string>> headers) {
    FakeRequest fake(std::move(headers));
    edri::Admission admission;
    auto r = v.admit(fake.req, admission);
    CHECK_FALSE(admission.has_principal());
    REQUIRE(r);
    return *r;
  };
  // No token at all: a challenge without an error code (RFC 6750 3.1).
  for (const auto& headers : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {}, {{"authorization", "Basic YTpi"}}, {{"authorization", "Bearerx abc"}}, {{"x-token", good}}}) {
    const auto r = refused(headers);
    CHECK(r.status.code == 401);
    CHECK(header_of(r, "WWW-Authenticate") == R"(Bearer realm="notes")");
    CHECK(json::parse(r.body_bytes())["detail"] == "a bearer token is needed");
  }
  // A bad token: invalid_token, and why.
  const auto r = refused({{"authorization", "Bearer not.a-token"}});
  CHECK(r.status.code == 401);
  CHECK(r.content_type == "application/problem+json");
  CHECK(header_of(r, "WWW-Authenticate") ==
        R"(Bearer realm="notes", error="invalid_token", error_description="malformed token: not three parts")");
  CHECK(json::parse(r.body_bytes())["detail"] == "malformed token: not three parts");
  CHECK(header_of(refused({{"authorization", "Bearer "}}), "WWW-Authenticate") ==
        R"(Bearer realm="notes", error="invalid_token", error_description="malformed token: empty")");
  const json expired = {{"sub", "a"}, {"exp", now_s() - 3600}};
  CHECK(header_of(refused({{"authorization", "Bearer " + keys.token("RS256", expired)}}), "WWW-Authenticate") ==
        R"(Bearer realm="notes", error="invalid_token", error_description="the token expired")");
  // The scheme is case-insensitive, spaces around the token are not part of it.
  FakeRequest fake({{"Authorization", "  bEaReR   " + good + "  "}});
  edri::Admission admission;
  CHECK_FALSE(v.admit(fake.req, admission));
  CHECK(admission.principal() == "alice");
}

TEST_CASE("jwt: a key file or key set that cannot be used stops the verifier, naming the file", "[jwt]") {
  Keys keys;
  auto error = [&](const std::string& alg, JwtVerifier::Options o) {
    o.algorithm = alg;
    return message_of([&] { JwtVerifier v(o); });
  };
  const std::string missing = (keys.dir.path / "missing.pem").string();
  CHECK(error("RS256", {.key_file = missing}) ==
        "JWT key file " + missing + ": cannot read it: No such file or directory");
  const auto junk = keys.file("junk.pem", "not a key");
  CHECK(error("RS256", {.key_file = junk}) == "JWT key file " + junk + ": not a PEM public key or certificate");
  const auto small = rsa_key(1024);
  const auto small_pem = keys.file("small.pem", pem(small.get(), false));
  CHECK(error("RS256", {.key_file = small_pem}) ==
        "JWT key file " + small_pem + ": an RSA key of 1024 bits; RS256 needs 2048 or more");
  const auto ec_pem = keys.file("ec.pem", pem(keys.ec.get(), false));
  CHECK(error("RS256", {.key_file = ec_pem}) == "JWT key file " + ec_pem + ": not an RSA key, which RS256 needs");
  const auto rsa_pem = keys.file("rsa.pem", pem(keys.rsa.get(), false));
  CHECK(error("ES256", {.key_file = rsa_pem}) == "JWT key file " + rsa_pem + ": not an EC key, which ES256 needs");
  const auto p384 = ec_key("P-384");
  const auto p384_pem = keys.file("p384.pem", pem(p384.get(), false));
  CHECK(error("ES256", {.key_file = p384_pem}) ==
        "JWT key file " + p384_pem + ": an EC key not on P-256, which ES256 needs");
  const auto short_secret = keys.file("short", "too-short\n");
  CHECK(error("HS256", {.key_file = short_secret}) ==
        "JWT key file " + short_secret + ": an HS256 secret of 9 bytes; at least 32 are needed");

  const auto not_json = keys.file("a.json", "{");
  CHECK(error("RS256", {.jwks_file = not_json}) == "JWKS file " + not_json + ": not JSON");
  const auto no_keys = keys.file("b.json", R"({"key":[]})");
  CHECK(error("RS256", {.jwks_file = no_keys}) ==
        "JWKS file " + no_keys + R"(: not a JSON Web Key Set (an object with a "keys" array))");
  const auto only_ec = keys.file("c.json", json{{"keys", {jwk(keys.ec.get(), "e")}}}.dump());
  CHECK(error("RS256", {.jwks_file = only_ec}) == "JWKS file " + only_ec + ": no key for RS256 in it");
  json off_curve = jwk(keys.ec.get(), "bad");
  off_curve["y"] = off_curve["x"];  // (x, x) is not on the curve
  const auto bad_point = keys.file("d.json", json{{"keys", {off_curve}}}.dump());
  CHECK(error("ES256", {.jwks_file = bad_point}) ==
        "JWKS file " + bad_point + ": key 0 (kid bad): not a point on P-256");
  json bad_n = jwk(keys.rsa.get(), "n");
  bad_n["n"] = "not base64url!";
  const auto bad_b64 = keys.file("e.json", json{{"keys", {bad_n}}}.dump());
  CHECK(error("RS256", {.jwks_file = bad_b64}) == "JWKS file " + bad_b64 + R"(: key 0 (kid n): "n" is not base64url)");
  const auto twice = keys.file("f.json", json{{"keys", {jwk(keys.rsa.get(), "k"), jwk(keys.rsa.get(), "k")}}}.dump());
  CHECK(error("RS256", {.jwks_file = twice}) == "JWKS file " + twice + ": kid k appears twice");

  // Options that make no sense.
  CHECK(error("none", {.key_file = rsa_pem}) == "JWT algorithm 'none': only HS256, RS256 and ES256 are supported");
  CHECK(error("HS512", {.key_file = rsa_pem}) == "JWT algorithm 'HS512': only HS256, RS256 and ES256 are supported");
  CHECK(error("RS256", {}) == "JWT verifier: name exactly one of key_file and jwks_file");
  CHECK(error("RS256", {.key_file = rsa_pem, .jwks_file = only_ec}) ==
        "JWT verifier: name exactly one of key_file and jwks_file");
  // A certificate's key serves as well as the key itself.
  const auto private_pem = keys.file("rsa.key", pem(keys.rsa.get(), true));
  const std::string cert = (keys.dir.path / "rsa.crt").string();
  REQUIRE(
      std::system(("openssl req -x509 -key " + private_pem + " -subj /CN=issuer -days 1 -out " + cert + " 2>/dev/null")
                      .c_str()) == 0);
  CHECK(error_of(keys.verifier("RS256", {.key_file = cert}), keys.token("RS256")) == "");
}
