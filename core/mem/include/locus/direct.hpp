#pragma once
// The inline same-node path (included by rma.hpp and gptr.hpp).
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
// Not an API: what the inline templates need to see. The table is plain
// data (no MPI object), a mirror of the core's segment records
// (core/mem/segment_table.hpp) that the runtime rewrites inside the
// collective calls that change them (allocate, free, team split and free,
// set_async); between those, lookups are plain loads from any thread.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace locus {

// sum, min, max, replace for every element type; bxor (bitwise exclusive
// or, HPCC RandomAccess) for the integer types only.
enum class Op { sum, min, max, replace, bxor };

namespace detail {

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
  // The segment of (team, id), or nullptr.
  const DirectSegment* find(int team, int id) const noexcept {
    if (static_cast<unsigned>(team) >= nrows) return nullptr;
    const DirectRow& row = rows[team];
    if (static_cast<unsigned>(id) >= row.n) return nullptr;
    const DirectSegment* s = row.slot + id;
    return s->units ? s : nullptr;
  }
};
// Set by the Runtime (empty without one).
extern Direct g_direct;
// The communication-ratio profile (async.hpp, auto mode) is measuring: the
// inline paths step aside so that the timed general route counts them.
extern std::atomic<bool> g_measure_comm;

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
  if (g_measure_comm.load(std::memory_order_relaxed)) return nullptr;
  return part + offset;
}

// The same for an atomic: only where the segment's atomics are CPU atomics
// on this node now.
inline char* direct_atomic_address(int team, int segment, int unit, std::uint64_t offset,
                                   std::size_t bytes) noexcept {
  const Direct& d = g_direct;
  const DirectSegment* s = d.find(team, segment);
  if (!s || !s->cpu_atomics || static_cast<unsigned>(unit) >= s->units) return nullptr;
  char* part = s->peer[unit];
  if (!part) return nullptr;
  if (d.check && !fits_part(*s, unit, offset, bytes)) return nullptr;
  if (g_measure_comm.load(std::memory_order_relaxed)) return nullptr;
  return part + offset;
}

// The look-ahead of same-node handle-free calls: a get_nbi of at most 8
// bytes (Bale's index-gather on one node) and an atomic_update (GUPS).
// The call resolves the address, prefetches it (for writing, for an
// update) and queues the copy or the update; it is done kLookahead calls
// later, when the line has arrived, or at the calling thread's next flush,
// barrier, blocking atomic or segment free, oldest first. So a unit keeps
// kLookahead accesses in flight however much code runs between them, as
// the hardware does for a plain loop of loads but not of locked updates.
// A get_nbi's destination is defined, and an update visible, only after a
// flush (rma.hpp), so the deferral keeps the calls' contract. Per thread:
// a thread's calls complete at that thread's flush.
constexpr unsigned kLookahead = 16;
struct LookaheadOp {
  void* dst = nullptr;        // get: the destination; update: the target element
  const char* src = nullptr;  // get: the source
  std::uint64_t value = 0;    // update: the operand's bits
  // update: applies it (apply_update<T>); nullptr for a get
  void (*apply)(const LookaheadOp&) = nullptr;
  std::uint32_t bytes = 0;  // get
  Op op = Op::sum;          // update
};
struct Lookahead {
  LookaheadOp q[kLookahead]{};
  unsigned next = 0;  // the slot the next call takes
  unsigned held = 0;  // calls queued (the oldest at next - held)
};
extern constinit thread_local Lookahead t_lookahead;

// One move for the common sizes (a constant-size memcpy is one load and
// one store, whatever the element's type and alignment); the library's
// memcpy, a call through the PLT, for the others.
inline void copy_small(void* dst, const char* src, std::size_t bytes) noexcept {
  switch (bytes) {
    case 16:
      __builtin_memcpy(dst, src, 16);
      return;
    case 8:
      __builtin_memcpy(dst, src, 8);
      return;
    case 4:
      __builtin_memcpy(dst, src, 4);
      return;
    default:
      __builtin_memcpy(dst, src, bytes);
  }
}

