# edri_grpc_descriptor(<target> <name> PROTOS <file.proto>... [IMPORT_DIRS <dir>...])
#
# Compiles the .proto files with protoc into one descriptor set, with every
# file they import (--include_imports), and embeds it in <target>: the
# header <name>_descriptor.hpp (on <target>'s include path) defines
#
#   inline constexpr char <name>_descriptor[] = {...};
#
# which a plugin hands to Registry::grpc_service as
# std::string(<name>_descriptor, sizeof <name>_descriptor). The plugin
# then needs no libprotobuf of its own: the listener reads the descriptor.
set(EDRI_GRPC_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/EdriEmbedBytes.cmake)

function(edri_grpc_descriptor target name)
  cmake_parse_arguments(ARG "" "" "PROTOS;IMPORT_DIRS" ${ARGN})
  if(NOT ARG_PROTOS)
    message(FATAL_ERROR "edri_grpc_descriptor(${target} ${name}): name the .proto files with PROTOS")
  endif()
  find_program(EDRI_PROTOC protoc REQUIRED)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${name}_descriptor)
  set(set_file ${out_dir}/${name}.pb)
  set(header ${out_dir}/${name}_descriptor.hpp)
  set(protos)
  set(includes)
  foreach(p ${ARG_PROTOS})
    get_filename_component(abs ${p} ABSOLUTE)
    list(APPEND protos ${abs})
  endforeach()
  if(NOT ARG_IMPORT_DIRS)
    list(GET protos 0 first)
    get_filename_component(dir ${first} DIRECTORY)
    set(ARG_IMPORT_DIRS ${dir})
  endif()
  foreach(d ${ARG_IMPORT_DIRS})
    get_filename_component(abs ${d} ABSOLUTE)
    list(APPEND includes -I ${abs})
  endforeach()
  add_custom_command(OUTPUT ${header}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${EDRI_PROTOC} --include_imports --descriptor_set_out=${set_file} ${includes} ${protos}
    COMMAND ${CMAKE_COMMAND} -DIN=${set_file} -DOUT=${header} -DNAME=${name}_descriptor -P ${EDRI_GRPC_EMBED_SCRIPT}
    DEPENDS ${protos} ${EDRI_GRPC_EMBED_SCRIPT}
    COMMENT "protoc descriptor set ${name}")
  target_sources(${target} PRIVATE ${header})
  target_include_directories(${target} PRIVATE ${out_dir})
endfunction()
