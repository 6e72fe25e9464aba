// MPI-4.0's large-count routines (MPI_X_c) share the int routines' bodies: gen_mpi.py writes
// each MPI_X_c that no source defines as an adapter that hands its 64-bit arguments to the
// body of MPI_X through the classes below. Sources define the few whose answer itself is
// 64-bit (Get_count_c, Get_elements_c, Type_size_c, extents, Status_set_elements_c).
#pragma once

#include "internal.h"

#include <vector>

namespace ampi::large {

// `count` elements of t as the int bodies take them: (count, t) itself when count fits an
// int; else one element of a type made here, count elements of t end to end (blocks of 2^30
// elements, then the rest), freed when this goes (an operation still pending holds it:
// refs.h). A status counts bytes, so MPI_Get_count_c with t gives count back. A negative
// count or an invalid t reach the body as they are (as -1), which reports them.
class Big {
 public:
  // `uncommitted_ok`: t may be a valid type not committed (a datatype constructor's oldtype).
  Big(MPI_Count count, MPI_Datatype t, bool uncommitted_ok = false);
  ~Big();
  Big(const Big&) = delete;
  Big& operator=(const Big&) = delete;
  int count() const { return count_; }
  MPI_Datatype type() const { return type_; }

 private:
  int count_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL, made_ = MPI_DATATYPE_NULL;
};

// A value the int body takes as an int (a datatype constructor's count, a window's
// disp_unit, a pack position): fits() says whether it does.
inline bool fits(long long v) { return v >= -2147483648LL && v <= 2147483647LL; }
// The error of an argument beyond an int where the body cannot take it (MPI_ERR_COUNT).
int too_large(MPI_Comm comm, const char* fn, const char* what, long long v);

// An array of MPI_Count or MPI_Aint as ints (nullptr stays nullptr); ok() false, with the
// first entry that does not fit, when one does not.
class Ints {
 public:
  template <class T>
  Ints(const T* a, int n) {
    if (!a) return;
    v_.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    null_ = false;
    for (int i = 0; i < n; ++i) {
      if (!fits(a[i])) {
        bad_ = i;
        value_ = a[i];
        return;
      }
      v_[static_cast<std::size_t>(i)] = static_cast<int>(a[i]);
    }
  }
  bool ok() const { return bad_ < 0; }
  int bad() const { return bad_; }
  long long value() const { return value_; }
  const int* data() const { return null_ ? nullptr : v_.data(); }

 private:
  std::vector<int> v_;
  bool null_ = true;
  int bad_ = -1;
  long long value_ = 0;
};
int too_large_entry(MPI_Comm comm, const char* fn, const char* what, const Ints& a);

// How many entries a collective's count or displacement array has: the members (the remote
// group of an intercommunicator; the local group for the result side of Reduce_scatter), or
// for a neighbourhood collective the destinations (`send`) or sources. 0 for an invalid
// communicator (the body reports it).
int peers(MPI_Comm comm, const char* fn, bool send);
// The calling rank is the root of a rooted collective (its count arrays are read), or
// MPI_ROOT on an intercommunicator.
bool is_root(MPI_Comm comm, int root);

}  // namespace ampi::large
