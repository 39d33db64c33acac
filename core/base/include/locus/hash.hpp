#pragma once
// A stateless 64-bit mixer (splitmix64's finaliser): deterministic
// pseudo-random values from an index, so that generated data does not
// depend on which rank makes it (spmv's generators and vectors,
// tensor_contract's tensors).
#include <cstdint>

namespace locus {

inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace locus
