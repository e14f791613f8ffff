# edri installed as a service (docs/operations.md, "Installing"): beside
# bin/edri-server, the headers and the CMake package (CMakeLists.txt),
#   lib/edri/plugins/        the example notes app (notes.so, audit.so, its page)
#   share/pkgconfig/edri.pc  the plugin API for builds without CMake
#   lib/systemd/system/edri.service, /etc/edri/edri.toml, share/doc/edri/
# and CPack's .deb of it all (scripts/package.sh builds and checks it).
#
# The unit, the config and the .pc name paths of the install itself, so
# they are written at install time, when CMAKE_INSTALL_PREFIX is the one
# installed to (`cmake --install --prefix P`, or /usr inside CPack). An
# install to /usr puts the unit and the config where Debian 12 keeps them
# (/lib/systemd/system, /etc); any other prefix keeps them under it.

set(EDRI_PACKAGING_DIR ${CMAKE_CURRENT_SOURCE_DIR}/packaging)

install(TARGETS notes audit LIBRARY DESTINATION lib/edri/plugins)
install(DIRECTORY ${EDRI_PLUGIN_OUTPUT_DIRECTORY}/notes_assets DESTINATION lib/edri/plugins)
install(FILES README.md DESTINATION share/doc/edri)
install(DIRECTORY docs/ DESTINATION share/doc/edri FILES_MATCHING PATTERN "*.md")

install(CODE "
  set(EDRI_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(EDRI_BIN_DIR \"\${CMAKE_INSTALL_PREFIX}/bin\")
  set(EDRI_PLUGIN_DIR \"\${CMAKE_INSTALL_PREFIX}/lib/edri/plugins\")
  set(EDRI_DOC_DIR \"\${CMAKE_INSTALL_PREFIX}/share/doc/edri\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  if(CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(root \"\")
  else()
    set(root \"\${CMAKE_INSTALL_PREFIX}\")
  endif()
  set(generated \"${CMAKE_BINARY_DIR}/packaging\")
  # file(INSTALL) puts DESTDIR (CPack's staging folder) before these itself.
  configure_file(\"${EDRI_PACKAGING_DIR}/edri.service.in\" \"\${generated}/edri.service\" @ONLY)
  configure_file(\"${EDRI_PACKAGING_DIR}/edri.toml.in\" \"\${generated}/edri.toml\" @ONLY)
  configure_file(\"${EDRI_PACKAGING_DIR}/edri.pc.in\" \"\${generated}/edri.pc\" @ONLY)
  # edri-server(1), from the settings table (src/runtime/manpage.hpp).
  execute_process(COMMAND \"$<TARGET_FILE:edri-server>\" --print-manpage
                  OUTPUT_FILE \"\${generated}/edri-server.1\" COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND gzip -9nf \"\${generated}/edri-server.1\" COMMAND_ERROR_IS_FATAL ANY)
  file(INSTALL \"\${generated}/edri-server.1.gz\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/share/man/man1\")
  execute_process(COMMAND gzip -9nc \"${EDRI_PACKAGING_DIR}/debian/changelog\"
                  OUTPUT_FILE \"\${generated}/changelog.gz\" COMMAND_ERROR_IS_FATAL ANY)
  file(INSTALL \"\${generated}/edri.service\" DESTINATION \"\${root}/lib/systemd/system\")
  file(INSTALL \"\${generated}/edri.toml\" DESTINATION \"\${root}/etc/edri\")
  file(INSTALL \"\${generated}/edri.pc\" DESTINATION \"\${CMAKE_INSTALL_PREFIX}/share/pkgconfig\")
  file(INSTALL \"\${generated}/changelog.gz\" \"${EDRI_PACKAGING_DIR}/debian/copyright\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/share/doc/edri\")
")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME edri)
set(CPACK_PACKAGE_VENDOR "the edri developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "multi-process event-routing application server")
set(CPACK_PACKAGE_DESCRIPTION
    "edri-server serves handlers written as C++ plugins over HTTP/1.1, HTTP/2,\n gRPC, WebSocket and Server-Sent Events, each application domain in a\n process of its own, events routed between processes over shared memory.\n This package holds the server, the plugin API with its CMake and\n pkg-config packages, a systemd unit and the example notes app.")
set(CPACK_PACKAGE_CONTACT "edri developers <edri@users.noreply.github.com>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION httpd)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS adduser)
# The plugin API's headers include nlohmann json's: needed to build a plugin, not to serve.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS nlohmann-json3-dev)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${EDRI_PACKAGING_DIR}/debian/postinst ${EDRI_PACKAGING_DIR}/debian/postrm ${EDRI_PACKAGING_DIR}/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
