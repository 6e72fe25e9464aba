#----------------------------------------------------------------
# Generated CMake target import file for configuration "Release".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "ucharm::converse" for configuration "Release"
set_property(TARGET ucharm::converse APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(ucharm::converse PROPERTIES
  IMPORTED_LINK_DEPENDENT_LIBRARIES_RELEASE "Boost::context;fmt::fmt"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libucharm-converse.so"
  IMPORTED_SONAME_RELEASE "libucharm-converse.so"
  )

list(APPEND _cmake_import_check_targets ucharm::converse )
list(APPEND _cmake_import_check_files_for_ucharm::converse "${_IMPORT_PREFIX}/lib/libucharm-converse.so" )

# Import target "ucharm::core" for configuration "Release"
set_property(TARGET ucharm::core APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(ucharm::core PROPERTIES
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libucharm-core.so"
  IMPORTED_SONAME_RELEASE "libucharm-core.so"
  )

list(APPEND _cmake_import_check_targets ucharm::core )
list(APPEND _cmake_import_check_files_for_ucharm::core "${_IMPORT_PREFIX}/lib/libucharm-core.so" )

# Import target "ucharm::ucharmrun" for configuration "Release"
set_property(TARGET ucharm::ucharmrun APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(ucharm::ucharmrun PROPERTIES
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/bin/ucharmrun"
  )

list(APPEND _cmake_import_check_targets ucharm::ucharmrun )
list(APPEND _cmake_import_check_files_for_ucharm::ucharmrun "${_IMPORT_PREFIX}/bin/ucharmrun" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)
