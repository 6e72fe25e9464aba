// Reading /proc files of processes that may exit meanwhile.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace ucharm::test {

// The whole file, or what was read before an error; empty if it cannot be opened. A read of
// a process that exits between the listing and the read fails (ESRCH), where a stream would
// throw from its iterator.
inline std::string proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  char buf[4096];
  ssize_t got;
  while ((got = ::read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<std::size_t>(got));
  ::close(fd);
  return text;
}

}  // namespace ucharm::test
