#pragma once
// What the inline templates of rma.hpp hand the general route: not an API.
#include <cstddef>
#include <cstdint>

namespace locus::detail {

// What a call hands the general route (rma.cpp): the global pointer's
// fields, the bytes it spans and the call's name for errors. The route
// resolves it (segment, unit and bounds checked) in one place.
struct Ref {
  int team = 0, segment = 0, unit = 0;
  std::uint64_t offset = 0;
  std::size_t bytes = 0;
  const char* what = "";
};

}  // namespace locus::detail
