// Charm++'s AMPI run-time options and queries (extensions.cpp): the initial placement of
// ranks (+mapping) and the predefined attributes that say where a rank runs (AMPI_MY_WTH &
// co.). Private to runtime/ampi.
#pragma once

#include <ucharm/charm.h>

#include <string>

namespace ampi {

// +mapping SPEC, in every process before the runtime starts: BLOCK_MAP (the default; also
// BLOCK), RR_MAP (also RR), PROP_MAP (BLOCK_MAP: the PEs of a job are alike here), MAPFILE
// (the file "mapfile" in the current directory) or the path of a file: one PE number per
// line, line i for rank i. Returns an error message ("" when fine).
std::string set_rank_mapping(const std::string& spec);
// The map of the rank array for `nranks` ranks on this job's PEs; stops the job naming the
// file and line when a mapping file does not fit.
ck::Map rank_map(int nranks);
// The values of the predefined attributes AMPI_MY_WTH .. AMPI_MY_HOME_WTH for the calling
// rank, now, into values[keyval].
void place_attributes(int* values);
// The rank count +vp asked for (rank.cpp); 0: none given.
int vp_requested();

}  // namespace ampi
