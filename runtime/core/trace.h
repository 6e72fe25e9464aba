// The timeline tracer behind `+trace FILE` (private to the core). Each PE records entry
// executions, idle time, message sends (flows), migrations and load-balancing steps into a
// preallocated buffer and writes it to its own part file, FILE with ".peN.json" (see
// part_path); the launcher merges the parts into FILE when the job ends. The format is
// Chrome trace-event JSON as Perfetto reads it; docs/programming-guide/tracing.md
// describes every event. Everything here is a cheap no-op while tracing is off.
#pragma once

#include <ucharm/charm.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ck::detail::trace {

// This PE's switch (one PE per process, like Converse's PE state): read inline on every
// send and entry, so that tracing off costs one predictable branch.
extern bool g_on;
inline bool enabled() { return g_on; }

// Starts recording into this PE's part of `file` (called once per PE at start-up). A file
// that cannot be opened is a user error: the PE aborts with a message naming it.
void open(const std::string& file);
// A message send to `dest_pe` of `bytes`; returns its flow id (this PE << 40 | a counter,
// unique in the job), or 0 while tracing is off. Call it inside the sending entry.
std::uint64_t send(int dest_pe, std::size_t bytes);
// An entry method starts / ends on this PE. Begin/end pairs nest (an entry run inside
// another, a threaded entry's wait); `flow_id` (0: none) is the id send() gave the sender.
// `chare` and `entry` must live for the run (registry strings): only pointers are kept.
void begin_entry(const char* chare, const char* entry, const Index& idx, int src_pe,
                 std::uint64_t flow_id);
void end_entry();
// An element leaves `from_pe` (arriving = false, on from_pe) or reaches `to_pe`
// (arriving = true, on to_pe); the two ends are joined by a flow.
void migration(const char* chare, const Index& idx, int from_pe, int to_pe,
               std::size_t bytes, bool arriving);
// A load-balancing step (PE 0): per-PE load before and after, objects moved of `objects`.
void lb_step(int step, const char* strategy, const std::vector<double>& pe_load_before,
             const std::vector<double>& pe_load_after, int moved, int objects);
// Writes what is buffered and closes the part (at exit; safe to call again).
void flush_and_close();

// While tracing, the tracer owns Converse's idle hooks; another listener to idle begin
// (true) / end (false) gets called from them too (the balancer's idle time).
void set_idle_listener(void (*listener)(bool begin));

// PE `pe`'s part of trace `file`: "t.json" -> "t.pe3.json", "t" -> "t.pe3.json".
std::string part_path(const std::string& file, int pe);

}  // namespace ck::detail::trace