inline void finish(const LookaheadOp& o) noexcept {
  if (o.apply)
    o.apply(o);
  else
    copy_small(o.dst, o.src, o.bytes);
}

// The slot for a new call, after finishing the oldest when the queue is full.
inline LookaheadOp& lookahead_slot() noexcept {
  Lookahead& l = t_lookahead;
  LookaheadOp& slot = l.q[l.next];
  if (l.held == kLookahead)
    finish(slot);
  else
    ++l.held;
  l.next = (l.next + 1) % kLookahead;
  return slot;
}

// Queues a copy of `bytes` (<= 8) from `src` on my node to `dst`.
inline void lookahead_get(void* dst, const char* src, std::size_t bytes) noexcept {
  __builtin_prefetch(src);
  LookaheadOp& o = lookahead_slot();
  o.dst = dst;
  o.src = src;
  o.apply = nullptr;
  o.bytes = static_cast<std::uint32_t>(bytes);
}

// Finishes every queued call of this thread, oldest first.
inline void complete_lookahead() noexcept {
  Lookahead& l = t_lookahead;
  for (unsigned k = l.held; k > 0; --k) finish(l.q[(l.next + kLookahead - k) % kLookahead]);
  l.held = 0;
}
// The same, when anything is queued (an inline check for the atomics that
// must come after the queued updates).
inline void complete_lookahead_if_any() noexcept {
  if (t_lookahead.held) complete_lookahead();
}

// Applies op with a CPU atomic; returns the old value. atomic_update and
// the updates an aggregator applies pass memory_order_relaxed: they are
// complete at a flush, whose full fence gives their visibility; the other
// callers keep acquire-release.
template <class T>
T cpu_apply(T* p, T v, Op op, std::memory_order order = std::memory_order_acq_rel) noexcept {
  std::atomic_ref<T> a(*p);
  if constexpr (std::is_integral_v<T>) {
    if (op == Op::sum) return a.fetch_add(v, order);
    if (op == Op::bxor) return a.fetch_xor(v, order);
  }
  if (op == Op::replace) return a.exchange(v, order);
  T old = a.load(std::memory_order_relaxed);
  for (;;) {
    T next = old;
    switch (op) {
      case Op::sum:
        next = old + v;
        break;
      case Op::min:
        next = v < old ? v : old;
        break;
      case Op::max:
        next = v > old ? v : old;
        break;
      default:
        break;
    }
    if (a.compare_exchange_weak(old, next, order, std::memory_order_relaxed)) return old;
  }
}

// Calls run(one), one(T* a, T v) applying op to *a with a relaxed CPU
// atomic (complete at a flush or a fence of the caller's), the operation
// chosen once for all the calls of one: XOR and sum of integers (GUPS,
// histograms) are plain lock xor / lock add, not a call through
// cpu_apply's switch.
template <class T, class Run>
void relaxed_update(Op op, Run&& run) {
  if constexpr (std::is_integral_v<T>) {
    if (op == Op::bxor)
      return run([](T* a, T v) { std::atomic_ref<T>(*a).fetch_xor(v, std::memory_order_relaxed); });
    if (op == Op::sum)
      return run([](T* a, T v) { std::atomic_ref<T>(*a).fetch_add(v, std::memory_order_relaxed); });
  }
  run([op](T* a, T v) { cpu_apply(a, v, op, std::memory_order_relaxed); });
}

template <class T>
void apply_update(const LookaheadOp& o) noexcept {
  T v;
  __builtin_memcpy(&v, &o.value, sizeof(T));
  cpu_apply(static_cast<T*>(o.dst), v, o.op, std::memory_order_relaxed);
}

// Queues a relaxed CPU-atomic update of the element at `a` on my node.
template <class T>
void lookahead_update(char* a, T value, Op op) noexcept {
  static_assert(sizeof(T) <= 8);
  __builtin_prefetch(a, 1);
  LookaheadOp& o = lookahead_slot();
  o.dst = a;
  o.value = 0;
  __builtin_memcpy(&o.value, &value, sizeof(T));
  o.apply = &apply_update<T>;
  o.op = op;
}

}  // namespace detail
}  // namespace locus
