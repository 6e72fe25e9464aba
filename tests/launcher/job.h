// What the launcher tests share: a private TMPDIR, a launcher running in the background
// in its own process group (so the tests can check that no process of the job is left),
// and the command line of a job with a time limit.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../common/proc.h"
#include "../common/run.h"

namespace launcher_test {

using ucharm::test::describe;
using ucharm::test::Result;
using ucharm::test::run;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::string kRun = UCHARMRUN_PATH;
const std::string kProg = TESTPROG_PATH;
const std::string kHelper = HELPER_PATH;

inline bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

inline size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// A private TMPDIR for one test, removed afterwards.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/uclt.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    return out;
  }
  std::string env() const { return "TMPDIR=" + path; }
};

// Live (not zombie) processes in process group `pgid`.
inline std::vector<pid_t> live_in_group(pid_t pgid) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string stat = ucharm::test::proc_file(std::string("/proc/") + e->d_name + "/stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') out.push_back(std::atoi(e->d_name));
  }
  ::closedir(d);
  return out;
}

// Polls until no process of the group is left; false after a minute (orphans would stay
// forever: this is no time bound on how fast they go).
inline bool group_ends(pid_t pgid, double limit_s = 60) {
  const auto t0 = Clock::now();
  while (!live_in_group(pgid).empty()) {
    if (std::chrono::duration<double>(Clock::now() - t0).count() > limit_s) return false;
    ::usleep(50000);
  }
  return true;
}

// A launcher running in the background, in its own process group (so the ranks are in
// it too), with its output collected as it comes.
class Job {
 public:
  Job(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
    ::setpgid(pid_, pid_);  // also here, so the group exists before we signal it
    ::close(out[1]);
    ::close(err[1]);
    fds_[0] = out[0];
    fds_[1] = err[0];
  }
  ~Job() {
    if (pid_ > 0 && !reaped_) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }
  pid_t pid() const { return pid_; }

  // Reads output until stdout holds `times` copies of `marker`; false on end or timeout.
  bool wait_for(const std::string& marker, size_t times, double limit_s) {
    const auto t0 = Clock::now();
    while (count(out_, marker) < times) {
      double left = limit_s - std::chrono::duration<double>(Clock::now() - t0).count();
      if (left <= 0 || !pump(left)) return false;
    }
    return true;
  }

  // Waits for the launcher to exit; its code (128+signal if killed), -1 on timeout.
  int wait_exit(double limit_s) {
    const auto t0 = Clock::now();
    for (;;) {
      int status = 0;
      pid_t p = ::waitpid(pid_, &status, WNOHANG);
      if (p == pid_) {
        reaped_ = true;
        while (pump(0.5)) {
        }
        seconds_ = std::chrono::duration<double>(Clock::now() - t0).count();
        return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
      }
      double left = limit_s - std::chrono::duration<double>(Clock::now() - t0).count();
      if (left <= 0) return -1;
      pump(std::min(left, 0.1));
    }
  }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }
  double seconds() const { return seconds_; }
  std::string text() const { return "--- stdout:\n" + out_ + "--- stderr:\n" + err_; }

 private:
  // Reads what is there within `limit_s`; false once both streams are closed.
  bool pump(double limit_s) {
    pollfd p[2] = {{fds_[0], POLLIN, 0}, {fds_[1], POLLIN, 0}};
    if (fds_[0] < 0 && fds_[1] < 0) return false;
    ::poll(p, 2, static_cast<int>(limit_s * 1000) + 1);
    for (int i = 0; i < 2; ++i) {
      if (fds_[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = ::read(fds_[i], buf, sizeof buf);
      if (n <= 0) {
        ::close(fds_[i]);
        fds_[i] = -1;
      } else {
        (i == 0 ? out_ : err_).append(buf, static_cast<size_t>(n));
      }
    }
    return fds_[0] >= 0 || fds_[1] >= 0;
  }

  pid_t pid_ = -1;
  bool reaped_ = false;
  int fds_[2] = {-1, -1};
  std::string out_, err_;
  double seconds_ = 0;
};

inline std::vector<std::string> launcher(int n, std::vector<std::string> cmd, std::vector<std::string> opts = {}) {
  std::vector<std::string> argv = {kRun, "-n", std::to_string(n), "--timeout", "100"};
  argv.insert(argv.end(), opts.begin(), opts.end());
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return argv;
}

// The launcher's folder in `tmp`: ucharmrun.PID.XXXXXX.
inline bool has_folder_of(const TempDir& tmp, pid_t pid) {
  for (const auto& e : tmp.entries())
    if (e.starts_with("ucharmrun." + std::to_string(pid) + ".")) return true;
  return false;
}

}  // namespace launcher_test
