#pragma once
// GlobalPtr<T>: the address of an element anywhere in a team's segments.
//
// {unit, team, segment, offset}: trivially copyable, so it can be stored in a
// segment or sent in a message. Arithmetic moves the offset within the
// unit's part of the segment; at(u) names the same offset at another unit.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "locus/detail/direct.hpp"

namespace locus {

// The operation of an atomic on an element (rma.hpp): sum, min, max,
// replace for every element type; bxor (bitwise exclusive or, HPCC
// RandomAccess) for the integer types only.
enum class Op { sum, min, max, replace, bxor };

template <class T>
struct GlobalPtr {
  std::int32_t unit = -1;
  std::int32_t team = -1;
  std::int32_t segment = -1;
  std::int32_t reserved = 0;
  std::uint64_t offset = 0;  // bytes from the start of the unit's part

  GlobalPtr at(int u) const {
    GlobalPtr p = *this;
    p.unit = u;
    return p;
  }
  GlobalPtr operator+(std::ptrdiff_t n) const {
    GlobalPtr p = *this;
    p.offset = static_cast<std::uint64_t>(static_cast<std::int64_t>(offset) +
                                          n * static_cast<std::int64_t>(sizeof(T)));
    return p;
  }
  GlobalPtr operator-(std::ptrdiff_t n) const { return *this + (-n); }
  GlobalPtr& operator+=(std::ptrdiff_t n) { return *this = *this + n; }
  GlobalPtr& operator++() { return *this += 1; }
  // Elements between two pointers into the same unit's part.
  std::ptrdiff_t operator-(const GlobalPtr& o) const {
    return (static_cast<std::int64_t>(offset) - static_cast<std::int64_t>(o.offset)) /
           static_cast<std::int64_t>(sizeof(T));
  }
  bool operator==(const GlobalPtr& o) const = default;
  bool is_null() const { return segment < 0; }

  // True when transfers to this element go through shared memory: same node
  // and comm.locality on.
  bool is_local() const { return detail::locality_on() && local() != nullptr; }
  // The element's address when its unit is on my node (whatever
  // comm.locality says), else nullptr. Inline (detail/direct.hpp); Error
  // for a segment that is not allocated.
  T* local() const {
    if (char* part = detail::node_part(team, segment, unit)) return reinterpret_cast<T*>(part + offset);
    return static_cast<T*>(detail::shared_address(team, segment, unit, offset));
  }

  template <class U>
  GlobalPtr<U> cast() const {
    return GlobalPtr<U>{unit, team, segment, reserved, offset};
  }
};

static_assert(std::is_trivially_copyable_v<GlobalPtr<double>>);
static_assert(sizeof(GlobalPtr<double>) == 24);

}  // namespace locus
