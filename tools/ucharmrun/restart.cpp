// --restart-on-failure N: after an attempt that ended because a rank died, the job starts
// again (a fresh PMIx namespace, the same job folder) from the checkpoint that PE 0 last
// recorded in $UCHARM_CHECKPOINT_RECORD, or from the beginning when none was recorded.
// A rank died when it was killed by a signal, or left the job (after joining it) without
// finalizing and without aborting. Ends the program chose (CkExit/CmiExit with a code on
// every PE, CmiAbort, MPI_Abort), a rank that never joined the job (a bad +option), a
// --timeout and a signal to ucharmrun are not restarted.
#include <fmt/core.h>
#include <signal.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "ucharmrun.h"

namespace ucharmrun {

std::optional<std::string> read_checkpoint_record(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;  // no checkpoint completed yet
    throw LaunchError{fmt::format("cannot read the checkpoint record {}: {}", file,
                                  errno_text(errno))};
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  // A path is short: more than 64 KiB is not a record.
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && text.size() < 65536)
    text.append(buf, static_cast<size_t>(n));
  const int err = errno;
  ::close(fd);
  if (n < 0)
    throw LaunchError{fmt::format("cannot read the checkpoint record {}: {}", file,
                                  errno_text(err))};
  std::string dir = text;
  if (dir.ends_with('\n')) dir.pop_back();  // tolerated: "one line"
  if (dir.empty() || dir.front() != '/' || dir.find('\n') != std::string::npos ||
      dir.find('\0') != std::string::npos || text.size() >= 65536)
    throw LaunchError{fmt::format(
        "the checkpoint record {} does not hold one absolute directory path ({} bytes)", file,
        text.size())};
  return dir;
}

std::vector<std::string> with_restart(std::vector<std::string> command, const std::string& dir) {
  bool replaced = false;
  // command[0] is the program; its arguments follow.
  for (size_t i = 1; i < command.size(); ++i) {
    if (command[i] == "+restart") {
      if (i + 1 < command.size()) command[i + 1] = dir;
      else command.push_back(dir);
      ++i;
      replaced = true;
    } else if (command[i].starts_with("+restart=")) {
      command[i] = "+restart=" + dir;
      replaced = true;
    }
  }
  if (!replaced) {
    command.push_back("+restart");
    command.push_back(dir);
  }
  return command;
}

namespace {

std::string how_it_died(int status) {
  if (WIFSIGNALED(status)) return fmt::format("signal {}", WTERMSIG(status));
  if (WEXITSTATUS(status) == 0) return "exit code 0 without finishing the job";
  return fmt::format("exit code {}", WEXITSTATUS(status));
}

}  // namespace

// Called after each attempt: true when the job is to start again (command_ and attempt_
// then describe the next attempt).
bool Launcher::prepare_restart(int code) {
  if (!death_ || code == 0 || got_signal_ || output_closed_ || opt_.restart_on_failure == 0)
    return false;
  const std::string who =
      fmt::format("rank {} died ({})", death_->rank, how_it_died(death_->status));
  if (attempt_ >= opt_.restart_on_failure) {
    say(fmt::format("ucharmrun: {}; not restarting: all {} restarts used\n", who,
                    opt_.restart_on_failure));
    return false;
  }
  if (deadline_ && Clock::now() >= *deadline_) {
    say(fmt::format("ucharmrun: {}; not restarting: --timeout {} s reached\n", who, opt_.timeout));
    return false;
  }
  std::optional<std::string> dir;
  try {
    dir = read_checkpoint_record(record_path_);
  } catch (const LaunchError& e) {  // the attempt's code stands
    say(fmt::format("ucharmrun: {}; {}; not restarting\n", who, e.msg));
    return false;
  }
  ++attempt_;
  command_ = dir ? with_restart(opt_.command, *dir) : opt_.command;
  say(fmt::format("ucharmrun: {}; restarting {} (attempt {} of {})\n", who,
                  dir ? "from checkpoint " + *dir
                      : std::string("from the beginning (no checkpoint recorded)"),
                  attempt_, opt_.restart_on_failure));
  reset_attempt();
  return true;
}

void Launcher::reset_attempt() {
  for (Rank& rk : ranks_) {
    for (int* fd : {&rk.out_fd, &rk.err_fd})
      if (*fd >= 0) ::close(*fd);
    rk = Rank{};
  }
  exited_ = 0;
  stop_ = Stop::None;
  next_step_.reset();
  exit_code_.reset();
  orderly_code_.reset();
  orderly_rank_.reset();
  orderly_deadline_.reset();
  death_.reset();
}

}  // namespace ucharmrun
