#pragma once
// Halo exchange for block-decomposed 3D grids with one ghost layer.
//
// A strategy is built once for a decomposition (the plan: who sends which
// face to whom) and then exchanges any field of that shape, every step.
// Strategies share one interface so apps switch them from the deck
// (`comm.halo`) and compare them in the same run.
#include <memory>
#include <string>
#include <vector>

#include "locus/decomp.hpp"
#include "locus/field.hpp"

namespace locus {

class HaloExchange {
 public:
  virtual ~HaloExchange() = default;
  // Fills the ghost faces of `f` that border another rank. Ghost cells on
  // the domain boundary are left alone (they hold boundary values).
  virtual void exchange(Field3D& f) = 0;
  virtual std::string name() const = 0;
};

// The strategies this build offers, for the `comm.halo` schema key.
std::vector<std::string> halo_strategies();

// Throws Error for an unknown strategy.
std::unique_ptr<HaloExchange> make_halo(const std::string& strategy, const CartDecomp& decomp);

}  // namespace locus
