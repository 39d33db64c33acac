#pragma once
// Same-node floating-point atomics without hardware transactions (comm.fp_locks).
// x86 has no atomic floating-point add: without RTM every element of a
// same-node accumulate of doubles is a compare-and-swap loop, ~20 cycles
// and a wait for its line each (tensor_contract's accumulates took 7-10 %
// of its task loop on a Xeon without RTM). With stripe locks every part of
// a segment carries kStripeLocks lock words in the shared memory just past
// its data (segment.cpp allocates them), one per cache line; a part's
// bytes fall into 4 KiB stripes, and stripe s of the part is guarded by
// lock s % kStripeLocks. A run of elements takes its stripes' locks one
// at a time and applies plain, vectorisable operations under each.
//
// The rule every same-node atomic path keeps on a segment with stripe
// locks (inline calls in rma.hpp, the general route in rma.cpp, the
// aggregator's batches in aggregate.cpp):
// - floating-point sum, min, max and replace, fetching or not, apply plain
//   operations under the lock of the element's first byte;
// - compare-and-swap, of any type, runs the hardware CAS under that lock
//   (so it is atomic against the locked plain operations and against the
//   native integer atomics alike);
// - integer operations stay single locked instructions, without the lock.
// So each element stays atomic as MPI_Accumulate's are (per element, same
// type); a reader without the lock sees each element before or after an
// update (aligned 8-byte stores are single accesses). Only one lock is
// held at a time, so locks cannot deadlock. Waiting yields (locus::relax):
// the holder may be descheduled on an over-subscribed node.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "locus/wait.hpp"
#include "mem/shared_pages.hpp"

namespace locus::detail {

constexpr unsigned kStripeShift = 12;  // 4 KiB of a part per stripe
constexpr std::size_t kStripeLocks = 64;
constexpr std::size_t kStripeLockBytes = 64;  // one lock word per cache line
constexpr std::size_t kStripeArea = kStripeLocks * kStripeLockBytes;

// Whether op on elements of type T takes a stripe lock on segments that
// have them (the rule above; compare-and-swap always does).
template <class T>
constexpr bool stripe_locked() noexcept {
  return std::is_floating_point_v<T>;
}

// The lock words of a part of `bytes` bytes at `part`: the one place that
// says where they lie (allocate_segment asks for them there).
inline char* stripe_area(char* part, std::size_t bytes) noexcept {
  return part + page_round(bytes);
}

// Holds the lock of byte `offset` of the part whose lock words start at
// `area` (part + page_round(part's bytes)).
class StripeGuard {
 public:
  StripeGuard(char* area, std::uint64_t offset) noexcept
      : word_(reinterpret_cast<std::uint32_t*>(area + ((offset >> kStripeShift) % kStripeLocks) *
                                                          kStripeLockBytes)) {
    std::atomic_ref<std::uint32_t> w(*word_);
    unsigned spins = 0;
    while (w.exchange(1, std::memory_order_acquire) != 0)
      while (w.load(std::memory_order_relaxed) != 0) relax(spins);
  }
  ~StripeGuard() { std::atomic_ref<std::uint32_t>(*word_).store(0, std::memory_order_release); }
  StripeGuard(const StripeGuard&) = delete;
  StripeGuard& operator=(const StripeGuard&) = delete;

 private:
  std::uint32_t* word_;
};

// f() under the lock of byte `offset` where the part has lock words
// (`area`), else f() alone.
template <class F>
void maybe_locked(char* area, std::uint64_t offset, F&& f) {
  if (!area) return f();
  StripeGuard hold(area, offset);
  f();
}

// body(k, m) for consecutive pieces [k, k + m) of a run of n elements of
// `esize` bytes from byte `offset` of a part, each under the lock of its
// stripe (an element belongs to the stripe of its first byte).
template <class Body>
void locked_pieces(char* area, std::uint64_t offset, std::size_t esize, std::size_t n, Body&& body) {
  std::size_t k = 0;
  while (k < n) {
    const std::uint64_t at = offset + k * esize;
    const std::uint64_t end = ((at >> kStripeShift) + 1) << kStripeShift;
    std::size_t m = static_cast<std::size_t>((end - at + esize - 1) / esize);
    if (m > n - k) m = n - k;
    StripeGuard hold(area, at);
    body(k, m);
    k += m;
  }
}

}  // namespace locus::detail
