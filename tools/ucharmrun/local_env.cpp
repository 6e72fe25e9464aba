// The local-rank variables: programs pick their GPU before (or without) asking the runtime,
// from the variables their usual launcher sets. OSU's benchmarks (init_accel) read, in
// this order, MV2_COMM_WORLD_LOCAL_RANK, MVP_COMM_WORLD_LOCAL_RANK,
// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_PROCID and LOCAL_RANK and use
// `local rank % GPUs`; without any of them every PE would take GPU 0.
// Slurm's names are never added (a program or library seeing them would believe it runs
// in a Slurm step); where the launcher inherited them, they describe the launcher itself,
// so each PE gets its own values instead.
#include <fmt/core.h>

#include <array>
#include <cstdlib>

#include "ucharmrun.h"

namespace ucharmrun {
namespace {

enum class Value { Rank, Size };
struct Var {
  const char* name;
  Value value;
};

// Every PE of a ucharmrun job is on this host: local rank = rank, local size = size.
constexpr std::array<Var, 18> kVars{{
    {"LOCAL_RANK", Value::Rank},  // torchrun, many GPU codes
    {"LOCAL_SIZE", Value::Size},
    {"LOCAL_WORLD_SIZE", Value::Size},  // torchrun's name for the local size
    {"OMPI_COMM_WORLD_RANK", Value::Rank},  // Open MPI's mpirun
    {"OMPI_COMM_WORLD_SIZE", Value::Size},
    {"OMPI_COMM_WORLD_LOCAL_RANK", Value::Rank},
    {"OMPI_COMM_WORLD_LOCAL_SIZE", Value::Size},
    {"OMPI_COMM_WORLD_NODE_RANK", Value::Rank},
    {"MPI_LOCALRANKID", Value::Rank},  // MPICH's Hydra, Intel MPI
    {"MPI_LOCALNRANKS", Value::Size},
    {"MV2_COMM_WORLD_RANK", Value::Rank},  // MVAPICH2's launchers
    {"MV2_COMM_WORLD_SIZE", Value::Size},
    {"MV2_COMM_WORLD_LOCAL_RANK", Value::Rank},
    {"MV2_COMM_WORLD_LOCAL_SIZE", Value::Size},
    {"MVP_COMM_WORLD_RANK", Value::Rank},  // MVAPICH-Plus
    {"MVP_COMM_WORLD_SIZE", Value::Size},
    {"MVP_COMM_WORLD_LOCAL_RANK", Value::Rank},
    {"MVP_COMM_WORLD_LOCAL_SIZE", Value::Size},
}};
// Replaced only when inherited.
constexpr std::array<const char*, 2> kSlurmVars{"SLURM_PROCID", "SLURM_LOCALID"};

bool names(std::string_view entry, std::string_view name) {
  return entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=';
}

}  // namespace

std::vector<std::string> local_rank_env(int r, int np) {
  std::vector<std::string> out;
  out.reserve(kVars.size() + kSlurmVars.size());
  for (const Var& v : kVars)
    out.push_back(fmt::format("{}={}", v.name, v.value == Value::Rank ? r : np));
  for (const char* name : kSlurmVars)
    if (std::getenv(name)) out.push_back(fmt::format("{}={}", name, r));
  return out;
}

bool is_local_rank_var(std::string_view entry) {
  for (const Var& v : kVars)
    if (names(entry, v.name)) return true;
  for (const char* name : kSlurmVars)
    if (names(entry, name)) return true;
  return false;
}

}  // namespace ucharmrun
