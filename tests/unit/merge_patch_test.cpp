// Composing JSON Merge Patches (edri/live_stream.hpp): where
// compose_merge_patch says it can, one composed patch does exactly what
// the two did in turn; where it says it cannot, it is a case that no
// single merge patch can express. A publish applied in place
// (envelope/stream_patch.hpp) ends where merging a copy would, and its
// bound of the state's size is never under the size.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <edri/live_stream.hpp>

#include <random>
#include <string>
#include <variant>

#include "envelope/stream_patch.hpp"

using nlohmann::json;

namespace {

// A random value over a few keys, nested up to `depth`: nulls, scalars,
// arrays and objects, so every rule of RFC 7386 is met.
json random_value(std::mt19937& rng, int depth) {
  switch (std::uniform_int_distribution<int>(0, depth > 0 ? 4 : 2)(rng)) {
    case 0: return nullptr;
    case 1: return std::uniform_int_distribution<int>(0, 9)(rng);
    case 2: return json::array({std::uniform_int_distribution<int>(0, 9)(rng)});
    default: {
      json o = json::object();
      const int n = std::uniform_int_distribution<int>(0, 3)(rng);
      for (int i = 0; i < n; ++i)
        o[std::string(1, static_cast<char>('a' + std::uniform_int_distribution<int>(0, 3)(rng)))] =
            random_value(rng, depth - 1);
      return o;
    }
  }
}

json random_object(std::mt19937& rng) {
  json o = random_value(rng, 3);
  return o.is_object() ? o : json::object({{"a", o}});
}

}  // namespace

TEST_CASE("a composed merge patch does what the two did in turn", "[streams][merge-patch]") {
  std::mt19937 rng(7);
  int exact = 0, refused = 0;
  for (int i = 0; i < 20000; ++i) {
    json target = random_object(rng);
    const json first = random_object(rng), second = random_object(rng);
    json in_turn = target;
    in_turn.merge_patch(first);
    in_turn.merge_patch(second);
    json composed = first;
    if (!edri::compose_merge_patch(composed, second)) {
      ++refused;
      continue;
    }
    ++exact;
    json at_once = target;
    at_once.merge_patch(composed);
    INFO("target " << target << " first " << first << " second " << second << " composed " << composed);
    REQUIRE(at_once == in_turn);
  }
  CHECK(exact > 10000);  // the exact case is the common one
  CHECK(refused > 0);
}

TEST_CASE("composing refuses only what no single merge patch can say", "[streams][merge-patch]") {
  // {a:5} then {a:{y:2}} makes a == {y:2} whatever a was: a patch cannot
  // drop an object's other members without naming them.
  json p = {{"a", 5}};
  CHECK_FALSE(edri::compose_merge_patch(p, {{"a", {{"y", 2}}}}));
  json d = {{"a", nullptr}};
  CHECK_FALSE(edri::compose_merge_patch(d, {{"a", {{"y", 2}}}}));
  // Deleting then setting, and nested objects, compose.
  json q = {{"a", nullptr}, {"b", {{"x", 1}}}};
  REQUIRE(edri::compose_merge_patch(q, {{"a", 3}, {"b", {{"x", nullptr}, {"y", 2}}}}));
  CHECK(q == json{{"a", 3}, {"b", {{"x", nullptr}, {"y", 2}}}});
}

namespace {

// The model apply_stream_patch must match: the patch merged into a copy
// of the state, the copy serialized to check the limit; a status where it
// refuses.
struct Merged {
  json patch, state;
};
std::variant<Merged, int> merged_copy(const json& state, const std::string& text, std::size_t max_bytes) {
  if (text.size() > max_bytes) return 413;
  auto patch = json::parse(text, nullptr, false);
  if (patch.is_discarded() || !patch.is_object()) return 422;
  json next = state;
  next.merge_patch(patch);
  if (next.dump().size() > max_bytes) return 413;
  return Merged{std::move(patch), std::move(next)};
}

}  // namespace

TEST_CASE("a publish applied in place ends as one merged into a copy, its size bound never short",
          "[streams][merge-patch]") {
  namespace env = edri::envelope;
  std::mt19937 rng(7);
  for (const std::size_t max_bytes : {40, 80, 4096}) {
    env::StreamState in_place;
    json copied = json::object();
    std::size_t refused = 0;
    for (int i = 0; i < 3000; ++i) {
      json patch = random_value(rng, 3);
      if (!patch.is_object()) patch = json{{"v", patch}};
      std::string text = patch.dump();
      // A text shorter than its own dump (1e15 is 1000000000000000.0).
      if (i % 7 == 0) text = R"({ "n" : 1e15, "s": "\u00e9\/", "a": [1, 2] })";
      INFO("max " << max_bytes << ", patch " << i << ": " << text);
      const auto merged = merged_copy(copied, text, max_bytes);
      const auto applied = env::apply_stream_patch("s", in_place, text, max_bytes);
      REQUIRE(merged.index() == applied.index());
      if (const auto* m = std::get_if<Merged>(&merged)) {
        copied = m->state;
        CHECK(std::get<env::PatchApplied>(applied).text == m->patch.dump());
      } else {
        ++refused;
        CHECK(std::get<int>(merged) == std::get<env::PatchRefused>(applied).status);
      }
      REQUIRE(in_place.value == copied);
      REQUIRE(in_place.bound >= in_place.value.dump().size());
    }
    // The smallest limit was met, the largest never.
    if (max_bytes == 40) CHECK(refused > 0);
    if (max_bytes == 4096) CHECK(refused == 0);
  }
}

TEST_CASE("stream names", "[streams]") {
  CHECK(edri::is_valid_stream_name("a"));
  CHECK(edri::is_valid_stream_name("Tenant-1:prices.eu_2"));
  CHECK(edri::is_valid_stream_name(std::string(128, 'x')));
  CHECK_FALSE(edri::is_valid_stream_name(""));
  CHECK_FALSE(edri::is_valid_stream_name(std::string(129, 'x')));
  CHECK_FALSE(edri::is_valid_stream_name("a b"));
  CHECK_FALSE(edri::is_valid_stream_name("a/b"));
  CHECK_FALSE(edri::is_valid_stream_name("é"));
}
