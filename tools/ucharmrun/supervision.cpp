// Supervising the job: the ranks' output is forwarded line by line; a rank that fails
// decides the exit code, the others are told (a PMIx event), then get SIGTERM and SIGKILL;
// signals to the launcher, --timeout and orderly ends with a code end the job likewise.
#include <fmt/core.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "ucharmrun.h"

namespace ucharmrun {
namespace {

// How long the stopping steps wait: after a failure the others are told and normally exit
// at once; SIGTERM follows, then SIGKILL.
constexpr auto kTellGrace = std::chrono::seconds(2);
constexpr auto kKillGrace = std::chrono::seconds(3);
// A PE that ended in order with a non-zero code (CmiExit(n)): the others are ending too
// and get this long before the job is stopped as failed.
constexpr auto kOrderlyGrace = std::chrono::seconds(3);
// After the last rank exited, output still held by its children is waited for this long.
constexpr auto kDrainGrace = std::chrono::seconds(2);

std::string describe(int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "exited with code 0 without finishing the job";
  if (WIFSIGNALED(status))
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("exited with code {}", WEXITSTATUS(status));
}
int code_of(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace

void Launcher::forward(int r, int& fd, std::string& partial, FILE* to) {
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    if (!partial.empty()) emit(r, partial + "\n", to);
    partial.clear();
    ::close(fd);
    fd = -1;
    return;
  }
  partial.append(buf, static_cast<size_t>(n));
  size_t pos = partial.rfind('\n');
  if (pos == std::string::npos) return;
  emit(r, partial.substr(0, pos + 1), to);
  partial.erase(0, pos + 1);
}

// Plain writes: a closed stdout is reported as SIGPIPE through the signalfd.
void Launcher::emit(int r, const std::string& lines, FILE* to) {
  if (!opt_.prefix) {
    std::fwrite(lines.data(), 1, lines.size(), to);
  } else {
    std::string out;
    for (size_t s = 0; s < lines.size();) {
      size_t e = lines.find('\n', s);
      out += fmt::format("[{}] {}\n", r, std::string_view(lines).substr(s, e - s));
      s = e + 1;
    }
    std::fwrite(out.data(), 1, out.size(), to);
  }
  std::fflush(to);
}

// The job ends with `code` unless an earlier cause already decided it.
bool Launcher::decide(int code) {
  if (exit_code_) return false;
  exit_code_ = code;
  return true;
}

// A rank failed: tell the rest (they report it and exit), then stop them.
void Launcher::fail(int r, int status) {
  // Leaving with code 0 without finishing still fails the job.
  if (!decide(code_of(status) == 0 ? 1 : code_of(status))) return;
  std::string why = describe(status);
  const std::string amsg = server_.client(r).abort_msg;
  say(fmt::format("ucharmrun: rank {} (PE {}, pid {}) {}{}; {}\n", r, r,
                  ranks_[static_cast<size_t>(r)].pid, why,
                  amsg.empty() ? "" : ", after aborting: " + amsg,
                  running() ? fmt::format("stopping the other {} PEs", running())
                            : std::string("ending the job")));
  if (running()) server_.notify_failure(r, amsg.empty() ? why : "aborted: " + amsg);
  begin_stop();
}

void Launcher::signal_all(int sig) {
  for (Rank& rk : ranks_)
    if (!rk.exited && rk.pid > 0) ::kill(rk.pid, sig);
}

// Stopping the job: the others were told (failure) -> SIGTERM -> SIGKILL.
void Launcher::begin_stop() {
  if (stop_ != Stop::None) return;
  stop_ = Stop::Told;
  next_step_ = Clock::now() + kTellGrace;
}
void Launcher::terminate_all() {
  if (stop_ == Stop::Termed || stop_ == Stop::Killed) return;
  signal_all(SIGTERM);
  stop_ = Stop::Termed;
  next_step_ = Clock::now() + kKillGrace;
}
void Launcher::kill_all() {
  signal_all(SIGKILL);
  stop_ = Stop::Killed;
  next_step_.reset();
}

void Launcher::on_signal(int sig) {
  if (sig == SIGCHLD) return;
  if (sig == SIGPIPE) {  // stdout or stderr is gone: nowhere to put the job's output
    output_closed_ = true;  // and no point in a restart
    if (decide(128 + sig)) terminate_all();
    return;
  }
  // SIGINT/SIGTERM/SIGHUP: the PEs get SIGTERM, SIGKILL if they linger or on a repeat.
  if (got_signal_) {
    say(fmt::format("ucharmrun: SIG{} again; killing every PE\n", sigabbrev_np(sig)));
    kill_all();
    return;
  }
  got_signal_ = true;
  if (decide(128 + sig))
    say(fmt::format("ucharmrun: got SIG{}; stopping the job\n", sigabbrev_np(sig)));
  terminate_all();
}

void Launcher::reap() {
  // Collected first: a rank that died and a peer that aborted on noticing it can end
  // together, and the death, not the abort, is then the job's cause.
  struct Ended {
    size_t r;
    int status;
    ClientState c;
    bool died() const {
      return c.abort_msg.empty() && (WIFSIGNALED(status) || (c.connected && !c.finalized));
    }
  };
  std::vector<Ended> ended;
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    for (size_t r = 0; r < ranks_.size(); ++r) {
      Rank& rk = ranks_[r];
      if (rk.pid != pid || rk.exited) continue;
      rk.exited = true;
      rk.status = status;
      ++exited_;
      ended.push_back({r, status, server_.client(static_cast<int>(r))});
    }
  }
  std::stable_partition(ended.begin(), ended.end(), [](const Ended& e) { return e.died(); });
  for (const Ended& e : ended) {
    if (exit_code_) return;  // the job is being stopped already
    // After PMIx_Finalize the rank ended in order (CmiExit(code)); a rank that joined
    // the job and left without finalizing has failed, even with code 0, since its
    // peers would wait for it forever. A program that never joins (not a ucharm
    // program) ends in order with code 0.
    const int code = code_of(e.status);
    if (e.c.finalized || (!e.c.connected && code == 0)) {
      if (code != 0 && !orderly_rank_) {
        orderly_code_ = code;
        orderly_rank_ = static_cast<int>(e.r);
        orderly_deadline_ = Clock::now() + kOrderlyGrace;
      }
    } else {
      if (e.died()) death_ = Death{static_cast<int>(e.r), e.status};
      fail(static_cast<int>(e.r), e.status);
    }
  }
}

int Launcher::supervise() {
  std::optional<Clock::time_point> all_exited_at;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, int>> who;  // (rank, 1 = stdout, 2 = stderr)
    fds.push_back({sig_fd_, POLLIN, 0});
    who.push_back({-1, 0});
    for (size_t r = 0; r < ranks_.size(); ++r) {
      if (ranks_[r].out_fd >= 0) { fds.push_back({ranks_[r].out_fd, POLLIN, 0}); who.push_back({int(r), 1}); }
      if (ranks_[r].err_fd >= 0) { fds.push_back({ranks_[r].err_fd, POLLIN, 0}); who.push_back({int(r), 2}); }
    }
    if (running() == 0) {
      if (fds.size() == 1) break;
      // The ranks are gone but something they started holds their output open.
      if (!all_exited_at) all_exited_at = Clock::now();
      if (Clock::now() - *all_exited_at > kDrainGrace) {
        for (Rank& rk : ranks_) {
          for (int* fd : {&rk.out_fd, &rk.err_fd})
            if (*fd >= 0) { ::close(*fd); *fd = -1; }
        }
        break;
      }
    }
    ::poll(fds.data(), fds.size(), 100);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      auto [r, stream] = who[k];
      if (r < 0) {
        signalfd_siginfo si;
        while (::read(sig_fd_, &si, sizeof si) == sizeof si) on_signal(static_cast<int>(si.ssi_signo));
        reap();
        continue;
      }
      Rank& rk = ranks_[static_cast<size_t>(r)];
      if (stream == 1) forward(r, rk.out_fd, rk.out_partial, stdout);
      else forward(r, rk.err_fd, rk.err_partial, stderr);
    }
    reap();
    const auto now = Clock::now();
    if (deadline_ && !exit_code_ && now > *deadline_) {
      decide(kExitTimeout);
      say(fmt::format("ucharmrun: the job ran past --timeout {} s; stopping it\n", opt_.timeout));
      terminate_all();
    }
    if (orderly_deadline_ && now > *orderly_deadline_ && running() && !exit_code_) {
      const int r = *orderly_rank_;
      decide(*orderly_code_);
      say(fmt::format("ucharmrun: rank {} (PE {}) ended the job with code {}, but {} PEs are "
                      "still running {} s later; stopping them\n", r, r, *orderly_code_,
                      running(), kOrderlyGrace.count()));
      server_.notify_failure(r, fmt::format("ended the job with code {}", *orderly_code_));
      begin_stop();
    }
    if (next_step_ && now > *next_step_) {
      if (stop_ == Stop::Told) terminate_all();
      else kill_all();
    }
  }
  return exit_code_.value_or(orderly_code_.value_or(0));
}

}  // namespace ucharmrun
