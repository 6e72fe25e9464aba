// A bare PMIx client for the launcher tests: launcher_helper ACTION RANK CODE [stubborn].
// Every rank joins the job (PMIx_Init) and prints "rank R ready"; then rank RANK ("all":
// every rank)
//   exit:      leaves with CODE without finalizing (a failed rank; CODE 0 included),
//   finalize:  finalizes, then exits with CODE (an orderly end with a code),
//   abort:     calls PMIx_Abort (as CmiAbort and MPI_Abort do), then exits with CODE,
//   none:      does nothing,
// while the others wait until they are stopped. "stubborn" ranks ignore SIGTERM, SIGINT
// and SIGHUP, so only SIGKILL ends them.
//
// launcher_helper crash RANK UNTIL DIR [args...] plays a job under --restart-on-failure:
// while $UCHARM_RESTART_ATTEMPT < UNTIL, rank 0 records DIR as a complete checkpoint in
// $UCHARM_CHECKPOINT_RECORD (tmp + rename, as PE 0 of a ucharm program does; DIR "-":
// no record), then rank RANK kills itself with SIGKILL and the others exit when told;
// from attempt UNTIL on, every rank prints "rank R attempt K args: ARGV[1..]" and ends
// in order with code 0. Every rank prints "rank R attempt K record FILE" first.
//
// launcher_helper env NAME... : every rank prints "rank R NAME=VALUE" (or "rank R NAME
// unset") for each NAME of its environment, then ends in order with code 0.
#include <pmix.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

namespace {

// A peer failed (the launcher's PMIx event): leave at once, as ucharm's PEs do.
void on_failure(size_t, pmix_status_t, const pmix_proc_t*, pmix_info_t*, size_t, pmix_info_t*,
                size_t, pmix_event_notification_cbfunc_fn_t, void*) {
  ::_exit(1);
}

int crash(const pmix_proc_t& me, int argc, char** argv) {
  const unsigned target = static_cast<unsigned>(std::atoi(argv[2]));
  const int until = std::atoi(argv[3]);
  const std::string dir = argv[4];
  const char* rec = std::getenv("UCHARM_CHECKPOINT_RECORD");
  const char* att = std::getenv("UCHARM_RESTART_ATTEMPT");
  const int attempt = att ? std::atoi(att) : -1;
  std::printf("rank %u attempt %s record %s\n", me.rank, att ? att : "(unset)",
              rec ? rec : "(unset)");
  std::fflush(stdout);
  if (attempt >= until) {
    std::string args;
    for (int i = 1; i < argc; ++i) args += std::string(i > 1 ? " " : "") + argv[i];
    std::printf("rank %u attempt %d args: %s\n", me.rank, attempt, args.c_str());
    std::fflush(stdout);
    PMIx_Finalize(nullptr, 0);
    return 0;
  }
  pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED};
  PMIx_Register_event_handler(codes, 1, nullptr, 0, on_failure, nullptr, nullptr);
  if (me.rank == 0 && dir != "-" && rec) {
    const std::string tmp = std::string(rec) + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fputs(dir.c_str(), f);
      std::fclose(f);
      std::rename(tmp.c_str(), rec);
    }
  }
  if (me.rank == target) {
    // The record first, as a checkpoint completes before the failure it survives (however
    // long rank 0 takes to start: the test's own limit stops a job that never writes it).
    while (dir != "-" && rec && ::access(rec, F_OK) != 0) ::usleep(10000);
    ::raise(SIGKILL);
  }
  for (;;) ::pause();
}

int show_env(const pmix_proc_t& me, int argc, char** argv) {
  std::string out;
  for (int i = 2; i < argc; ++i) {
    const char* v = std::getenv(argv[i]);
    out += "rank " + std::to_string(me.rank) + " " + argv[i] + (v ? std::string("=") + v : " unset") + "\n";
  }
  std::fputs(out.c_str(), stdout);  // one write per rank: lines of ranks do not mix
  std::fflush(stdout);
  PMIx_Finalize(nullptr, 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool env = argc > 1 && std::strcmp(argv[1], "env") == 0;
  if ((argc < 4 && !env) || (std::strcmp(argv[1], "crash") == 0 && argc < 5)) {
    std::fprintf(stderr,
                 "usage: launcher_helper exit|finalize|abort|none RANK CODE [stubborn]\n"
                 "       launcher_helper crash RANK UNTIL DIR [args...]\n"
                 "       launcher_helper env NAME...\n");
    return 2;
  }
  const char* action = argv[1];
  const bool all = !env && std::strcmp(argv[2], "all") == 0;
  const unsigned target = env ? 0 : static_cast<unsigned>(std::atoi(argv[2]));
  const int code = env ? 0 : std::atoi(argv[3]);
  if (!env && argc > 4 && std::strcmp(argv[4], "stubborn") == 0)
    for (int s : {SIGTERM, SIGINT, SIGHUP}) ::signal(s, SIG_IGN);
  pmix_proc_t me;
  if (pmix_status_t rc = PMIx_Init(&me, nullptr, 0); rc != PMIX_SUCCESS) {
    std::fprintf(stderr, "launcher_helper: PMIx_Init: %s\n", PMIx_Error_string(rc));
    return 2;
  }
  if (std::strcmp(action, "crash") == 0) return crash(me, argc, argv);
  if (env) return show_env(me, argc, argv);
  std::printf("rank %u ready\n", me.rank);
  std::fflush(stdout);
  if (all || me.rank == target) {
    if (std::strcmp(action, "exit") == 0) ::_exit(code);
    if (std::strcmp(action, "finalize") == 0) {
      PMIx_Finalize(nullptr, 0);
      return code;
    }
    if (std::strcmp(action, "abort") == 0) {
      PMIx_Abort(code, "launcher_helper aborts", nullptr, 0);
      ::_exit(code);
    }
  }
  for (;;) ::pause();
}
