// Quiescence detection and start-up (ck::start<Main>).
// Part of <ucharm/charm.h>, the header to include.
#pragma once

#include <ucharm/charm/chare.h>

#pragma GCC visibility push(default)

namespace ck {

// ---- quiescence detection -----------------------------------------------------------------------
// `cb` runs (with no arguments) once no entry-method message is queued or in flight anywhere.
void start_qd(const CkCallback& cb);

// ---- a readonly value for embedders -------------------------------------------------------------
// For a runtime embedded in an interpreter (the Python bindings): one value of bytes, set on
// PE 0 before the main chare's constructor returns; every other PE gets it with the
// program's readonly globals, before any other message runs, through the hook (set on every
// PE before ck::start; null: none).
void set_embedder_readonly(std::string value);
const std::string& embedder_readonly();
void set_embedder_readonly_hook(void (*arrived)(const std::string& value));

// ---- start-up ---------------------------------------------------------------------------------
namespace detail {
int start(int argc, char** argv, ChareBase* (*make_main)(const MainArgs&));
template <class M>
ChareBase* make_main(const MainArgs& args) { return new M(args); }
}  // namespace detail

// int main(int argc, char** argv) { return ck::start<Main>(argc, argv); }
template <class M>
int start(int argc, char** argv) {
  static_assert(std::is_constructible_v<M, MainArgs>, "the main chare needs a constructor taking ck::MainArgs");
  return detail::start(argc, argv, &detail::make_main<M>);
}

}  // namespace ck

#pragma GCC visibility pop
