#pragma once
// Grid fields: Kokkos views of a rank's block plus one ghost layer.
#include <Kokkos_Core.hpp>
#include <string>

#include "locus/decomp.hpp"

namespace locus {

// Indexed (z, y, x) with x fastest; extents local+2 (one ghost layer per side).
using Field3D = Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace>;

inline Field3D make_field(const std::string& label, const CartDecomp& d) {
  const auto& n = d.local();
  return Field3D(label, n[2] + 2, n[1] + 2, n[0] + 2);
}

}  // namespace locus
