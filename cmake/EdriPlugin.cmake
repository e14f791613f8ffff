# edri_add_plugin(<name> SOURCES <file>... [ASSETS <dir>...]
#                 [OUTPUT_DIRECTORY <dir>])
#
# Builds the plugin <name>.so (no "lib" prefix: EDRI_PLUGINS names the file)
# against edri::api, with hidden visibility. Each ASSETS folder (relative to
# the current source folder) is copied next to it under its own name at
# every build of the plugin, where Registry::assets finds it (a relative
# folder is read from the plugin file's own folder). The plugin
# goes to OUTPUT_DIRECTORY, else EDRI_PLUGIN_OUTPUT_DIRECTORY (edri's own
# tree: build/plugins), else CMAKE_LIBRARY_OUTPUT_DIRECTORY, else the
# current binary folder.
function(edri_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES;ASSETS" ${ARGN})
  if(NOT ARG_SOURCES OR ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "edri_add_plugin(${name} SOURCES <file>... [ASSETS <dir>...] [OUTPUT_DIRECTORY <dir>])")
  endif()
  set(out ${ARG_OUTPUT_DIRECTORY})
  foreach(fallback EDRI_PLUGIN_OUTPUT_DIRECTORY CMAKE_LIBRARY_OUTPUT_DIRECTORY CMAKE_CURRENT_BINARY_DIR)
    if(NOT out)
      set(out ${${fallback}})
    endif()
  endforeach()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE edri::api)
  set_target_properties(${name} PROPERTIES
    PREFIX "" LIBRARY_OUTPUT_DIRECTORY ${out}
    CXX_VISIBILITY_PRESET hidden)
  set_property(GLOBAL APPEND PROPERTY EDRI_PLUGIN_TARGETS ${name})
  if(ARG_ASSETS)
    set(copies)
    foreach(dir ${ARG_ASSETS})
      get_filename_component(src ${dir} ABSOLUTE)
      get_filename_component(folder ${src} NAME)
      if(NOT IS_DIRECTORY ${src})
        message(FATAL_ERROR "edri_add_plugin(${name}): ASSETS ${dir} is not a folder")
      endif()
      list(APPEND copies COMMAND ${CMAKE_COMMAND} -E copy_directory ${src} ${out}/${folder})
    endforeach()
    add_custom_target(${name}_assets ${copies} VERBATIM)
    add_dependencies(${name} ${name}_assets)
  endif()
endfunction()
