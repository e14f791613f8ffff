#include "runtime/setting_parsers.hpp"

#include "runtime/address_range.hpp"

#include <cctype>
#include <charconv>

#include <sys/stat.h>
#include <sys/un.h>

#include <cstdlib>
#include <sstream>

namespace edri {
namespace {

// Splits on any of `separators`, dropping empty pieces.
std::vector<std::string> split(const std::string& text, std::string_view separators) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find_first_of(separators, start), text.size());
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string trimmed(std::string s) {
  const auto first = s.find_first_not_of(' ');
  if (first == std::string::npos) return {};
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

template <class T>
std::string join(const std::vector<T>& items) {
  std::ostringstream o;
  for (std::size_t i = 0; i < items.size(); ++i) o << (i ? "," : "") << items[i];
  return o.str();
}

bool is_file_of_type(const std::string& path, mode_t type) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IFMT) == type;
}

int parse_cpu_number(const std::string& s) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v > 1023)
    throw std::invalid_argument("bad CPU number '" + s + "'");
  return v;
}

// "3" or "0-3", appended to `cpus`.
void add_cpu_range(const std::string& part, std::vector<int>& cpus) {
  if (part.empty()) throw std::invalid_argument("empty element");
  const auto dash = part.find('-');
  const int lo = parse_cpu_number(part.substr(0, dash));
  const int hi = dash == std::string::npos ? lo : parse_cpu_number(part.substr(dash + 1));
  if (hi < lo) throw std::invalid_argument("bad range '" + part + "'");
  for (int c = lo; c <= hi; ++c) cpus.push_back(c);
}

}  // namespace

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& piece : split(text, ","))
    if (auto item = trimmed(piece); !item.empty()) out.push_back(std::move(item));
  return out;
}

void invalid(const EnvValue& v, const std::string& why) {
  throw ConfigError(std::string(v.name) + "=" + v.text + ": " + why);
}

bool is_integer_text(std::string_view text) {
  if (!text.empty() && text.front() == '-') text.remove_prefix(1);
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

double parse_seconds(const EnvValue& v) {
  char* end = nullptr;
  const double seconds = std::strtod(v.text.c_str(), &end);
  if (end == v.text.c_str() || *end != '\0' || !(seconds > 0) || seconds > 86400)
    invalid(v, "must be a number of seconds in (0, 86400]");
  return seconds;
}

bool parse_bool(const EnvValue& v) {
  for (const char* yes : {"1", "true", "yes", "on"})
    if (v.text == yes) return true;
  for (const char* no : {"0", "false", "no", "off"})
    if (v.text == no) return false;
  invalid(v, "must be 1/0, true/false, yes/no or on/off");
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) add_cpu_range(part, cpus);
  if (cpus.empty()) throw std::invalid_argument("empty list");
  return cpus;
}

