#pragma once
// Collective checks: a condition that fails on any rank becomes the same
// CollectiveError on every rank, so no rank waits for another that gave up.
#include <mpi.h>

#include <functional>
#include <string>

#include "locus/error.hpp"

namespace locus {

// Collective: when `ok` is false on any rank, every rank throws the same
// CollectiveError carrying the message of the lowest failing rank.
void collective_require(MPI_Comm comm, bool ok, const std::string& msg);

// Throws a CollectiveError on every rank if fn() throws Error on any rank.
void collectively(MPI_Comm comm, const std::function<void()>& fn);

}  // namespace locus
