#include "locus/decomp.hpp"

#include <string>

#include "locus/collective.hpp"

namespace locus {

Span block_span(long n, int p, int coord) {
  long base = n / p, rem = n % p;
  return {base + (coord < rem ? 1 : 0), coord * base + std::min<long>(coord, rem)};
}

Dims auto_process_grid(int size, int ndims) {
  int d[3] = {0, 0, 0};
  MPI_Dims_create(size, ndims, d);
  // MPI_Dims_create orders counts non-increasingly.
  if (ndims == 2) return {d[1], d[0], 1};
  return {d[2], d[1], d[0]};
}

std::string process_grid_text(const Dims& procs) {
  std::string s = "[";
  for (int d = 0; d < 3; ++d) s += (d ? ", " : "") + std::to_string(procs[d]);
  return s + "]";
}

void check_process_grid(MPI_Comm comm, const Dims& procs, const std::array<long, 3>& points,
                        const std::string& where, const std::function<std::string(int d)>& too_small) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const long product = long(procs[0]) * procs[1] * procs[2];
  collective_require(comm, product == size,
                     where + ": process grid " + process_grid_text(procs) + " needs " +
                         std::to_string(product) + " ranks, but the run has " + std::to_string(size));
  for (int d = 0; d < 3; ++d) collective_require(comm, points[d] >= procs[d], too_small(d));
}

CartDecomp::CartDecomp(MPI_Comm comm, const std::array<long, 3>& global, const Dims& requested,
                       const std::string& key_name, int ndims)
    : global_(global) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  procs_ = requested[0] == 0 ? auto_process_grid(size, ndims) : requested;
  check_process_grid(comm, procs_, global_, key_name, [&](int d) {
    return key_name + ": " + std::to_string(procs_[d]) + " blocks in dimension " + "xyz"[d] + " but only " +
           std::to_string(global_[d]) + " grid points; use a smaller process grid or a larger grid";
  });
  int periods[3] = {0, 0, 0};
  // MPI dimension order (z, y, x) keeps consecutive ranks adjacent in x.
  int dims_zyx[3] = {procs_[2], procs_[1], procs_[0]};
  MPI_Cart_create(comm, 3, dims_zyx, periods, 0, &cart_);
  int rank = 0, c[3];
  MPI_Comm_rank(cart_, &rank);
  MPI_Cart_coords(cart_, rank, 3, c);
  coords_ = {c[2], c[1], c[0]};
  for (int d = 0; d < 3; ++d) {
    Span s = block_span(global_[d], procs_[d], coords_[d]);
    local_[d] = s.count;
    offset_[d] = s.start;
    MPI_Cart_shift(cart_, 2 - d, 1, &neighbor_[d][0], &neighbor_[d][1]);
  }
}

std::array<long, 3> CartDecomp::neighbor_local(int d, int dir) const {
  std::array<long, 3> n = local_;
  n[d] = block_span(global_[d], procs_[d], coords_[d] + (dir > 0 ? 1 : -1)).count;
  return n;
}

CartDecomp::~CartDecomp() {
  if (cart_ != MPI_COMM_NULL) MPI_Comm_free(&cart_);
}

}  // namespace locus
