// Charm++'s AMPI run-time options and queries: +mapping (where each rank starts), the
// predefined attributes AMPI_MY_WTH, AMPI_NUM_WTHS, AMPI_MY_PROCESS, AMPI_NUM_PROCESSES,
// AMPI_MY_HOME_WTH, and AMPI_Suspend/AMPI_Resume. A worker thread of Charm++ is a PE here,
// and a process holds one PE.
#include "extensions.h"
#include "heap.h"
#include "rank.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

namespace ampi {

namespace {

enum class Placement { Block, RoundRobin, File };

struct Mapping {
  Placement kind = Placement::Block;
  std::string file;           // Placement::File: where the PEs were read from
  std::vector<int> pes;       // line i: rank i's PE
  std::vector<int> line_of;   // its line number (comments and blank lines skipped)
};
Mapping& mapping() {
  static Mapping m;  // set once per process before the runtime starts
  return m;
}

// The placement a mapping file gives: rank i on its line i's PE. Every process reads the
// same file, so every PE answers alike. After a restart on fewer PEs, or for ranks the file
// does not name (a restart without +mapping), the PE wraps or the block rule applies.
int file_map(const ck::Index& idx, const ck::Index& shape, int npes) {
  const Mapping& m = mapping();
  const int i = idx.x[0];
  if (i >= 0 && static_cast<std::size_t>(i) < m.pes.size()) return m.pes[static_cast<std::size_t>(i)] % npes;
  const long long total = shape.x[0] > 0 ? shape.x[0] : 1;
  return static_cast<int>(static_cast<long long>(i) * npes / total);
}

}  // namespace

std::string set_rank_mapping(const std::string& spec) {
  Mapping& m = mapping();
  if (spec == "BLOCK_MAP" || spec == "BLOCK" || spec == "PROP_MAP") {
    m.kind = Placement::Block;
    return "";
  }
  if (spec == "RR_MAP" || spec == "RR") {
    m.kind = Placement::RoundRobin;
    return "";
  }
  m.kind = Placement::File;
  m.file = spec == "MAPFILE" ? "mapfile" : spec;
  std::ifstream in(m.file);
  if (!in)
    return "+mapping " + spec + ": cannot read the file '" + m.file +
           "' (give BLOCK_MAP, RR_MAP, MAPFILE for ./mapfile, or the path of a file with one PE number per line)";
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream words(line);
    std::string w;
    if (!(words >> w) || w[0] == '#') continue;
    std::size_t used = 0;
    int pe = -1;
    try {
      pe = std::stoi(w, &used);
    } catch (...) {
      used = 0;
    }
    std::string rest;
    if (used != w.size() || pe < 0 || (words >> rest && rest[0] != '#'))
      return "+mapping: " + m.file + " line " + std::to_string(n) + ": '" + line +
             "' is not a PE number (one non-negative number per line)";
    m.pes.push_back(pe);
    m.line_of.push_back(n);
  }
  return "";
}

ck::Map rank_map(int nranks) {
  const Mapping& m = mapping();
  switch (m.kind) {
    case Placement::Block: return ck::Map::block;
    case Placement::RoundRobin: return ck::Map::round_robin;
    case Placement::File: break;
  }
  if (m.pes.size() < static_cast<std::size_t>(nranks))
    CkAbort("+mapping: %s names the PEs of %zu ranks, but the job has %d (+vp): give one line per rank",
            m.file.c_str(), m.pes.size(), nranks);
  for (int i = 0; i < nranks; ++i)
    if (m.pes[static_cast<std::size_t>(i)] >= CkNumPes())
      CkAbort("+mapping: %s line %d puts rank %d on PE %d, but the job has %d PEs", m.file.c_str(),
              m.line_of[static_cast<std::size_t>(i)], i, m.pes[static_cast<std::size_t>(i)], CkNumPes());
  return ck::Map::user<&file_map>();
}

void place_attributes(int* values) {
  Rank* r = current_rank();
  values[AMPI_MY_WTH] = CkMyPe();
  values[AMPI_NUM_WTHS] = CkNumPes();
  values[AMPI_MY_PROCESS] = CkMyPe();  // one PE per process
  values[AMPI_NUM_PROCESSES] = CkNumPes();
  values[AMPI_MY_HOME_WTH] = ck::detail::home_pe(r->array_ref(), ck::index(r->world_rank()));
}

}  // namespace ampi

using namespace ampi;

namespace {
// AMPI_Resume's notice: an empty message on MPI_COMM_WORLD's collective context, under a
// tag no collective uses (theirs are not negative).
constexpr int kResumeTag = -0x5e5e;
}  // namespace

#pragma GCC visibility push(default)
extern "C" {

// The calling rank waits until another rank calls AMPI_Resume for it; a resume that came
// first is kept, and this call returns at once (one resume for one suspend).
int AMPI_Suspend(void) {
  heap::RuntimeScope scope;
  (void)current_rank();
  return recv(nullptr, 0, MPI_BYTE, MPI_ANY_SOURCE, kResumeTag, *comm_get(MPI_COMM_WORLD), Ctx::Coll, nullptr);
}

// Rank `dest` of `comm` goes on from its AMPI_Suspend (or will not wait in its next one).
int AMPI_Resume(int dest, MPI_Comm comm) {
  heap::RuntimeScope scope;
  Comm* c = comm_get(comm);
  if (!c) return error(MPI_COMM_WORLD, MPI_ERR_COMM, "AMPI_Resume", "invalid communicator %d", comm);
  if (dest < 0 || static_cast<std::size_t>(dest) >= c->members.size())
    return error(comm, MPI_ERR_RANK, "AMPI_Resume", "rank %d is not in the communicator (size %zu)", dest,
                 c->members.size());
  return send(nullptr, 0, MPI_BYTE, c->members[static_cast<std::size_t>(dest)], kResumeTag,
              *comm_get(MPI_COMM_WORLD), Ctx::Coll);
}

}  // extern "C"
#pragma GCC visibility pop
