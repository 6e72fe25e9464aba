// Bootstrap over PMIx (ucharmrun, OpenMPI's mpirun, Slurm's srun --mpi=pmix), or a
// singleton when no PMIx server is in the environment. Internal to machine-ucx.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ucharm::machine {

class Bootstrap {
 public:
  Bootstrap();  // aborts with a clear message when PMIx is present but fails
  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

  bool launched() const { return launched_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int num_nodes() const { return num_nodes_; }
  // Whether `rank` runs on this host (PMIX_LOCAL_PEERS; false when unknown). This PE
  // itself always does, launched or not.
  bool is_local(int rank) const {
    if (rank == rank_) return true;
    return rank >= 0 && static_cast<std::size_t>(rank) < local_.size() && local_[rank];
  }

  // Publishes this PE's blob under `key` (Put + Commit).
  void put(const char* key, const void* data, std::size_t len);
  // Fence over the whole job; `collect` gathers the committed data. `progress` is called
  // while waiting so that this PE keeps serving its peers.
  void fence(bool collect, int (*progress)());
  // Another PE's blob (available after a collecting fence).
  std::vector<char> get(int rank, const char* key) const;
  // Reports to the PMIx server (its launcher ends the job); returns so the caller exits.
  void abort(int code, const char* msg) noexcept;

 private:
  bool launched_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1, num_nodes_ = 1;
  std::string nspace_;
  std::vector<bool> local_;
};

}  // namespace ucharm::machine
