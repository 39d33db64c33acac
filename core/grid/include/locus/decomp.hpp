#pragma once
// Cartesian (checkerboard) block decomposition of a global grid over ranks.
// Index 0 is x, 1 is y, 2 is z. Sizes that do not divide evenly are split
// with the remainder spread over the first blocks (never refused).
#include <mpi.h>

#include <array>
#include <functional>
#include <string>

#include "locus/config.hpp"

namespace locus {

// Extent and start of block `coord` when n points are split into p blocks.
struct Span {
  long count;
  long start;
};
Span block_span(long n, int p, int coord);

// The process grid MPI_Dims_create gives `size` ranks in `ndims` (2 or 3)
// dimensions, with the most blocks on the slowest index in memory (z, or y
// in 2D) so that the largest faces stay contiguous; 1 in unused dimensions.
Dims auto_process_grid(int size, int ndims);

// "[px, py, pz]"
std::string process_grid_text(const Dims& procs);

// The checks of a process grid against a run, collective over comm (a
// CollectiveError on every rank when one fails): the grid has as many
// blocks as comm has ranks ("<where>: process grid [..] needs N ranks, but
// the run has M"), and every dimension has at least one of `points` per
// block (else the message too_small(d), in the words of the caller's keys).
// CartDecomp and the apps (before they allocate) check with this one.
void check_process_grid(MPI_Comm comm, const Dims& procs, const std::array<long, 3>& points,
                        const std::string& where, const std::function<std::string(int d)>& too_small);

class CartDecomp {
 public:
  // Collective over comm. `requested` is {0,0,0} for MPI_Dims_create, else the
  // process grid (its product must be the number of ranks). With ndims 2
  // the automatic grid splits x and y only (z must then be 1 point).
  // Throws CollectiveError when the grid does not fit; `key_name` names the
  // deck key in the message.
  CartDecomp(MPI_Comm comm, const std::array<long, 3>& global, const Dims& requested,
             const std::string& key_name, int ndims = 3);
  ~CartDecomp();
  CartDecomp(const CartDecomp&) = delete;
  CartDecomp& operator=(const CartDecomp&) = delete;

  MPI_Comm comm() const { return cart_; }
  const std::array<int, 3>& procs() const { return procs_; }
  const std::array<int, 3>& coords() const { return coords_; }
  const std::array<long, 3>& global() const { return global_; }
  const std::array<long, 3>& local() const { return local_; }
  const std::array<long, 3>& offset() const { return offset_; }
  // Rank of the neighbour in dimension d, direction -1 or +1; MPI_PROC_NULL at
  // the domain boundary.
  int neighbor(int d, int dir) const { return neighbor_[d][dir > 0 ? 1 : 0]; }
  // Block extents of that neighbour (they differ from local() in dimension d
  // when the grid does not divide evenly).
  std::array<long, 3> neighbor_local(int d, int dir) const;

 private:
  MPI_Comm cart_ = MPI_COMM_NULL;
  std::array<int, 3> procs_{}, coords_{};
  std::array<long, 3> global_{}, local_{}, offset_{};
  int neighbor_[3][2] = {};
};

}  // namespace locus
