// The typed parsers of settings: how an environment variable's text
// becomes a Config member, and how the member is shown again
// (--print-config). The settings table (settings.cpp) binds each variable
// to its member with one of the parse:: functions, so that a kind of value
// (an integer in a range, seconds, a flag, a folder) is checked, and its
// error worded, in one place.
#pragma once

#include <algorithm>
#include <charconv>
#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/config.hpp"

namespace edri {

// A variable as found in the environment; error messages name both.
struct EnvValue {
  const char* name;
  std::string text;
};

// The ','-separated items of `text`, each trimmed of spaces; blank ones
// dropped (EDRI_NATS_URL, EDRI_DOMAINS).
std::vector<std::string> comma_list(const std::string& text);

// Throws ConfigError "NAME=text: why".
[[noreturn]] void invalid(const EnvValue& v, const std::string& why);

// A variable bound to its Config member.
struct Binding {
  std::function<void(Config&, const EnvValue&)> read;
  std::function<std::string(const Config&)> show;
  // Set but empty is a value ("none") rather than unset: only for a
  // setting whose default is something and whose empty means nothing.
  bool empty_is_a_value = false;
  // How a config file's value becomes the variable's text
  // (runtime/config_file.cpp): a boolean is taken by a flag alone, as 1
  // or 0; a table (name = value, ...) by named values alone, its pairs
  // "name=value" joined by this separator (0: no table).
  bool takes_boolean = false;
  char pair_separator = 0;
  bool secret = false;  // shown `(set)`, never its value
};

// Digits, after a '-' or not: an integer, whether or not a type holds it.
bool is_integer_text(std::string_view text);

// An integer that does not fit T (EDRI_PORT=99999 in a uint16_t, -1 in an
// unsigned) is out of range, not "not an integer".
template <class T>
T parse_integer(const EnvValue& v, T min, T max) {
  const std::string_view s(v.text);
  if (!is_integer_text(s)) invalid(v, "not an integer");
  T value{};
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || p != s.data() + s.size() || value < min || value > max)
    invalid(v, "out of range: must be between " + std::to_string(min) + " and " + std::to_string(max));
  return value;
}

double parse_seconds(const EnvValue& v);
bool parse_bool(const EnvValue& v);
// Parses "0-3,6" style CPU lists; throws std::invalid_argument.
std::vector<int> parse_cpu_list(const std::string& text);
// "a", "a or b", "a, b or c": the accepted values, for an error message.
std::string one_of(const std::vector<std::string>& names);

namespace parse {

template <class T>
Binding integer(T Config::*member, std::type_identity_t<T> min, std::type_identity_t<T> max) {
  return {[=](Config& c, const EnvValue& v) { c.*member = parse_integer<T>(v, min, max); },
          [=](const Config& c) { return std::to_string(c.*member); }};
}

// The words of `options` but its aliases: those whose value an earlier
// word already stands for.
template <class T>
std::vector<std::string> words_but_aliases(const std::vector<std::pair<std::string, T>>& options) {
  std::vector<std::string> words;
  for (auto it = options.begin(); it != options.end(); ++it) {
    const auto same_value = [&](const auto& o) { return o.second == it->second; };
    if (std::find_if(options.begin(), it, same_value) == it) words.push_back(it->first);
  }
  return words;
}

// One of a few words, each standing for a value; an alias is accepted but
// never shown or offered.
template <class T>
Binding choice(T Config::*member, std::vector<std::pair<std::string, T>> options) {
  const std::vector<std::string> offered = words_but_aliases(options);
  return {[=](Config& c, const EnvValue& v) {
            for (const auto& [word, value] : options)
              if (word == v.text) return void(c.*member = value);
            invalid(v, "must be " + one_of(offered));
          },
          [=](const Config& c) {
            for (const auto& [word, value] : options)
              if (value == c.*member) return word;
            return std::string();
          }};
}

Binding power_of_two(std::size_t Config::*member, std::size_t min, std::size_t max);
Binding seconds(double Config::*member);
Binding fraction(double Config::*member);       // a number in [0, 1]
Binding http_url(std::string Config::*member);  // http:// or https://, a host after it
Binding flag(bool Config::*member);             // 1/0, true/false, yes/no, on/off; shown 1 or 0
// True for the one word `on`, false for any other; shown `on` or `off`.
Binding named_flag(bool Config::*member, const char* on, const char* off);
Binding text(std::string Config::*member);
Binding directory(std::string Config::*member);     // an existing folder
Binding regular_file(std::string Config::*member);  // an existing file
Binding socket_path(std::string Config::*member);   // fits sockaddr_un
// Starts with '/', or is empty (set but empty: no WebSocket).
// A URL path ("/ws"), or empty for `when_empty` (no WebSocket, no endpoint).
Binding endpoint_path(std::string Config::*member, std::string when_empty);
Binding path_list(std::vector<std::string> Config::*member);  // ':' or ',' separated
Binding origin_list(std::vector<std::string> Config::*member);
// IP addresses and CIDR blocks, comma-separated (AddressRange).
Binding address_ranges(std::vector<std::string> Config::*member);
// One NATS subject token (A-Z a-z 0-9 _ -), or a ',' separated list of them.
Binding subject_token(std::string Config::*member);
Binding subject_token_list(std::vector<std::string> Config::*member);
// "name=n,name=n": a count in [min, max] per name (EDRI_DOMAIN_REPLICAS).
// "name=url name=url": names and URLs, separated by white space (a URL
// may hold commas, never a space).
Binding urls_by_name(std::vector<std::pair<std::string, std::string>> Config::*member);
Binding counts_by_name(std::vector<std::pair<std::string, std::uint32_t>> Config::*member, std::uint32_t min,
                       std::uint32_t max);
// NATS server URLs, ',' separated: nats:// or tls://, [user[:password]@]host[:port].
Binding nats_urls(std::string Config::*member);
// Media types, ',' separated, lower-cased: "type/subtype" or "type/*".
Binding media_types(std::vector<std::string> Config::*member);
// A value --print-config does not show (it shows `(set)`).
Binding secret(std::string Config::*member);
Binding cpu_placement();  // Config::placement and, for a list, Config::cpus
// `auto` (is_auto set; the member keeps its default until the machine
// decides it) or an integer in [min, max].
Binding count_or_auto(std::uint32_t Config::*member, bool Config::*is_auto, std::uint32_t min, std::uint32_t max);

}  // namespace parse
}  // namespace edri
