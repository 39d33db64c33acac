#pragma once
// Internal: what the comm layer's calls share (rma.cpp, handle.cpp,
// notify.cpp).
#include "locus/handle.hpp"
#include "xfer/transfer.hpp"

namespace locus::detail {

// The handle of what an executor started at `e` (a progress thread, when
// on, completes its request); a ready handle when it completed at once
// (handle.cpp).
Handle make_handle(const Started& s, const Endpoint& e);

// The address of a same-node target (its part on my node).
inline char* cpu_address(const Target& t) {
  return t.seg->peer[static_cast<std::size_t>(t.unit)] + t.offset;
}

}  // namespace locus::detail
