// Runs a command with a time limit and captures its output: the multi-process tests
// start real jobs through ucharmrun, mpirun, or with no launcher.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace ucharm::test {

struct Result {
  int code = -1;         // exit code, 128+signal, or -1 when it had to be killed
  bool timed_out = false;
  std::string out, err;
  double seconds = 0;
};

inline Result run(const std::vector<std::string>& argv, double limit_s = 60,
                  const std::vector<std::string>& extra_env = {}) {
  Result r;
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) return r;
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);  // its own group, so a timeout can stop every process it started
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (const auto& e : extra_env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execvp(a[0], a.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    double left = limit_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    ::poll(fds, 2, static_cast<int>(left * 1000) + 1);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.timed_out) r.code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  return r;
}

inline std::string describe(const Result& r) {
  return "exit " + std::to_string(r.code) + (r.timed_out ? " (timed out)" : "") + " after " +
         std::to_string(r.seconds) + " s\n--- stdout:\n" + r.out + "--- stderr:\n" + r.err;
}

}  // namespace ucharm::test
