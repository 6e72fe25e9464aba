// The UCX this process loaded must be the one ucharm was compiled against: UCX changes its
// ABI between minor versions, and a foreign libucp.so.0 (Debian's 1.13, say) can be
// picked up by soname through LD_LIBRARY_PATH, LD_PRELOAD or another library in the
// process. Internal to machine-ucx.
#pragma once

#include <string>

namespace ucharm::machine {

// Aborts the process (exit code 1) with a message naming both versions and the loaded
// library's path when the loaded libucp's major.minor differs from the headers'. Call it
// before any other UCX function.
void check_ucx_version();

// The message check_ucx_version prints, or "" when the versions agree (for tests).
std::string ucx_version_mismatch(unsigned built_major, unsigned built_minor, unsigned loaded_major,
                                 unsigned loaded_minor, unsigned loaded_release,
                                 const std::string& loaded_from);

}  // namespace ucharm::machine
