// Coroutine entry methods (tasks.cpp): what dispatch.cpp calls. Not installed.
#pragma once

#include <ucharm/charm.h>

#include <vector>

namespace ck::detail {

// A message for an awaited entry arrived for obj (the caller keeps its reference): handed to
// the coroutine waiting for it (which resumes now), else kept in arrival order. dests: the
// device arguments of a GPU Messaging entry (copied), or null.
void task_arrived(ChareBase* obj, std::uint32_t entry, void* msg, const std::vector<CkDeviceBuffer>* dests);
// Runs an entry's body on a message (dispatch.cpp): its device arguments unpack to dests.
void run_entry_body(ChareBase* obj, std::uint32_t entry, void* msg, const std::vector<CkDeviceBuffer>* dests);

}  // namespace ck::detail
