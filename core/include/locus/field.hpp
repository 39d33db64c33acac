#pragma once
// Grid fields: a rank's block plus ghost layers, stored in a segment of the
// one-sided core (so neighbours can get/put its faces) and seen locally as a
// Kokkos view.
//
// Every field is stored as a 3D block indexed (z, y, x), x fastest. The
// ghost width is 1 or 0 per dimension: heat3d uses {1, 1, 1}; a 2D app
// (poisson5pt) uses a grid of z extent 1 with ghosts {1, 1, 0}, so the same
// decomposition, halo and I/O code serve both.
#include <Kokkos_Core.hpp>
#include <array>
#include <cstdint>
#include <string>

#include "locus/decomp.hpp"
#include "locus/segment.hpp"

namespace locus {

template <class T>
using FieldView =
    Kokkos::View<T***, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
using Field3D = FieldView<double>;

// Interior extents n (x, y, z) and ghost widths g of one rank's block.
struct BlockShape {
  std::array<long, 3> n{};
  std::array<long, 3> g{1, 1, 1};
  // Stored extent in dimension d (ghosts included).
  long extent(int d) const { return n[d] + 2 * g[d]; }
  // Cells stored (ghosts included); a product past 64 bits saturates to
  // SIZE_MAX, which allocate() refuses collectively as an overflow.
  std::size_t cells() const {
    std::size_t c = 1;
    for (int d = 0; d < 3; ++d) {
      const auto e = static_cast<std::size_t>(extent(d));
      if (e != 0 && c > SIZE_MAX / e) return SIZE_MAX;
      c *= e;
    }
    return c;
  }
  // Element offset of (x, y, z) in stored coordinates (ghost layer at 0).
  std::size_t offset(long x, long y, long z) const {
    return static_cast<std::size_t>((z * extent(1) + y) * extent(0) + x);
  }
};

template <class T>
class GridFieldT {
 public:
  // Collective over the team (the decomposition's units, same order).
  // `ghosts` is the ghost width per dimension (x, y, z), 0 or 1.
  GridFieldT(Team& team, const CartDecomp& d, const std::array<long, 3>& ghosts = {1, 1, 1})
      : shape_{d.local(), ghosts},
        storage_(team, shape_.cells()),
        view_(storage_.data(), shape_.extent(2), shape_.extent(1), shape_.extent(0)) {}

  FieldView<T>& view() { return view_; }
  const FieldView<T>& view() const { return view_; }
  T* data() { return storage_.data(); }
  const T* data() const { return storage_.data(); }
  const BlockShape& shape() const { return shape_; }
  // Element (0, 0, 0) of `unit`'s block (ghosts included).
  GlobalPtr<T> gptr(int unit) const { return storage_.gptr(unit); }

  static std::size_t cells(const std::array<long, 3>& n) { return BlockShape{n, {1, 1, 1}}.cells(); }

 private:
  BlockShape shape_;
  Array<T> storage_;
  FieldView<T> view_;
};

using GridField = GridFieldT<double>;

}  // namespace locus
