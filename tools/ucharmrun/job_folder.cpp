// The job folder: $TMPDIR/ucharmrun.PID.XXXXXX holds the PMIx server's files (and the
// pipe and log directories of the job's CUDA MPS daemon, if it has one). The owner
// holds an flock on it while it lives; one whose owner pid is gone and whose lock is free
// was left by a killed launcher and is removed by the next one.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "ucharmrun.h"

namespace ucharmrun {
namespace {

constexpr std::string_view kDirPrefix = "ucharmrun.";

std::optional<pid_t> owner_of(std::string_view name) {
  if (!name.starts_with(kDirPrefix)) return std::nullopt;
  name.remove_prefix(kDirPrefix.size());
  size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 9 || name.size() - dot - 1 != 6)
    return std::nullopt;
  long long pid = 0;
  for (char c : name.substr(0, dot)) {
    if (c < '0' || c > '9') return std::nullopt;
    pid = pid * 10 + (c - '0');
  }
  if (pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

void remove_stale_folders(const std::string& base, bool verbose) {
  DIR* d = ::opendir(base.c_str());
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    auto pid = owner_of(e->d_name);
    if (!pid || *pid == ::getpid()) continue;
    if (::kill(*pid, 0) == 0 || errno == EPERM) continue;  // the owner may still live
    std::string path = base + "/" + e->d_name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    // The lock guards a live launcher whose pid we cannot see (another pid namespace).
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      quit_stale_mps(path, verbose);  // its CUDA MPS daemon, if it had one, outlived it
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
      if (verbose && !ec) say(fmt::format("ucharmrun: removed {}, left by a killed ucharmrun\n", path));
    }
    ::close(fd);
  }
  ::closedir(d);
}

}  // namespace

// $TMPDIR/ucharmrun.PID.XXXXXX, locked for as long as this launcher lives.
void JobFolder::create(bool verbose) {
  std::error_code ec;
  std::string base = std::filesystem::temp_directory_path(ec).string();
  if (ec) throw LaunchError{fmt::format("no temporary folder: {}", ec.message())};
  remove_stale_folders(base, verbose);
  std::string tmpl = fmt::format("{}/{}{}.XXXXXX", base, kDirPrefix, ::getpid());
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw LaunchError{fmt::format("cannot create a folder in {}: {}", base, errno_text(errno))};
  path_ = buf.data();
  fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
    throw LaunchError{fmt::format("cannot lock {}: {}", path_, errno_text(errno))};
}

void JobFolder::remove() {
  if (!path_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    path_.clear();
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace ucharmrun
