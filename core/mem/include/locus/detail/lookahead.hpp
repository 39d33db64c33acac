#pragma once
// The CPU atomics and the look-ahead of the inline same-node calls
// (rma.hpp): not an API. One process-wide variable, per thread:
// t_lookahead, the calling thread's queue, which the inline calls fill
// and the thread's flush empties (docs/design.md, "The runtime's state").
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "locus/gptr.hpp"

namespace locus::detail {

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

}  // namespace locus::detail
