#pragma once
// Grid fields: a rank's block plus one ghost layer, stored in a segment of
// the one-sided core (so neighbours can get/put its faces) and seen locally
// as a Kokkos view.
#include <Kokkos_Core.hpp>
#include <string>

#include "locus/decomp.hpp"
#include "locus/segment.hpp"

namespace locus {

// Indexed (z, y, x) with x fastest; extents local+2 (one ghost layer per side).
using Field3D =
    Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

class GridField {
 public:
  // Collective over the team (the decomposition's units, same order).
  GridField(Team& team, const CartDecomp& d)
      : storage_(team, cells(d.local())),
        view_(storage_.data(), d.local()[2] + 2, d.local()[1] + 2, d.local()[0] + 2) {}

  Field3D& view() { return view_; }
  const Field3D& view() const { return view_; }
  // Element (0, 0, 0) of `unit`'s block (ghosts included).
  GlobalPtr<double> gptr(int unit) const { return storage_.gptr(unit); }

  static std::size_t cells(const std::array<long, 3>& n) {
    return static_cast<std::size_t>((n[0] + 2) * (n[1] + 2) * (n[2] + 2));
  }

 private:
  Array<double> storage_;
  Field3D view_;
};

}  // namespace locus
