# FindLLHTTP: llhttp built from the C sources Debian's `node-llhttp` ships.
#
# Debian packages llhttp only for Node.js, but installs its generated C
# sources (`/usr/share/llhttp/*.c`) and header
# (`/usr/share/include/llhttp/llhttp.h`). This module compiles them into a
# static library and provides the imported target `LLHTTP::llhttp`.
#
# Result variables: LLHTTP_FOUND, LLHTTP_INCLUDE_DIR, LLHTTP_SOURCES,
# LLHTTP_VERSION.

find_path(LLHTTP_INCLUDE_DIR llhttp.h
  HINTS ${LLHTTP_ROOT}
  PATHS /usr/share/include/llhttp /usr/include/llhttp /usr/include
  PATH_SUFFIXES include/llhttp)

find_path(LLHTTP_SOURCE_DIR llhttp.c
  HINTS ${LLHTTP_ROOT}
  PATHS /usr/share/llhttp
  PATH_SUFFIXES src share/llhttp)

if(LLHTTP_INCLUDE_DIR AND EXISTS "${LLHTTP_INCLUDE_DIR}/llhttp.h")
  file(STRINGS "${LLHTTP_INCLUDE_DIR}/llhttp.h" _llhttp_ver REGEX "#define LLHTTP_VERSION_(MAJOR|MINOR|PATCH)")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" LLHTTP_VERSION "${_llhttp_ver}")
endif()

if(LLHTTP_SOURCE_DIR)
  set(LLHTTP_SOURCES
    ${LLHTTP_SOURCE_DIR}/api.c
    ${LLHTTP_SOURCE_DIR}/http.c
    ${LLHTTP_SOURCE_DIR}/llhttp.c)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(LLHTTP
  REQUIRED_VARS LLHTTP_INCLUDE_DIR LLHTTP_SOURCE_DIR
  VERSION_VAR LLHTTP_VERSION)

if(LLHTTP_FOUND AND NOT TARGET LLHTTP::llhttp)
  add_library(edri_llhttp STATIC ${LLHTTP_SOURCES})
  set_target_properties(edri_llhttp PROPERTIES
    C_STANDARD 11 POSITION_INDEPENDENT_CODE ON)
  # Generated code: keep our warning flags away from it.
  target_compile_options(edri_llhttp PRIVATE -w)
  # The strict parser: what follows chunk data must be CRLF, header values
  # may not hold bare CR or LF, and so on; the lenient one skips such bytes,
  # which lets a request be read two ways (smuggling).
  target_compile_definitions(edri_llhttp PRIVATE LLHTTP_STRICT_MODE=1)
  target_include_directories(edri_llhttp SYSTEM PUBLIC ${LLHTTP_INCLUDE_DIR})
  add_library(LLHTTP::llhttp ALIAS edri_llhttp)
endif()

mark_as_advanced(LLHTTP_INCLUDE_DIR LLHTTP_SOURCE_DIR)
