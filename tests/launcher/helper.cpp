// A bare PMIx client for the launcher tests: launcher_helper ACTION RANK CODE [stubborn].
// Every rank joins the job (PMIx_Init) and prints "rank R ready"; then rank RANK
//   exit:      leaves with CODE without finalizing (a failed rank; CODE 0 included),
//   finalize:  finalizes, then exits with CODE (an orderly end with a code),
//   none:      does nothing,
// while the others wait until they are stopped. "stubborn" ranks ignore SIGTERM, SIGINT
// and SIGHUP, so only SIGKILL ends them.
#include <pmix.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: launcher_helper exit|finalize|none RANK CODE [stubborn]\n");
    return 2;
  }
  const char* action = argv[1];
  const unsigned target = static_cast<unsigned>(std::atoi(argv[2]));
  const int code = std::atoi(argv[3]);
  if (argc > 4 && std::strcmp(argv[4], "stubborn") == 0)
    for (int s : {SIGTERM, SIGINT, SIGHUP}) ::signal(s, SIG_IGN);
  pmix_proc_t me;
  if (pmix_status_t rc = PMIx_Init(&me, nullptr, 0); rc != PMIX_SUCCESS) {
    std::fprintf(stderr, "launcher_helper: PMIx_Init: %s\n", PMIx_Error_string(rc));
    return 2;
  }
  std::printf("rank %u ready\n", me.rank);
  std::fflush(stdout);
  if (me.rank == target) {
    if (std::strcmp(action, "exit") == 0) ::_exit(code);
    if (std::strcmp(action, "finalize") == 0) {
      PMIx_Finalize(nullptr, 0);
      return code;
    }
  }
  for (;;) ::pause();
}
