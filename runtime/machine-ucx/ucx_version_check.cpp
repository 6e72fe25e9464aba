#include "ucx_version_check.h"

#include <dlfcn.h>
#include <fmt/core.h>
#include <ucp/api/ucp.h>
#include <ucp/api/ucp_version.h>

#include <cstdio>
#include <cstdlib>

namespace ucharm::machine {

std::string ucx_version_mismatch(unsigned built_major, unsigned built_minor, unsigned loaded_major,
                                 unsigned loaded_minor, unsigned loaded_release,
                                 const std::string& loaded_from) {
  if (built_major == loaded_major && built_minor == loaded_minor) return {};
  return fmt::format(
      "ucharm was compiled against UCX {}.{}, but this process loaded UCX {}.{}.{} from {}. "
      "UCX's ABI differs between minor versions. Remove the other UCX from LD_LIBRARY_PATH "
      "and LD_PRELOAD, or rebuild ucharm with UCHARM_UCX_ROOT set to the UCX you want.",
      built_major, built_minor, loaded_major, loaded_minor, loaded_release, loaded_from);
}

void check_ucx_version() {
  unsigned major = 0, minor = 0, release = 0;
  ucp_get_version(&major, &minor, &release);
  Dl_info info{};
  // The file the dynamic loader bound ucp_get_version to: the libucp.so.0 in use.
  const char* from = ::dladdr(reinterpret_cast<void*>(&ucp_get_version), &info) && info.dli_fname
                         ? info.dli_fname
                         : "an unknown file";
  const std::string what = ucx_version_mismatch(UCP_API_MAJOR, UCP_API_MINOR, major, minor, release, from);
  if (what.empty()) return;
  // Before the bootstrap: no PE number and no peers to tell; the launcher sees the exit.
  fmt::print(stderr, "ucharm: UCX version mismatch, abort: {}\n", what);
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace ucharm::machine
