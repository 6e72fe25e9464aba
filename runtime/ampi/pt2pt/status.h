// Statuses handed to the program by the single-completion calls (Recv, Wait, Test, Waitany,
// Testany, Mrecv, Sendrecv, Probe): MPI 3.1 §3.2.5 says they leave the MPI_ERROR field
// alone (only the multiple-completion calls set it, for MPI_ERR_IN_STATUS).
#pragma once

#include <mpi.h>

#include <climits>

namespace ampi::pt2pt {

// The received bytes, in both fields that say it (Charm++'s MPI_LENGTH is an int).
inline void status_set_bytes(MPI_Status& st, long long bytes) {
  st.ucharm_bytes = bytes;
  st.MPI_LENGTH = bytes > INT_MAX ? INT_MAX : static_cast<int>(bytes);
}

inline void status_out(MPI_Status* out, const MPI_Status& st) {
  if (!out) return;
  const int keep = out->MPI_ERROR;
  *out = st;
  out->MPI_ERROR = keep;
}

}  // namespace ampi::pt2pt
