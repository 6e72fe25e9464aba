// A stand-in for NVIDIA's nvidia-cuda-mps-control on machines without the driver, so the
// launcher tests can check what ucharmrun does with it. The tests put it in PATH under that
// name (a symlink). It behaves as the real tool does towards its caller:
//   nvidia-cuda-mps-control -d   forks a daemon (in a session of its own) and returns at
//                                once; the daemon then listens on
//                                $CUDA_MPS_PIPE_DIRECTORY/control (default /tmp/nvidia-mps)
//                                and writes nvidia-cuda-mps-control.pid there;
//   nvidia-cuda-mps-control      (a client) sends each line of its stdin to the daemon;
//                                "quit" ends the daemon. No daemon: a message, exit 1.
// Every step appends a line to $FAKE_MPS_RECORD:
//   start pipe=P log=L mode=M    (-d; M: the pipe directory's permission bits, octal)
//   daemon pid=N pipe=P          (the daemon listens)
//   client CMD pipe=P            (a client sends CMD)
//   quit pid=N pipe=P            (the daemon got quit and ends)
// FAKE_MPS_FAIL=1 makes -d fail as the real one does when it cannot start (exit 1).
// The daemon ends by itself after 120 s, so a failed test leaves nothing running.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

void record(const std::string& line) {
  const char* file = std::getenv("FAKE_MPS_RECORD");
  if (!file) return;
  const int fd = ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = line + "\n";
  [[maybe_unused]] ssize_t w = ::write(fd, text.data(), text.size());  // one write: whole lines
  ::close(fd);
}

sockaddr_un address(const std::string& pipe) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s/control", pipe.c_str());
  return a;
}

[[noreturn]] void daemon_loop(const std::string& pipe) {
  ::setsid();
  ::alarm(120);
  const int null = ::open("/dev/null", O_RDWR);
  for (int fd : {0, 1, 2}) ::dup2(null, fd);
  sockaddr_un a = address(pipe);
  ::unlink(a.sun_path);
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0 || ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s, 16) != 0)
    ::_exit(1);
  const std::string pid = std::to_string(::getpid());
  const std::string pid_file = pipe + "/nvidia-cuda-mps-control.pid";
  if (FILE* f = std::fopen(pid_file.c_str(), "w")) {
    std::fputs(pid.c_str(), f);
    std::fclose(f);
  }
  record("daemon pid=" + pid + " pipe=" + pipe);
  for (;;) {
    const int c = ::accept4(s, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    std::string got;
    char ch;
    while (::read(c, &ch, 1) == 1 && ch != '\n') got += ch;  // EOF at once: a probe
    ::close(c);
    if (got == "quit") {
      record("quit pid=" + pid + " pipe=" + pipe);
      ::unlink(a.sun_path);
      ::unlink(pid_file.c_str());
      ::_exit(0);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string pipe = env_or("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps");
  if (argc > 1 && std::strcmp(argv[1], "-d") == 0) {
    struct stat st {};
    const unsigned mode = ::stat(pipe.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
    char octal[8];
    std::snprintf(octal, sizeof octal, "%o", mode);
    record("start pipe=" + pipe + " log=" + env_or("CUDA_MPS_LOG_DIRECTORY", "/var/log/nvidia-mps") +
           " mode=" + octal);
    if (std::getenv("FAKE_MPS_FAIL")) {
      std::fprintf(stderr, "fake: An instance of this daemon is already running\n");
      return 1;
    }
    const pid_t pid = ::fork();
    if (pid == 0) daemon_loop(pipe);
    return pid > 0 ? 0 : 1;  // as the real -d: back before the daemon is ready
  }
  for (std::string line; std::getline(std::cin, line);) {
    if (line.empty()) continue;
    record("client " + line + " pipe=" + pipe);
    sockaddr_un a = address(pipe);
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      std::fprintf(stderr, "Cannot find MPS control daemon process\n");
      return 1;
    }
    line += '\n';
    [[maybe_unused]] ssize_t w = ::write(s, line.data(), line.size());
    ::close(s);
  }
  return 0;
}
