#pragma once
// An owned MPI derived datatype (halo faces, plan entries, the layout
// cache of rma.cpp, spmv's matrix entries): built once, committed, and
// freed with its owner (not after MPI_Finalize).
#include <mpi.h>

#include <utility>

namespace locus {

class Datatype {
 public:
  Datatype() = default;
  // Takes T, a new derived type, and commits it.
  explicit Datatype(MPI_Datatype t) : t_(t) { MPI_Type_commit(&t_); }
  ~Datatype() { reset(); }
  Datatype(Datatype&& o) noexcept : t_(std::exchange(o.t_, MPI_DATATYPE_NULL)) {}
  Datatype& operator=(Datatype&& o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  Datatype(const Datatype&) = delete;
  Datatype& operator=(const Datatype&) = delete;

  MPI_Datatype get() const { return t_; }
  explicit operator bool() const { return t_ != MPI_DATATYPE_NULL; }

 private:
  // After MPI_Finalize nothing can be freed (an owner that outlives MPI).
  void reset() {
    if (t_ == MPI_DATATYPE_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Type_free(&t_);
    t_ = MPI_DATATYPE_NULL;
  }
  MPI_Datatype t_ = MPI_DATATYPE_NULL;
};

}  // namespace locus
