#pragma once
// Halo exchange for block-decomposed grids (3D, or 2D as z extent 1) with
// one ghost layer in every decomposed dimension.
//
// A strategy is built once for a decomposition (the plan: which face goes
// to or comes from whom, with which datatype or layout) and then exchanges
// any field of that shape, every step. Strategies share one interface, so
// apps switch them from the deck (`comm.halo`) and compare them in the same
// run:
//   p2p       MPI two-sided: non-blocking receives/sends of face datatypes
//   rma       plain MPI-3 RMA: blocking MPI_Get / MPI_Put (+flush) of each
//             face on the team's dynamic window (locality off)
//   locus     the same one-sided transfers through the locus core: memcpy on
//             shared memory for same-node neighbours, MPI RMA for the others
//   locus-nb  non-blocking locus transfers of all faces, then wait_all;
//             split phase (begin/end), so the app can update its interior
//             while the faces move (by a progress process, when there is
//             one: runtime.progress.processes_per_node)
//
// The one-sided strategies either get the neighbours' boundary faces into
// the own ghosts (Direction::get, heat3d) or put the own boundary faces into
// the neighbours' ghosts (Direction::put, the DART Poisson kernel). How many
// barriers an exchange needs depends on the direction and on whether the
// app updates the field in place (Gauss-Seidel) or into a second field
// (double buffering):
//   get, double-buffered:        barrier, gets                (1 barrier)
//   put, or in place either way: barrier, transfers, barrier  (2 barriers)
// The first barrier guarantees the faces (or ghosts) are no longer being
// written (or read, or initialised) by the previous step; the last one that
// the transfers are complete before anybody computes with or overwrites
// them. A double-buffered get needs no second barrier: the faces it reads
// are not written again before everybody has passed the next barrier.
#include <memory>
#include <string>
#include <vector>

#include "locus/config.hpp"
#include "locus/decomp.hpp"
#include "locus/field.hpp"
#include "locus/rma.hpp"

namespace locus {

enum class Direction { get, put };

struct HaloOptions {
  Direction direction = Direction::get;
  // The app updates the exchanged field in place between exchanges.
  bool in_place = false;
  // Ghost width per dimension (x, y, z); 1 wherever the grid is decomposed.
  std::array<long, 3> ghosts{1, 1, 1};
};

template <class T>
class HaloExchange {
 public:
  virtual ~HaloExchange() = default;
  // Fills the ghost faces of `f` that border another rank. Ghost cells on
  // the domain boundary are left alone (they hold boundary values).
  virtual void exchange(GridFieldT<T>& f) = 0;
  virtual std::string name() const = 0;
  // Split phase, for overlapping the exchange with the interior update:
  // begin() starts it, end() completes it; between them the app may
  // compute everything that does not read ghosts, and must not write the
  // faces. Strategies without a split do all the work in begin().
  virtual void begin(GridFieldT<T>& f) { exchange(f); }
  virtual void end(GridFieldT<T>& /*f*/) {}
  // True when begin() returns before the ghosts have arrived (locus-nb).
  virtual bool split_phase() const { return false; }
  // Builds what exchanging `f` needs, so that the first exchange of a field
  // (inside an app's timed loop) does not. Collective over the team for some
  // strategies: every unit prepares the same fields in the same order. A
  // field nobody prepared is prepared by its first exchange.
  virtual void prepare(GridFieldT<T>& /*f*/) {}
};

// The strategies this build offers, for the `comm.halo` schema key.
std::vector<std::string> halo_strategies();
// Declares the `comm.halo` key (one of halo_strategies(), default locus)
// in an app's schema.
Schema& add_halo_key(Schema& s);

// The face of a block of shape s in dimension d at layer `layer` (0 and
// n[d]+1 are ghosts, 1 and n[d] the boundary layers): element offset and
// layout. The face spans the interior of the other dimensions.
std::size_t face_offset(const BlockShape& s, int d, long layer);
Layout face_layout(const BlockShape& s, int d);
// Shorthands for ghost width 1 everywhere.
std::size_t face_offset(const std::array<long, 3>& n, int d, long layer);
Layout face_layout(const std::array<long, 3>& n, int d);

// Throws Error for an unknown strategy, or a ghost width of 0 in a
// decomposed dimension. `team` holds the decomposition's units in the same
// order (the world team for apps). Instantiated for float and double.
template <class T>
std::unique_ptr<HaloExchange<T>> make_halo(const std::string& strategy, const CartDecomp& decomp, Team& team,
                                           const HaloOptions& options = {});

}  // namespace locus
