#include "http/route_table.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace edri::http {

bool is_int_segment(std::string_view s) { return parse_int64(s).has_value(); }

bool is_uuid_segment(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < 36; ++i) {
    const char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

namespace {

bool matches(ParamType t, std::string_view seg) {
  switch (t) {
    case ParamType::Int: return is_int_segment(seg);
    case ParamType::Uuid: return is_uuid_segment(seg);
    case ParamType::Str: return !seg.empty();
  }
  return false;
}

// A segment's hash from its length and its first and last eight bytes (the
// bytes that differ between siblings like resource1..resource99): a couple
// of nanoseconds whatever its length, where a byte-by-byte hash costs one
// multiply per byte. Collisions only cost a probe: every slot is compared.
std::uint64_t segment_hash(std::string_view s) {
  std::uint64_t head = 0, tail = 0;
  if (s.size() >= 8) {
    std::memcpy(&head, s.data(), 8);
    std::memcpy(&tail, s.data() + s.size() - 8, 8);
  } else if (!s.empty()) {  // an empty view may have no data pointer at all
    std::memcpy(&head, s.data(), s.size());
  }
  // Bytes that differ are often the last ones, the high bits of `tail`:
  // fold high into low before and after the multiply (MurmurHash3's fmix).
  std::uint64_t h = head ^ (tail + 0x9E3779B97F4A7C15ull) ^ s.size();
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  return h ^ (h >> 33);
}

// Whether two segments hold the same bytes. Segments are short: eight
// bytes at a time (the last load overlapping), inlined, where a call to
// memcmp cost more than the comparison.
bool same_segment(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  if (n < 8) {
    for (std::size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  std::uint64_t x, y;
  for (std::size_t i = 0; i + 8 < n; i += 8) {
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, b.data() + i, 8);
    if (x != y) return false;
  }
  std::memcpy(&x, a.data() + n - 8, 8);
  std::memcpy(&y, b.data() + n - 8, 8);
  return x == y;
}

// Splits off the first segment of `rest` (which starts after a '/'); a
// plain loop, since segments are a few bytes long.
std::string_view next_segment(std::string_view& rest, bool& last) {
  std::size_t slash = 0;
  while (slash < rest.size() && rest[slash] != '/') ++slash;
  std::string_view seg = rest.substr(0, slash);
  last = slash == rest.size();
  rest = last ? std::string_view{} : rest.substr(slash + 1);
  return seg;
}

}  // namespace

std::vector<std::pair<std::string, ParamType>> RouteTable::parameters(std::string_view tpl) {
  std::vector<std::pair<std::string, ParamType>> out;
  std::string_view rest = tpl.empty() ? tpl : tpl.substr(1);
  for (bool last = tpl.empty(); !last;) {
    const std::string_view seg = next_segment(rest, last);
    if (seg.size() < 2 || seg.front() != '{' || seg.back() != '}') continue;
    const std::string_view inner = seg.substr(1, seg.size() - 2);
    const auto colon = inner.find(':');
    const std::string_view type = colon == std::string_view::npos ? "str" : inner.substr(colon + 1);
    out.emplace_back(std::string(inner.substr(0, colon)), type == "int"    ? ParamType::Int
                                                          : type == "uuid" ? ParamType::Uuid
                                                                           : ParamType::Str);
  }
  return out;
}

void RouteTable::add(Method method, std::string_view tpl, std::uint32_t target) {
  const std::string where = "route " + std::string(method_name(method)) + " " + std::string(tpl);
  if (tpl.empty() || tpl[0] != '/') throw std::invalid_argument(where + ": the path must start with '/'");
  std::string_view rest = tpl.substr(1);
  std::uint32_t node = 0;
  std::size_t params = 0;
  for (bool last = false; !last;) {
    const std::string_view seg = next_segment(rest, last);
    if (!seg.empty() && seg.front() == '{') {
      if (seg.back() != '}') throw std::invalid_argument(where + ": unclosed parameter '" + std::string(seg) + "'");
      std::string_view inner = seg.substr(1, seg.size() - 2);
      std::string_view name = inner, type = "str";
      if (auto colon = inner.find(':'); colon != std::string_view::npos) {
        name = inner.substr(0, colon);
        type = inner.substr(colon + 1);
      }
      if (name.empty()) throw std::invalid_argument(where + ": a parameter needs a name");
      ParamType pt;
      if (type == "int")
        pt = ParamType::Int;
      else if (type == "uuid")
        pt = ParamType::Uuid;
      else if (type == "str" || type == "string")
        pt = ParamType::Str;
      else
        throw std::invalid_argument(where + ": unknown parameter type '" + std::string(type) + "' (int, str, uuid)");
      if (++params > kMaxPathParams) throw std::invalid_argument(where + ": more than 8 path parameters");
      auto& edges = nodes_[node].params;
      auto it = std::find_if(edges.begin(), edges.end(), [&](const ParamEdge& e) { return e.type == pt; });
      if (it != edges.end()) {
        if (it->name != name)
          throw std::invalid_argument(where + ": parameter '" + std::string(name) + "' conflicts with '" + it->name +
                                      "' at the same place in another route");
        node = it->child;
      } else {
        const auto child = static_cast<std::uint32_t>(nodes_.size());
        nodes_.emplace_back();
        auto& e = nodes_[node].params;
        e.push_back(ParamEdge{pt, std::string(name), child});
        std::sort(e.begin(), e.end(), [](const ParamEdge& a, const ParamEdge& b) { return a.type < b.type; });
        node = child;
      }
    } else {
      if (seg.find_first_of("{}") != std::string_view::npos)
        throw std::invalid_argument(where + ": braces are only allowed around a whole segment");
      // The lookup's own index: adding many literals stays linear.
      if (const auto existing = literal_child(nodes_[node], seg); existing >= 0) {
        node = static_cast<std::uint32_t>(existing);
      } else {
        const auto child = static_cast<std::uint32_t>(nodes_.size());
        nodes_.emplace_back();
        nodes_[node].literals.emplace_back(std::string(seg), child);
        index_literals(nodes_[node]);
        node = child;
      }
    }
  }
  auto& slot = nodes_[node].targets[static_cast<std::size_t>(method)];
  if (slot >= 0) throw std::invalid_argument(where + ": declared twice");
  slot = target;
  nodes_[node].has_target = true;
  ++routes_;
}

// Indexes the literal just added: into the index while it stays at most
// half full, else into a new one twice the size, so adding n literals
// costs O(n) in all, not O(n^2).
void RouteTable::index_literals(Node& n) {
  const auto count = n.literals.size();
  if (count < kIndexFrom) return;
  if (!n.literal_index.empty() && 2 * count <= n.literal_index.size()) return index_literal(n, count - 1);
  std::size_t slots = 16;
  while (slots < 2 * count) slots *= 2;
  n.literal_index.assign(slots, 0);
  for (std::uint32_t i = 0; i < count; ++i) index_literal(n, i);
}

void RouteTable::index_literal(Node& n, std::uint32_t i) {
  const std::size_t mask = n.literal_index.size() - 1;
  auto at = segment_hash(n.literals[i].first) & mask;
  while (n.literal_index[at] != 0) at = (at + 1) & mask;
  n.literal_index[at] = i + 1;
}

std::int64_t RouteTable::literal_child(const Node& n, std::string_view seg) {
  if (n.literal_index.empty()) {
    for (const auto& [lit, child] : n.literals)
      if (same_segment(lit, seg)) return child;
    return -1;
  }
  const std::size_t mask = n.literal_index.size() - 1;
  for (auto at = segment_hash(seg) & mask;; at = (at + 1) & mask) {
    const std::uint32_t slot = n.literal_index[at];
    if (slot == 0) return -1;
    const auto& [lit, child] = n.literals[slot - 1];
    if (same_segment(lit, seg)) return child;
  }
}

bool RouteTable::walk(std::uint32_t node, std::string_view rest, Method method, Match& m,
                      std::uint32_t& end_node) const {
  for (;;) {
    bool last = false;
    const std::string_view seg = next_segment(rest, last);
    const Node& n = nodes_[node];
    auto descend = [&](std::uint32_t child) {
      if (last) {
        if (!nodes_[child].has_target) return false;
        end_node = child;
        return true;
      }
      return walk(child, rest, method, m, end_node);
    };
    // Literals are distinct, so at most one matches.
    const auto child = literal_child(n, seg);
    if (n.params.empty()) {
      // Nothing to try instead: follow the literal without recursing.
      if (child < 0) return false;
      if (last) return descend(static_cast<std::uint32_t>(child));
      node = static_cast<std::uint32_t>(child);
      continue;
    }
    if (child >= 0 && descend(static_cast<std::uint32_t>(child))) return true;
    for (const auto& e : n.params) {
      if (!matches(e.type, seg)) continue;
      const std::size_t at = m.param_count++;
      m.params[at] = Param{e.name, seg};
      if (descend(e.child)) return true;
      --m.param_count;
    }
    return false;
  }
}

RouteTable::Match RouteTable::find(Method method, std::string_view path) const {
  Match m;
  if (path.empty() || path[0] != '/') return m;
  std::uint32_t end = 0;
  if (!walk(0, path.substr(1), method, m, end)) {
    m.param_count = 0;
    return m;
  }
  const auto& targets = nodes_[end].targets;
  const auto t = targets[static_cast<std::size_t>(method)];
  if (t >= 0) {
    m.result = Match::Result::Found;
    m.target = static_cast<std::uint32_t>(t);
    return m;
  }
  m.result = Match::Result::MethodNotAllowed;
  m.param_count = 0;
  for (std::size_t i = 0; i < kMethodCount; ++i)
    if (targets[i] >= 0) m.allowed |= static_cast<std::uint8_t>(1u << i);
  return m;
}

std::string RouteTable::allow_header(std::uint8_t allowed) {
  std::string s;
  for (std::size_t i = 0; i < kMethodCount; ++i) {
    if (!(allowed & (1u << i))) continue;
    if (!s.empty()) s += ", ";
    s += method_name(static_cast<Method>(i));
  }
  return s;
}

}  // namespace edri::http
