#pragma once
// The halo strategies on the staging path (comm.staging; locus/staging.hpp).
#include <memory>
#include <string>

#include "locus/halo.hpp"

namespace locus::detail {

// `strategy` is one of halo_strategies(), already checked by make_halo.
template <class T>
std::unique_ptr<HaloExchange<T>> make_staged_halo(const std::string& strategy, const CartDecomp& decomp,
                                                  const BlockShape& shape, Team& team,
                                                  const HaloOptions& options);

}  // namespace locus::detail
