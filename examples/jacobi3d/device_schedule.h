// --mode device: what the host enqueues and when (pure logic, unit-tested without a GPU).
//
// The host only enqueues: per iteration the interior kernel, a stream wait per face with a
// neighbour (its flag reaching the round of this iteration) and the shell kernel, which
// writes the new boundary layers into the neighbours' ghost buffers and signals. A PE's
// blocks are enqueued in iteration-major order: no block enqueues iteration s + 1 before
// every block of the PE has enqueued iteration s. CUDA multiplexes a process's streams onto
// a few hardware queues, in enqueue order, and cannot see that a stream wait depends on
// another stream's kernel; in iteration-major order every wait comes after (in every
// queue) the kernel that satisfies it, so the queues never hold a wait in front of its own
// producer. Each block runs at most `lookahead` iterations ahead of its finished ones, so
// a PE's queues stay short and it keeps answering messages.
#pragma once

#include <climits>

namespace jacobi::devmode {

// One block's progress through its steps: step base - 1 is the priming step (its current
// layers into the neighbours' buffers), step it >= base is iteration it.
struct Schedule {
  long base = 0;        // the iteration the windows were opened at
  long next = -1;       // the next step to enqueue
  long target = 0;      // iterations below this are to be enqueued
  long lookahead = 8;   // at most this many enqueued iterations unfinished

  explicit Schedule(long base_iteration = 0, long look = 8)
      : base(base_iteration), next(base_iteration - 1), target(base_iteration), lookahead(look) {}
  bool primed() const { return next >= base; }
  // May the next step be enqueued now? `ready`: the windows are mapped; `finished`: the
  // iterations the GPU has completed (the progress word: base before the first).
  bool may_enqueue(bool ready, long finished) const {
    if (!ready) return false;
    if (!primed()) return true;
    return next < target && next - finished < lookahead;
  }
  bool running(long finished) const { return finished < target; }
};

// Enqueues what may be enqueued, iteration-major, over a PE's blocks. M has
// `long step() const`, `bool may_enqueue() const` and `void enqueue()` (which advances
// step() by one). Returns the number of steps enqueued.
template <class Range>
int enqueue_in_order(Range& members) {
  int total = 0;
  for (;;) {
    long low = LONG_MAX;
    for (auto* m : members) low = m->step() < low ? m->step() : low;
    int now = 0;
    bool all = true;
    for (auto* m : members) {
      if (m->step() != low) continue;
      if (m->may_enqueue()) {
        m->enqueue();
        ++now;
      } else {
        all = false;
      }
    }
    total += now;
    if (!all || now == 0) return total;
  }
}

}  // namespace jacobi::devmode
