#pragma once
// Halo exchange for block-decomposed 3D grids with one ghost layer.
//
// A strategy is built once for a decomposition (the plan: which face comes
// from whom, with which datatype or layout) and then exchanges any field of
// that shape, every step. Strategies share one interface, so apps switch
// them from the deck (`comm.halo`) and compare them in the same run:
//   p2p       MPI two-sided: non-blocking receives/sends of face datatypes
//   rma       plain MPI-3 RMA: barrier, then a blocking MPI_Get (+flush) of
//             each neighbour face on the dynamic window (locality off)
//   locus     the same gets through the locus core: memcpy from shared
//             memory for same-node neighbours, MPI RMA for the others
//   locus-nb  non-blocking locus gets of all faces, then wait_all
#include <memory>
#include <string>
#include <vector>

#include "locus/decomp.hpp"
#include "locus/field.hpp"
#include "locus/rma.hpp"

namespace locus {

class HaloExchange {
 public:
  virtual ~HaloExchange() = default;
  // Fills the ghost faces of `f` that border another rank. Ghost cells on
  // the domain boundary are left alone (they hold boundary values).
  virtual void exchange(GridField& f) = 0;
  virtual std::string name() const = 0;
};

// The strategies this build offers, for the `comm.halo` schema key.
std::vector<std::string> halo_strategies();

// The face of a block with interior extents n (x, y, z) in dimension d at
// layer `layer` (0 and n[d]+1 are ghosts): element offset and layout.
std::size_t face_offset(const std::array<long, 3>& n, int d, long layer);
Layout face_layout(const std::array<long, 3>& n, int d);

// Throws Error for an unknown strategy. `team` holds the decomposition's
// units in the same order (the world team for apps).
std::unique_ptr<HaloExchange> make_halo(const std::string& strategy, const CartDecomp& decomp, Team& team);

}  // namespace locus
