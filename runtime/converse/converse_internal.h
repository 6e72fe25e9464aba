// Converse's per-PE state, reached through one accessor (room for an SMP mode that
// keeps one PeState per PE thread).
#pragma once

#include <atomic>

#include <ucharm/converse.h>

#include <chrono>
#include <memory>
#include <cstdint>
#include <vector>

#include "ccs.h"
#include "options.h"
#include "pool.h"
#include "queue.h"

namespace ucharm::converse {

struct PeState {
  int my_pe = 0;
  int num_pes = 1;
  RuntimeOptions options;
  std::chrono::steady_clock::time_point start_time = std::chrono::steady_clock::now();
  MsgPool pool;
  MsgQueue queue;
  std::vector<CmiHandler> handlers;
  std::vector<CmiPlaceFn> placements;  // by handler; CmiRegisterPlacement
  bool stop_scheduler = false;
  bool exiting = false;
  bool in_backlog_wait = false;  // a send is waiting for flow-control credit
  bool exit_arrived = false;     // an exit message is queued: sends no longer wait
  bool traced_idle = false;      // the tracer was told idle began (trace_hooks.idle_end due)
  bool polling = false;          // a poller is registered (rma.cpp): run them, sleep short
  bool yield_when_idle = false;  // more PEs than cores: an idle poll gives the core away (sched_yield)
  long long idle_since_ns = 0;
  unsigned idle_polls = 0;
  unsigned since_poll = 0;  // messages taken from the queue since the network was polled
  // internal handler indices
  int h_exit = -1, h_barrier_arrive = -1, h_barrier_release = -1, h_thread_resume = -1;
  // barrier: rounds are numbered; PE 0 counts arrivals of the current and next round
  std::uint64_t barrier_round = 0;
  std::uint64_t barrier_released = 0;  // highest released round + 1
  int barrier_arrivals[2] = {0, 0};
  // threads
  CthThread current_thread = nullptr;
  CmiEmbedHooks hooks;
  CmiTraceHooks trace_hooks;
  // Finished threads' stacks and thread records, reused by CthCreate (threads.cpp). Last,
  // so that the fields the message path reads keep their places.
  struct FreeStack {
    std::size_t asked;   // the size CthCreate was given
    std::size_t mapped;  // the mapping, guard page included (Boost's stack_context.size)
    void* sp;            // its top
  };
  std::vector<FreeStack> free_stacks;
  std::vector<CthThread> free_threads;
  // Pollers (rma.cpp); a removed one keeps its place (fn null) until the next compaction.
  struct Poller {
    CmiPollerFn fn;
    void* ctx;
    int id;
  };
  std::vector<Poller> pollers;
  int last_poller_id = 0;
  bool in_pollers = false;
  unsigned poll_sleeps = 0;  // short sleeps in this idle period (their length doubles)
  // Work pushed by other threads of the process (CmiPushForeignWork), newest first.
  std::atomic<CmiForeignWork*> foreign{nullptr};
  // The physical-node topology (CmiPhysicalNodeID & co.), built on first use.
  std::vector<int> pe_node, pe_node_rank;
  std::vector<std::vector<int>> node_pes;
  // CCS (ccs.cpp): handlers and the request being handled; on PE 0 the server, whose
  // sockets the scheduler serves while ccs_server is set.
  std::unique_ptr<ccs::State> ccs;
  bool ccs_server = false;
};
// Runs the embedder's exit hook once (CmiExit, ConverseExit, CmiAbort).
void run_exit_hook(int code);

// The one PE of this process (non-SMP). An SMP mode would make this thread-local.
extern PeState g_pe_state;
inline PeState& pe_state() { return g_pe_state; }
void thread_resume_handler(void* msg);
// A completion message (or nullptr) into this PE's queue: the machine's Completion for the
// operations whose callers pass one (device transfers, CmiVectorSendNoCopy).
void enqueue_done(void* msg);
void print_banner();
void device_init();
// Pollers (rma.cpp): runs them (true: one found work); an idle PE's short sleep.
bool run_pollers();
// Runs the work other threads pushed (true: there was some); a load when there is none.
bool run_foreign_work();
inline bool foreign_pending(const PeState& s) { return s.foreign.load(std::memory_order_relaxed) != nullptr; }
void poller_idle_wait();

}  // namespace ucharm::converse
