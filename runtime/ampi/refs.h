// References that keep a derived datatype or a user reduction operation alive while the
// runtime still uses it: MPI lets a program free both (MPI_Type_free, MPI_Op_free) while a
// pending operation uses them, and the operation must complete as if they were not freed
// (MPI 3.1 §4.1.9, §5.9.5). The handle stays taken until the last reference goes, so a new
// type or op never gets the number a pending operation still names.
#pragma once

#include "internal.h"

#include <utility>
#include <vector>

namespace ampi {

// ops.cpp: a user op's reference count (predefined ops: nothing to do).
void op_retain(MPI_Op op);
void op_release(MPI_Op op);

// Holds up to two datatypes and one op, or a list of types (Alltoallw), for as long as it
// lives: a nonblocking collective's body captures one. Move-only.
class Hold {
 public:
  Hold() = default;
  explicit Hold(MPI_Datatype a, MPI_Datatype b = MPI_DATATYPE_NULL, MPI_Op op = MPI_OP_NULL)
      : a_(a), b_(b), op_(op) {
    type_retain(a_);
    type_retain(b_);
    op_retain(op_);
  }
  explicit Hold(std::vector<MPI_Datatype> many) : many_(std::move(many)) {
    for (MPI_Datatype t : many_) type_retain(t);
  }
  Hold(Hold&& o) noexcept
      : a_(std::exchange(o.a_, MPI_DATATYPE_NULL)),
        b_(std::exchange(o.b_, MPI_DATATYPE_NULL)),
        op_(std::exchange(o.op_, MPI_OP_NULL)),
        many_(std::move(o.many_)) {
    o.many_.clear();
  }
  Hold& operator=(Hold&&) = delete;
  Hold(const Hold&) = delete;
  Hold& operator=(const Hold&) = delete;
  ~Hold() {
    type_release(a_);
    type_release(b_);
    op_release(op_);
    for (MPI_Datatype t : many_) type_release(t);
  }

 private:
  MPI_Datatype a_ = MPI_DATATYPE_NULL, b_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
  std::vector<MPI_Datatype> many_;
};

}  // namespace ampi
