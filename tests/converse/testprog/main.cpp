// Multi-process Converse checks, one mode per run: converse_testprog MODE [args].
// Each mode verifies its own results and ends with "MODE ok" printed by PE 0 and exit
// code 0, or aborts with a message naming what went wrong. Driven by test_multiprocess.cpp
// through ucharmrun (and mpirun, and with no launcher at all).
//
// Each mode lives in testprog/<mode>.cpp and exposes one start function. To add a mode:
// write the file, declare its start function below, add a line to kModes, and list the
// file in tests/converse/CMakeLists.txt (TESTPROG_SOURCES).
#include "common.h"

#include <string_view>

namespace testprog {

using StartFn = void (*)(const Args&);

// The modes' start functions, one per file.
namespace pingpong { void start(const Args&); }
namespace storm { void start(const Args&); }
namespace bcast { void start(const Args&); }
namespace barrier { void start(const Args&); }
namespace thread { void start(const Args&); }
namespace threadstep { void start(const Args&); }
namespace foreign { void start(const Args&); }
namespace queue { void start(const Args&); }
namespace async { void start(const Args&); }
namespace device { void start(const Args&); }
namespace channel { void start(const Args&); }
namespace wrap { void start(const Args&); }
namespace truncate { void start(const Args&); }
namespace memtype { void start(const Args&); }
namespace stream { void start(const Args&); }
namespace sched { void start(const Args&); }
namespace idle { void start(const Args&); }
namespace wait { void start(const Args&); }
namespace hello {
void start(const Args&);
void stdoutlines(const Args&);
}  // namespace hello
namespace order { void start(const Args&); }
namespace place { void start(const Args&); }
namespace flood { void start(const Args&); }
namespace startbcast { void start(const Args&); }
namespace rndvidle { void start(const Args&); }
namespace ending {
void exitcall(const Args&);
void throws(const Args&);
void exitstorm(const Args&);
}  // namespace ending
namespace fail {
void abort(const Args&);
void killpeer(const Args&);
void exitcode(const Args&);
void badpe(const Args&);
void badhandler(const Args&);
void suspendmain(const Args&);
void streamnogpu(const Args&);
}  // namespace fail

// Whether a mode needs a GPU selected even without "cuda" among its arguments.
enum class Gpu { IfAsked, Always };

struct Mode {
  std::string_view name;
  StartFn start;
  Gpu gpu = Gpu::IfAsked;
};

constexpr Mode kModes[] = {
    {"pingpong", pingpong::start},
    {"storm", storm::start},
    {"bcast", bcast::start},
    {"barrier", barrier::start},
    {"thread", thread::start},
    {"threadstep", threadstep::start},
    {"foreign", foreign::start},
    {"queue", queue::start},
    {"async", async::start},
    {"device", device::start},
    {"channel", channel::start},
    {"wrap", wrap::start},
    {"truncate", truncate::start},
    {"memtype", memtype::start, Gpu::Always},
    {"stream", stream::start, Gpu::Always},
    {"sched", sched::start},
    {"idle", idle::start},
    {"abort", fail::abort},
    {"killpeer", fail::killpeer},
    {"exitcode", fail::exitcode},
    {"badpe", fail::badpe},
    {"badhandler", fail::badhandler},
    {"suspendmain", fail::suspendmain},
    {"streamnogpu", fail::streamnogpu},
    {"wait", wait::start},
    {"hello", hello::start},
    {"stdoutlines", hello::stdoutlines},
    {"order", order::start},
    {"place", place::start},
    {"flood", flood::start},
    {"startbcast", startbcast::start},
    {"rndvidle", rndvidle::start},
    {"exitcall", ending::exitcall},
    {"throw", ending::throws},
    {"exitstorm", ending::exitstorm},
};

namespace {

const Mode* find_mode(std::string_view name) {
  for (const Mode& m : kModes)
    if (m.name == name) return &m;
  return nullptr;
}

void start(int argc, char** argv) {
  if (argc < 2) {
    CmiError("usage: converse_testprog MODE [args]\n");
    std::exit(2);
  }
  static Args args;  // modes may keep references into it
  args.mode = argv[1];
  args.args.assign(argv + 2, argv + argc);
  for (const auto& a : args.args) args.cuda = args.cuda || a == "cuda";
  Buf::on_gpu = args.cuda;
  const Mode* mode = find_mode(args.mode);
#ifdef UCHARM_TEST_CUDA
  if (args.cuda || (mode && mode->gpu == Gpu::Always)) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) CmiAbort("no CUDA device visible");
    cudaSetDevice(CmiMyPe() % n);  // one GPU per PE where there are enough
  }
#else
  if (args.cuda) CmiAbort("'cuda' needs a build with CUDA");
#endif
  if (!mode) {
    CmiError("converse_testprog: unknown mode '%s'\n", args.mode.c_str());
    std::exit(2);
  }
  mode->start(args);
}

}  // namespace
}  // namespace testprog

int main(int argc, char** argv) {
  // As `python -u` leaves it: stdout unbuffered before the runtime starts.
  if (argc > 1 && std::string_view(argv[1]) == "stdoutlines") std::setvbuf(stdout, nullptr, _IONBF, BUFSIZ);
  ConverseInit(argc, argv, testprog::start);
}
