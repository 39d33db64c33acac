#pragma once
// The inline same-node path (included by gptr.hpp and, through it, by
// rma.hpp): not an API.
//
// A global pointer into a part on my node resolves to an address with
// three indexed loads from the direct table below: no lookup call, no map,
// no handle. The calls in rma.hpp try it first and fall back to the
// general route (rma.cpp) whenever it does not apply: another node,
// comm.locality off, Route::mpi, redirection on, the communication-ratio
// profile measuring, a failed bounds check, or a segment that is not
// allocated (the general route then raises the error). So the semantics,
// the errors included, are those of the general route.
//
// What the inline templates need to see. The table is plain data (no MPI
// object), a mirror of the core's segment records
// (core/mem/segment_table.hpp) that the runtime owns and rewrites inside
// the collective calls that change them (allocate, free, team split and
// free, set_async); between those, lookups are plain loads from any
// thread. One process-wide variable, g_direct, leads to it: the inline
// path reads it without a call (docs/design.md, "The runtime's state").
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace locus::detail {

// What the inline paths know of one segment. units == 0: no segment has
// this id (never allocated, or freed).
struct DirectSegment {
  char* const* peer = nullptr;         // team unit -> its part if on my node, else nullptr
  const std::size_t* bytes = nullptr;  // team unit -> size of its part
  std::uint32_t units = 0;
  // Atomics on same-node units are CPU atomics now (fixed at allocation,
  // off while the segment is redirected).
  bool cpu_atomics = false;
  // Atomics and one-element gets to other nodes' units travel in batches
  // now (comm.atomics: aggregate, not redirected).
  bool aggregate = false;
  // Floating-point atomics and compare-and-swaps take stripe locks
  // (comm.fp_locks): not inline, the general route applies them.
  bool fp_locks = false;
};

class Aggregator;

// One team's segments, slot[id] for id < n, and the team's aggregator (of
// comm.atomics: aggregate; null without one).
struct DirectRow {
  const DirectSegment* slot = nullptr;
  std::uint32_t n = 0;
  Aggregator* aggregator = nullptr;
};

struct Direct {
  bool locality = false;            // comm.locality
  bool check = false;               // comm.check, or a debug build of the library
  const DirectRow* rows = nullptr;  // team id -> row
  std::uint32_t nrows = 0;
  // The communication-ratio profile (async.hpp, auto mode) is measuring:
  // the inline paths step aside so that the timed general route counts
  // them (set and cleared by the comm layer, async.cpp).
  std::atomic<bool> measuring{false};
  // The segment of (team, id), or nullptr.
  const DirectSegment* find(int team, int id) const noexcept {
    if (static_cast<unsigned>(team) >= nrows) return nullptr;
    const DirectRow& row = rows[team];
    if (static_cast<unsigned>(id) >= row.n) return nullptr;
    const DirectSegment* s = row.slot + id;
    return s->units ? s : nullptr;
  }
};
// Set by the Runtime's segment table (empty without one).
extern Direct g_direct;

// comm.locality (false without a runtime).
inline bool locality_on() noexcept {
  return g_direct.locality;
}

// The bounds rule of the inline paths, the same as bounds_problem's:
// [offset, offset + bytes) lies in the unit's part (written so that a huge
// offset cannot wrap around).
inline bool fits_part(const DirectSegment& s, int unit, std::uint64_t offset, std::size_t bytes) noexcept {
  const std::size_t part = s.bytes[static_cast<std::size_t>(unit)];
  return offset <= part && bytes <= part - offset;
}

// The part of `unit` in the segment when it lies on my node (whatever
// comm.locality says), else nullptr; nullptr also for an unknown segment
// or unit.
inline char* node_part(int team, int segment, int unit) noexcept {
  const DirectSegment* s = g_direct.find(team, segment);
  if (!s || static_cast<unsigned>(unit) >= s->units) return nullptr;
  return s->peer[unit];
}

// The address of `bytes` at `offset` in `unit`'s part when a load or store
// may serve a transfer there now (same node, comm.locality on, in bounds
// when checks are on, the profile not measuring), else nullptr.
inline char* direct_address(int team, int segment, int unit, std::uint64_t offset,
                            std::size_t bytes) noexcept {
  const Direct& d = g_direct;
  if (!d.locality) return nullptr;
  const DirectSegment* s = d.find(team, segment);
  if (!s || static_cast<unsigned>(unit) >= s->units) return nullptr;
  char* part = s->peer[unit];
  if (!part) return nullptr;
  if (d.check && !fits_part(*s, unit, offset, bytes)) return nullptr;
  if (d.measuring.load(std::memory_order_relaxed)) return nullptr;
  return part + offset;
}

// The same for an atomic: only where the segment's atomics are CPU atomics
// on this node now, and not for an atomic that takes a stripe lock there
// (`locked`: a floating-point operation or a compare-and-swap, on a segment
// with comm.fp_locks).
inline char* direct_atomic_address(int team, int segment, int unit, std::uint64_t offset, std::size_t bytes,
                                   bool locked) noexcept {
  const Direct& d = g_direct;
  const DirectSegment* s = d.find(team, segment);
  if (!s || !s->cpu_atomics || static_cast<unsigned>(unit) >= s->units) return nullptr;
  if (locked && s->fp_locks) return nullptr;
  char* part = s->peer[unit];
  if (!part) return nullptr;
  if (d.check && !fits_part(*s, unit, offset, bytes)) return nullptr;
  if (d.measuring.load(std::memory_order_relaxed)) return nullptr;
  return part + offset;
}

// Address of (team, segment, unit, offset) if the unit is on my node, else
// nullptr; Error for a segment that is not allocated (GlobalPtr::local's
// general case).
void* shared_address(int team, int segment, int unit, std::uint64_t offset);

}  // namespace locus::detail
