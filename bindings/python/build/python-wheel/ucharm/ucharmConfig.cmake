
####### Expanded from @PACKAGE_INIT@ by configure_package_config_file() #######
####### Any changes to this file will be overwritten by the next CMake run ####
####### The input file was ucharmConfig.cmake.in                            ########

get_filename_component(PACKAGE_PREFIX_DIR "${CMAKE_CURRENT_LIST_DIR}/../../../" ABSOLUTE)

macro(set_and_check _var _file)
  set(${_var} "${_file}")
  if(NOT EXISTS "${_file}")
    message(FATAL_ERROR "File or directory ${_file} referenced by variable ${_var} does not exist !")
  endif()
endmacro()

macro(check_required_components _NAME)
  foreach(comp ${${_NAME}_FIND_COMPONENTS})
    if(NOT ${_NAME}_${comp}_FOUND)
      if(${_NAME}_FIND_REQUIRED_${comp})
        set(${_NAME}_FOUND FALSE)
      endif()
    endif()
  endforeach()
endmacro()

####################################################################################
# ucharm::converse, ucharm::core and ucharm::ampi are shared libraries that carry their own RPATH (as
# DT_RPATH, ahead of LD_LIBRARY_PATH) to the UCX and PMIx ucharm was built against, so an
# application needs nothing else to link and run them. ucharm::ucharmrun is the launcher.
include("${CMAKE_CURRENT_LIST_DIR}/ucharmTargets.cmake")
# MPI programs: ucharm::ampi is the MPI library (mpi.h), but a program must be built with
# ucharm_add_ampi_executable(<name> <sources>...) (or bin/ampicc, bin/ampicxx), which puts
# the AMPI loader in front of it: it starts the runtime and gives each rank its own copy of
# the program's globals. Linking ucharm::ampi into a plain executable is not supported.
include("${CMAKE_CURRENT_LIST_DIR}/UcharmAmpi.cmake")
set(UCHARM_LAUNCHER "${PACKAGE_PREFIX_DIR}/bin/ucharmrun")
# The UCX ucharm was compiled against: an application that also uses UCX directly must
# use this one (UCX's ABI changes between minor versions).
set(UCHARM_UCX_LIBRARY_DIR "/work/main/.venv/lib/python3.11/site-packages/libucx/lib")
set(UCHARM_UCX_VERSION "1.22.0")
if(NOT EXISTS "${UCHARM_UCX_LIBRARY_DIR}/libucp.so.0")
  set(ucharm_FOUND FALSE)
  set(ucharm_NOT_FOUND_MESSAGE "ucharm was built against UCX ${UCHARM_UCX_VERSION} in \
${UCHARM_UCX_LIBRARY_DIR}, which has no libucp.so.0 any more: rebuild and reinstall ucharm")
  return()
endif()
check_required_components(ucharm)
