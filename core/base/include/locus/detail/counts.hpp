#pragma once
// What the inline count() of locus/counts.hpp needs to see: not an API.
//
// Two process-wide variables, read inline by every count (the same-node
// paths of rma.hpp count, and are measured against memcpy): this thread's
// block of counters and the current phase. The blocks themselves are kept
// in a list in counts.cpp (registered on a thread's first count, kept
// after the thread ends).
#include <atomic>
#include <cstdint>

namespace locus {

enum class Count : unsigned;  // locus/counts.hpp

namespace detail {

constexpr int kMaxPhases = 64;
constexpr unsigned kCountSlots = 9;  // the kinds of Count (counts.hpp checks it)
struct CountBlock {
  std::uint64_t v[kMaxPhases][kCountSlots];
};
// This thread's block (nullptr until its first count).
extern constinit thread_local CountBlock* t_counts;
// The current phase (an index into the phase table; 0: outside every timer).
extern std::atomic<int> g_phase;
// Allocates, zeroes and registers this thread's block; sets t_counts.
CountBlock* register_counts() noexcept;
// Records a kernel's formula for `k` (a string with static storage: the
// first sight of its address is kept).
void note_formula(Count k, const char* formula) noexcept;

inline void add_count(CountBlock* b, int phase, Count k, std::uint64_t n) noexcept {
  std::atomic_ref<std::uint64_t> c(b->v[phase][static_cast<unsigned>(k)]);
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
inline CountBlock* counts_block() noexcept {
  CountBlock* b = t_counts;
  if (__builtin_expect(b == nullptr, 0)) b = register_counts();
  return b;
}

}  // namespace detail
}  // namespace locus