std::string one_of(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

namespace parse {
namespace {

// A Binding over a string member that `check` may refuse.
Binding checked_text(std::string Config::*member, std::function<void(const EnvValue&)> check) {
  return {[=](Config& c, const EnvValue& v) {
            check(v);
            c.*member = v.text;
          },
          [=](const Config& c) { return c.*member; }};
}

}  // namespace

Binding power_of_two(std::size_t Config::*member, std::size_t min, std::size_t max) {
  Binding binding = integer(member, min, max);
  binding.read = [=](Config& c, const EnvValue& v) {
    c.*member = parse_integer<std::size_t>(v, min, max);
    if (c.*member & (c.*member - 1)) invalid(v, "must be a power of two");
  };
  return binding;
}

Binding seconds(double Config::*member) {
  return {[=](Config& c, const EnvValue& v) { c.*member = parse_seconds(v); },
          [=](const Config& c) {
            std::ostringstream o;
            o << c.*member;
            return o.str();
          }};
}

Binding flag(bool Config::*member) {
  Binding b{[=](Config& c, const EnvValue& v) { c.*member = parse_bool(v); },
            [=](const Config& c) { return std::string(c.*member ? "1" : "0"); }};
  b.takes_boolean = true;
  return b;
}

Binding named_flag(bool Config::*member, const char* on, const char* off) {
  return {[=](Config& c, const EnvValue& v) { c.*member = v.text == on; },
          [=](const Config& c) { return std::string(c.*member ? on : off); }};
}

Binding fraction(double Config::*member) {
  Binding b = seconds(member);
  b.read = [=](Config& c, const EnvValue& v) {
    char* end = nullptr;
    const double x = std::strtod(v.text.c_str(), &end);
    if (end == v.text.c_str() || *end != '\0' || !(x >= 0 && x <= 1)) invalid(v, "must be a number from 0 to 1");
    c.*member = x;
  };
  return b;
}

Binding http_url(std::string Config::*member) {
  return checked_text(member, [](const EnvValue& v) {
    const std::string_view url(v.text);
    const auto scheme = url.find("://");
    const std::string_view name = scheme == std::string_view::npos ? std::string_view() : url.substr(0, scheme);
    if ((name != "http" && name != "https") || url.size() == scheme + 3)
      invalid(v, "must be an http:// or https:// URL");
  });
}

Binding text(std::string Config::*member) {
  return checked_text(member, [](const EnvValue&) {});
}

Binding directory(std::string Config::*member) {
  return checked_text(member, [](const EnvValue& v) {
    if (!is_file_of_type(v.text, S_IFDIR)) invalid(v, "not a directory");
  });
}

Binding regular_file(std::string Config::*member) {
  return checked_text(member, [](const EnvValue& v) {
    if (!is_file_of_type(v.text, S_IFREG)) invalid(v, "not a readable file");
  });
}

Binding socket_path(std::string Config::*member) {
  return checked_text(member, [](const EnvValue& v) {
    if (v.text.size() >= sizeof(sockaddr_un{}.sun_path)) invalid(v, "longer than a socket path may be (107 bytes)");
  });
}

Binding endpoint_path(std::string Config::*member, std::string when_empty) {
  Binding binding = checked_text(member, [when_empty](const EnvValue& v) {
    if (!v.text.empty() && v.text.front() != '/') invalid(v, "must start with '/' (or be empty: " + when_empty + ")");
  });
  binding.empty_is_a_value = true;
  return binding;
}

Binding path_list(std::vector<std::string> Config::*member) {
  return {[=](Config& c, const EnvValue& v) { c.*member = split(v.text, ":,"); },
          [=](const Config& c) { return join(c.*member); }};
}

namespace {

bool is_subject_token(std::string_view t) {
  if (t.empty() || t.size() > 64) return false;
  for (char c : t)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

void check_subject_token(const EnvValue& v, const std::string& t) {
  if (!is_subject_token(t)) invalid(v, "'" + t + "' is not 1 to 64 of A-Z a-z 0-9 _ - (a NATS subject token)");
}

}  // namespace

Binding subject_token(std::string Config::*member) {
  return checked_text(member, [](const EnvValue& v) { check_subject_token(v, v.text); });
}

Binding subject_token_list(std::vector<std::string> Config::*member) {
  return {[=](Config& c, const EnvValue& v) {
            (c.*member).clear();
            for (const auto& piece : split(v.text, ",")) {
              const std::string t = trimmed(piece);
              check_subject_token(v, t);
              (c.*member).push_back(t);
            }
          },
          [=](const Config& c) { return join(c.*member); }};
}

Binding urls_by_name(std::vector<std::pair<std::string, std::string>> Config::*member) {
  Binding b{[=](Config& c, const EnvValue& v) {
              (c.*member).clear();
              std::istringstream words(v.text);
              for (std::string item; words >> item;) {
                const auto eq = item.find('=');
                if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
                  invalid(v, "\"" + item + "\" is not name=url");
                const auto name = item.substr(0, eq);
                for (const auto& [known, url] : c.*member)
                  if (known == name) invalid(v, "names the database \"" + name + "\" twice");
                (c.*member).emplace_back(name, item.substr(eq + 1));
              }
            },
            [=](const Config& c) {
              std::string out;
              for (const auto& [name, url] : c.*member) out += (out.empty() ? "" : " ") + name + "=" + url;
              return out;
            }};
  b.pair_separator = ' ';
  return b;
}

Binding counts_by_name(std::vector<std::pair<std::string, std::uint32_t>> Config::*member, std::uint32_t min,
                       std::uint32_t max) {
  Binding b{[=](Config& c, const EnvValue& v) {
              (c.*member).clear();
              for (const auto& item : comma_list(v.text)) {
                const auto eq = item.find('=');
                if (eq == std::string::npos || eq == 0) invalid(v, "\"" + item + "\" is not name=count");
                const EnvValue count{v.name, trimmed(item.substr(eq + 1))};
                (c.*member).emplace_back(trimmed(item.substr(0, eq)), parse_integer<std::uint32_t>(count, min, max));
              }
            },
            [=](const Config& c) {
              std::string out;
              for (const auto& [name, n] : c.*member) out += (out.empty() ? "" : ",") + name + "=" + std::to_string(n);
              return out;
            }};
  b.pair_separator = ',';
  return b;
}

namespace {

// nats:// or tls://, [user[:password]@]host[:port] with a port of 1..65535.
bool is_nats_url(std::string_view u) {
  const auto scheme_end = u.find("://");
  if (scheme_end == std::string_view::npos) return false;
  const auto scheme = u.substr(0, scheme_end);
  if (scheme != "nats" && scheme != "tls") return false;
  auto rest = u.substr(scheme_end + 3);
  if (const auto at = rest.rfind('@'); at != std::string_view::npos) rest = rest.substr(at + 1);
  const auto colon = rest.rfind(':');
  const auto host = rest.substr(0, colon);
  if (host.empty() || host.find_first_of("/?# ") != std::string_view::npos) return false;
  if (colon == std::string_view::npos) return true;
  unsigned port = 0;
  const auto digits = rest.substr(colon + 1);
  const auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  return ec == std::errc() && p == digits.data() + digits.size() && port >= 1 && port <= 65535;
}

}  // namespace

Binding nats_urls(std::string Config::*member) {
  return checked_text(member, [](const EnvValue& v) {
    for (const auto& url : comma_list(v.text)) {
      if (!is_nats_url(url))
        invalid(v, "'" + url + "' is not a NATS URL (nats://host:port or tls://host:port, ',' separated)");
    }
  });
}

Binding secret(std::string Config::*member) {
  Binding b = text(member);
  b.show = [=](const Config& c) { return (c.*member).empty() ? std::string() : std::string("(set)"); };
  b.secret = true;
  return b;
}

Binding origin_list(std::vector<std::string> Config::*member) {
  return {
      [=](Config& c, const EnvValue& v) {
        (c.*member).clear();
        for (const auto& piece : split(v.text, ",")) {
          const std::string origin = trimmed(piece);
          if (origin.empty()) continue;
          if (origin != "*" && origin.find("://") == std::string::npos)
            throw ConfigError(std::string(v.name) + ": '" + origin + "' is not an origin (scheme://host[:port]) or *");
          (c.*member).push_back(origin);
        }
      },
      [=](const Config& c) { return join(c.*member); }};
}

Binding address_ranges(std::vector<std::string> Config::*member) {
  return {[=](Config& c, const EnvValue& v) {
            (c.*member).clear();
            for (const auto& piece : split(v.text, ",")) {
              const std::string range = trimmed(piece);
              if (range.empty()) continue;
              if (!AddressRange::parse(range))
                throw ConfigError(std::string(v.name) + ": '" + range + "' is not an IP address or CIDR block");
              (c.*member).push_back(range);
            }
          },
          [=](const Config& c) { return join(c.*member); }};
}

namespace {

// type/subtype, or type/* for every subtype, in a token's characters
// (RFC 9110 5.6.2).
bool is_media_type_pattern(std::string_view t) {
  const auto slash = t.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == t.size()) return false;
  auto token = [](std::string_view part) {
    return std::all_of(part.begin(), part.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string_view("!#$&-^_.+").find(c) != std::string_view::npos;
    });
  };
  const auto subtype = t.substr(slash + 1);
  return token(t.substr(0, slash)) && (subtype == "*" || token(subtype));
}

}  // namespace

Binding media_types(std::vector<std::string> Config::*member) {
  Binding b{[=](Config& c, const EnvValue& v) {
              std::vector<std::string> types = comma_list(v.text);
              for (auto& t : types) {
                std::transform(t.begin(), t.end(), t.begin(), [](unsigned char ch) { return std::tolower(ch); });
                if (!is_media_type_pattern(t)) invalid(v, "'" + t + "' is not a media type (type/subtype or type/*)");
              }
              c.*member = std::move(types);
            },
            [=](const Config& c) { return join(c.*member); }};
  b.empty_is_a_value = true;  // set but empty: no type is compressed
  return b;
}

Binding count_or_auto(std::uint32_t Config::*member, bool Config::*is_auto, std::uint32_t min, std::uint32_t max) {
  return {[=](Config& c, const EnvValue& v) {
            c.*is_auto = v.text == "auto";
            if (!(c.*is_auto)) c.*member = parse_integer<std::uint32_t>(v, min, max);
          },
          [=](const Config& c) { return c.*is_auto ? std::string("auto") : std::to_string(c.*member); }};
}

Binding cpu_placement() {
  using P = Config::Placement;
  const Binding words = choice(&Config::placement, {{"auto", P::Auto}, {"all", P::All}, {"one", P::One}});
  return {[=](Config& c, const EnvValue& v) {
            if (v.text == "auto" || v.text == "all" || v.text == "one") return words.read(c, v);
            c.placement = P::List;
            try {
              c.cpus = parse_cpu_list(v.text);
            } catch (const std::invalid_argument& e) {
              invalid(v, e.what());
            }
          },
          [=](const Config& c) { return c.placement == P::List ? join(c.cpus) : words.show(c); }};
}

}  // namespace parse
}  // namespace edri
