// Checkpoints: the program's state written to disk, and runs that restart from it.
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/callback.h>

#include <string>

#pragma GCC visibility push(default)

namespace ck {

// Writes a checkpoint of the whole program to `dir` (created if missing) and then sends
// `done` (no arguments). It first waits for quiescence (no entry-method message queued or in
// flight anywhere), so call it where the program waits for it, e.g. from the main chare
// after a reduction, with `done` resuming the work. Every array element, group branch and
// singleton chare (the main chare too) is written through its pup() and rebuilt with its
// migration constructor (C(CkMigrateMessage*) or C()); the readonly globals travel too.
// Files are written beside the previous checkpoint and a manifest naming them replaces the
// old one last (an atomic rename), so a crash while writing leaves the previous checkpoint
// whole; each file carries a checksum, so a torn or edited one is reported, not loaded.
//
// A run started with `+restart DIR` (on any number of PEs) rebuilds that state instead of
// constructing the main chare: elements go to the PE their array's map gives them, a group
// branch on PE p is rebuilt from the old branch C::ckRestartSource(p, old_num_pes) if the
// class has that static function, else from old branch p % old_num_pes; singleton chares go
// to their PE modulo the PE count. Once every object is back, `restarted` is sent (no
// arguments). Entry-method messages and reductions in flight are never part of a checkpoint
// (quiescence), and a reduction with contributions pending is an error.
void start_checkpoint(const std::string& dir, const CkCallback& done, const CkCallback& restarted);

// Charm++'s call: `cb` runs after writing, and again after a restart from this checkpoint.
inline void CkStartCheckpoint(const char* dir, const CkCallback& cb) { start_checkpoint(dir, cb, cb); }

// About this run: started with +restart (and from how many PEs), or not.
struct RestartInfo {
  bool restarted = false;
  int old_num_pes = 0;
  std::string dir;
};
const RestartInfo& restart_info();

}  // namespace ck

#pragma GCC visibility pop
