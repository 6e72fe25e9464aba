// One MPI rank: a chare array element whose user-level thread runs the program's main.
// Private to runtime/ampi.
#pragma once

#include "internal.h"
#include "pt2pt/p2p.h"

#include <ucharm/charm.h>

namespace ampi {

// The calling rank's thread waits until `done()` is true. It runs the scheduler's steps
// itself while it can (no switch to the scheduler and back for each message: the handler
// that completes its wait runs on its own stack) and suspends when the scheduler must run
// (another thread to resume, or the PE idle long enough to sleep). Whoever makes done()
// true must CthAwaken the thread unless it is the running one (see P2p::complete).
template <class Done>
void rank_wait(Done&& done) {
  while (!done())
    if (!CsdScheduleStepInThread()) rank_suspend();
}

class Main;

struct RankArgs {
  ck::ChareProxy<Main> main;
  int world_size = 0;
  void pup(PUP::er& p) { p | main; p | world_size; }
};

class Rank : public ck::ArrayElement<Rank> {
 public:
  explicit Rank(RankArgs a);
  void start();  // entry: starts the rank's thread

  int world_rank() const { return thisIndex; }
  int world_size() const { return world_size_; }
  CommTable& comms() { return *comms_; }
  P2p& p2p() { return p2p_; }
  const ck::CollectionRef& array_ref() const { return ckRef(); }
  bool initialized = false;
  bool finalized = false;
  bool exited = false;  // exit() after MPI_Finalize
  int thread_level = MPI_THREAD_SINGLE;  // provided by MPI_Init / MPI_Init_thread (Query_thread)
  struct BsendBuffer {                   // MPI_Buffer_attach's, handed back by MPI_Buffer_detach
    void* buffer = nullptr;
    int size = 0;
    bool attached = false;
  };
  BsendBuffer bsend_buffer;
  void finish(int code);  // main returned (or exit() after MPI_Finalize): contributes the code
  // libc's getopt state (optind, optarg, optopt, opterr) is one per process, but each rank
  // parses its own argv: the running rank's copy is in libc's variables, the others' here.
  struct Getopt {
    int ind = 1, err = 1, opt = '?';
    char* arg = nullptr;
  };
  void save_getopt();
  void load_getopt();

 private:
  static void thread_main(void* self);
  ck::ChareProxy<Main> main_;
  int world_size_;
  CommTablePtr comms_;
  P2p p2p_;
  std::vector<std::string> args_;  // this rank's private copy of the command line
  std::vector<char*> argv_;
  Getopt getopt_;
};

}  // namespace ampi
