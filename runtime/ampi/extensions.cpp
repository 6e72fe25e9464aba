// Charm++'s AMPI run-time options and queries: +mapping (where each rank starts) and the
// predefined attributes AMPI_MY_WTH, AMPI_NUM_WTHS, AMPI_MY_PROCESS, AMPI_NUM_PROCESSES,
// AMPI_MY_HOME_WTH. A worker thread of Charm++ is a PE here, and a process holds one PE.
#include "extensions.h"
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
