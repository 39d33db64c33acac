#pragma once
// The entry points of segment.hpp's templates (comm/segment.cpp): not an API.
#include <cstddef>

#include "locus/settings.hpp"

namespace locus {
class Team;
}  // namespace locus

namespace locus::detail {

// Returns the new segment's id. Throws CollectiveError on mismatched calls.
// Collective: `count` elements of `elem_size` bytes from every unit. Before
// anything is mapped, the units check together that the sizes fit (no
// overflow) and that every node can hold its units' parts (free space in
// /dev/shm and available memory); otherwise every unit throws the same
// CollectiveError saying how much the node needs and how much it has.
int allocate_segment(Team& team, std::size_t count, std::size_t elem_size, AsyncHint hint = AsyncHint::follow,
                     AtomicMode atomics = AtomicMode::automatic);
// Collective over the segment's team.
void free_segment(int team, int segment);

}  // namespace locus::detail
