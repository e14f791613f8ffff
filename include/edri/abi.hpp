// What a plugin and edri-server must share to trust each other's types:
// the plugin ABI version (the layout of edri's own types) and the
// toolchain (the layout of the standard library's and nlohmann's types,
// which cross dlopen inside edri's: std::function, std::string,
// nlohmann::json). edri-server refuses a plugin that differs in either.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

namespace edri {

inline constexpr std::uint32_t kPluginAbiVersion = 22;

}  // namespace edri

#define EDRI_ABI_STRINGIFY_(x) #x
#define EDRI_ABI_STRINGIFY(x) EDRI_ABI_STRINGIFY_(x)

// The compiler, by family and major version: within one, the C++ ABI and
// the code generated for the headers both sides compile are the same.
#if defined(__clang__)
#define EDRI_TOOLCHAIN_COMPILER "clang " EDRI_ABI_STRINGIFY(__clang_major__)
#elif defined(__GNUC__)
#define EDRI_TOOLCHAIN_COMPILER "gcc " EDRI_ABI_STRINGIFY(__GNUC__)
#else
#define EDRI_TOOLCHAIN_COMPILER "unknown compiler"
#endif

// The standard library, with its major release and whether std::string
// is the C++11 one: the layouts of every std type a plugin hands over.
#if defined(_LIBCPP_VERSION)
#define EDRI_TOOLCHAIN_STDLIB "libc++ " EDRI_ABI_STRINGIFY(_LIBCPP_VERSION)
#elif defined(__GLIBCXX__)
#define EDRI_TOOLCHAIN_STDLIB \
  "libstdc++ " EDRI_ABI_STRINGIFY(_GLIBCXX_RELEASE) " cxx11-abi " EDRI_ABI_STRINGIFY(_GLIBCXX_USE_CXX11_ABI)
#else
#define EDRI_TOOLCHAIN_STDLIB "unknown standard library"
#endif

#define EDRI_TOOLCHAIN_JSON                                                                \
  "nlohmann_json " EDRI_ABI_STRINGIFY(NLOHMANN_JSON_VERSION_MAJOR) "." EDRI_ABI_STRINGIFY( \
      NLOHMANN_JSON_VERSION_MINOR) "." EDRI_ABI_STRINGIFY(NLOHMANN_JSON_VERSION_PATCH)

// "gcc 12; libstdc++ 12 cxx11-abi 1; nlohmann_json 3.11.2", say.
#define EDRI_TOOLCHAIN EDRI_TOOLCHAIN_COMPILER "; " EDRI_TOOLCHAIN_STDLIB "; " EDRI_TOOLCHAIN_JSON
