# ucharm_add_ampi_executable(<name> <source>...)
#
# Builds an MPI program (C and/or C++ sources) for ucharm's AMPI, as ampicc does: the
# sources become a position-independent shared object linked with -Bsymbolic (target
# <name>_ampi_program; link your own libraries to it), and the executable target <name>
# is the AMPI loader with that object appended, so $<TARGET_FILE:<name>> is the program
# to run (`ucharmrun -n 2 <file> +vp 8`). Every rank gets a private copy of the program's
# globals (runtime/ampi/README.md). Do not strip the executable: strip drops the
# appended program.
#
# Needs the targets ucharm::ampi, ucharm::ampi_program, ucharm::ampi_loader and
# ucharm::ampi_compose, from
# find_package(ucharm) or from ucharm's own build.
function(ucharm_add_ampi_executable name)
  if(NOT ARGN)
    message(FATAL_ERROR "ucharm_add_ampi_executable(${name}): no sources given")
  endif()
  get_property(_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT CXX IN_LIST _languages)
    message(FATAL_ERROR "ucharm_add_ampi_executable(${name}): enable C++ in the project \
(project(... LANGUAGES C CXX)): the AMPI loader is C++, even for a C program")
  endif()
  set(program ${name}_ampi_program)
  add_library(${program} MODULE ${ARGN})
  # mpi.h and libucharm-ampi only: the program's language standard is its own.
  target_link_libraries(${program} PRIVATE ucharm::ampi_program)
  set_target_properties(${program} PROPERTIES POSITION_INDEPENDENT_CODE ON PREFIX ""
                        OUTPUT_NAME ${name}.program)
  # -Bsymbolic: the program's references to its own functions and globals bind to its own
  # copy (and a program's own MPI_X, for PMPI tools, wins over the library's).
  target_link_options(${program} PRIVATE LINKER:-Bsymbolic)
  # Undefined symbols are link errors, as for any program (the composing step reports a
  # missing main). GCC links the sanitizer runtimes into shared objects too; Clang leaves
  # their symbols to the executable, so only GCC gets the check.
  if(CMAKE_C_COMPILER_ID STREQUAL "GNU" OR CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_link_options(${program} PRIVATE LINKER:--no-undefined)
  endif()

  add_executable(${name} $<TARGET_OBJECTS:ucharm::ampi_loader>)
  target_link_libraries(${name} PRIVATE ucharm::ampi_loader ucharm::ampi)
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE CXX)
  # A new program object must give a new executable: relink the loader, then append.
  add_dependencies(${name} ${program})
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS $<TARGET_FILE:${program}>)
  add_custom_command(TARGET ${name} POST_BUILD
    COMMAND ucharm::ampi_compose $<TARGET_FILE:${name}> $<TARGET_FILE:${program}>
    COMMENT "Appending ${name}'s MPI program to the AMPI loader"
    VERBATIM)
endfunction()
