// RouteTable: method + path -> route target, with typed path parameters.
//
// A small type with no I/O: routes are added at start-up and looked up per
// request. Templates are '/'-separated segments; a segment is literal text
// or a parameter `{name}` / `{name:str}`, `{name:int}` (a 64-bit integer)
// or `{name:uuid}` (8-4-4-4-12 hex). At each segment a literal
// wins over a parameter, and parameters are tried int, uuid, str; a path
// whose parameter has the wrong type does not match (404).
//
// Lookup is a walk down a segment trie; it allocates nothing. A node with
// many literal children (an API's resources under /api/v1) finds the one
// it needs through a small open-addressing hash index, one probe or two,
// instead of comparing the segment with each in turn.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <edri/plugin.hpp>

namespace edri::http {

enum class ParamType : std::uint8_t { Int, Uuid, Str };

inline constexpr std::size_t kMethodCount = 7;
inline constexpr std::size_t kMaxPathParams = 8;

class RouteTable {
 public:
  struct Match {
    enum class Result : std::uint8_t { Found, NotFound, MethodNotAllowed };
    Result result = Result::NotFound;
    std::uint32_t target = 0;
    std::uint8_t allowed = 0;  // bit per edri::Method, when MethodNotAllowed
    // The first param_count are set; the others are left unwritten (a
    // lookup pays for the parameters it finds, not for eight).
    union Params {
      Params() {}
      Param& operator[](std::size_t i) { return slots[i]; }
      const Param& operator[](std::size_t i) const { return slots[i]; }
      Param slots[kMaxPathParams];
    } params;
    std::size_t param_count = 0;
    std::span<const Param> path_params() const { return {params.slots, param_count}; }
  };

  // Adds a route; throws std::invalid_argument for a malformed template, a
  // route that is already there, or one that takes a parameter in a place
  // where another route names it differently.
  void add(Method method, std::string_view path_template, std::uint32_t target);

  // `path` is the request path without the query. Parameter values are
  // views into `path`.
  Match find(Method method, std::string_view path) const;

  // "GET, HEAD, POST" for an allowed-methods mask.
  static std::string allow_header(std::uint8_t allowed);

  std::size_t size() const { return routes_; }

  // The parameters of a template, in order: "/a/{id:int}/{s}" ->
  // (id, Int), (s, Str). The template must be valid (add() accepted it).
  static std::vector<std::pair<std::string, ParamType>> parameters(std::string_view path_template);

 private:
  struct ParamEdge {
    ParamType type;
    std::string name;
    std::uint32_t child;
  };
  struct Node {
    std::vector<std::pair<std::string, std::uint32_t>> literals;
    // Over kIndexFrom literals: slots of 1 + an index into `literals` (0:
    // empty), a power of two at least twice their number.
    std::vector<std::uint32_t> literal_index;
    std::vector<ParamEdge> params;  // in try order: int, uuid, str
    std::array<std::int64_t, kMethodCount> targets;
    bool has_target = false;  // any of targets set: a route ends here
    Node() { targets.fill(-1); }
  };
  // Below this many literals a node compares them in turn: as fast as
  // hashing the segment, and no index to keep.
  static constexpr std::size_t kIndexFrom = 8;

  static void index_literals(Node& n);
  static void index_literal(Node& n, std::uint32_t i);
  // The child for literal `seg`, or -1.
  static std::int64_t literal_child(const Node& n, std::string_view seg);

  bool walk(std::uint32_t node, std::string_view rest, Method method, Match& m, std::uint32_t& end_node) const;

  std::vector<Node> nodes_{Node{}};
  std::size_t routes_ = 0;
};

// The whole of `s` is a 64-bit integer: what Request::int_param and
// int_query can read ("-" and digits only, no '+', no overflow).
bool is_int_segment(std::string_view s);
bool is_uuid_segment(std::string_view s);

}  // namespace edri::http
