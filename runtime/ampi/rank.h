// One MPI rank: a chare array element whose user-level thread runs the program's main.
// Private to runtime/ampi.
#pragma once

#include "internal.h"
#include "pt2pt/p2p.h"

#include <ucharm/charm.h>

#include <atomic>
#include <memory>
#include <vector>

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
  explicit Rank(CkMigrateMessage*);  // arriving (migration) or restarting (checkpoint)
  ~Rank() override;
  void start();  // entry: starts the rank's thread
  // The rank's state for a move or a checkpoint: its MPI state, then its thread with the
  // slice (stack, heap, program copy) when it has one.
  void pup(PUP::er& p) override;
  void ckAboutToMigrate() override {
    leaving_ = true;
    about_to_leave();
  }
  void about_to_leave();
  void image_arrived();  // after the slice was unpacked here (Program::arrived)
  void ckJustMigrated() override;
  void ResumeFromSync() override;  // the balancer is done: the thread goes on (migrate.cpp)
  void resume_after_checkpoint();  // entry: a checkpoint was written (or restarted from)

  int world_rank() const { return thisIndex; }
  int world_size() const { return world_size_; }
  CommTable& comms() { return *comms_; }
  FileTablePtr& files() { return files_; }  // io/: created at the first MPI_File_open
  P2p& p2p() { return p2p_; }
  const ck::CollectionRef& array_ref() const { return ckRef(); }
  // The rank's isomalloc slice (its thread's stack, the program's heap and copy): nullptr
  // where isomalloc is not available (the rank then cannot migrate).
  CmiIsoSlice* slice() const { return slice_; }
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
  // Large temporaries of the collectives (coll/coll.h Scratch), kept for the next call: a
  // fresh one each call faults its pages in again and, sent as a direct transfer, is
  // registered again. Runtime (glibc) memory; not packed: none is in use across a move.
  struct CollScratch {
    std::size_t cap = 0;
    std::unique_ptr<char[]> mem;
  };
  std::vector<CollScratch> coll_scratch;
  void finish(int code);  // main returned (or exit() after MPI_Finalize): contributes the code
  // libc's getopt state (optind, optarg, optopt, opterr) is one per process, but each rank
  // parses its own argv: the running rank's copy is in libc's variables, the others' here.
  struct Getopt {
    int ind = 1, err = 1, opt = '?';
    char* arg = nullptr;
  };
  void save_getopt();
  void load_getopt();
  // What else of the rank's execution travels with it (rank.cpp): its MPI_Wtime offset
  // and its setjmp key.
  void pup_context(PUP::er& p);
  // MPI_Wtime is the host's monotonic clock plus this (0 unless a move to another host
  // found that clock behind the time the rank had seen: its time never goes back).
  double wtime_offset = 0;
  // setjmp in the rank mangles the saved stack and code pointers with this key, not with
  // the process's pointer guard (glibc's), so that a jmp_buf stays valid after a move.
  std::uint64_t jmp_key = 0;
  // AMPI_Migrate (migrate.cpp): what the rank waits for in it, and its measured load.
  enum class Waiting : std::uint8_t { None, Balancer, Checkpoint, Moving };
  Waiting waiting = Waiting::None;
  bool measuring = true;       // AMPI_Load_start/stop_measure: time its thread runs counts
  double run_since = -1;       // when the thread last resumed (measuring)
  CthThread thread() const { return thread_; }
  // Registered with AMPI_Register_pup / about_to_migrate / just_migrated (the program's
  // functions and data: same addresses after a move).
  struct PupEntry {
    std::uintptr_t fn, data;
  };
  std::vector<PupEntry> pups;
  std::uintptr_t about_to_migrate = 0, just_migrated = 0;
  // They run on the rank's thread (migrate.cpp, wait_for): about_to_migrate is due while
  // the thread is resumed for it; the rank arrived here and just_migrated is due.
  void run_about_to_migrate();
  bool callback_due_ = false;
  bool arrived_ = false;
  // OS threads of the rank (threads.h, threads.cpp). Counted from the starting thread (any
  // thread of the rank) and counted out by the PE; while any runs, the rank cannot move.
  std::atomic<int> program_threads{0};  // started by the program (pthread_create, std::thread)
  std::atomic<int> omp_threads{0};      // in the rank's OpenMP thread pool (idle between regions)
  // The PE's own fields: regions its thread is in; other threads' calls being run for it.
  int omp_regions = 0;
  int foreign_calls = 0;
  CthThread calls_waiter = nullptr;  // woken when foreign_calls drops to 0
  CthThread join_waiter = nullptr;   // woken when one of its threads ended (pthread_join)
  bool main_in_mpi = false;          // its main thread is suspended in an MPI call
  int outside_mpi = 0;               // ... waiting for the program instead (threads::OutsideMpi)
  void* omp_saved = nullptr;         // libgomp's TLS block for this rank while it is switched out

 private:
  static void thread_main(void* self);
  ck::ChareProxy<Main> main_;
  int world_size_;
  CommTablePtr comms_;
  FileTablePtr files_;
  P2p p2p_;
  std::vector<std::string> args_;  // this rank's private copy of the command line
  std::vector<char*> argv_;
  Getopt getopt_;
  CmiIsoSlice* slice_ = nullptr;
  CthThread thread_ = nullptr;
  void* image_ = nullptr;  // the program copy in the slice (Program::main_for), if it moves
  bool leaving_ = false;  // packed for a move: the thread and slice go with the message
};


// Why ranks cannot migrate in this process ("" when they can).
const char* rank_migration_unavailable();

}  // namespace ampi
