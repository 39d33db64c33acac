#pragma once
// Counted requirements (issue 52): what a run asks of the machine, counted
// exactly per rank and per phase, never timed.
//
// A count is `count(kind, n)`: it adds n to the calling thread's counter
// of that kind in the current phase. Every thread has its own block of
// counters (registered once, on its first count, in a process-wide list),
// and an addition is a relaxed load and a relaxed store of that thread's
// own counter (std::atomic_ref: no locked instruction, no data race with
// a reader), so that the inline same-node paths stay what they cost
// without it. The phase is process-wide: the app's timers set it
// (profile.hpp, Timers::start/stop: the innermost running timer; phase 0,
// "outside", when none runs). Reading sums every thread's block; read at
// the end of a run, after the app's threads have joined.
//
// Where each kind is counted (once, where the operation is issued, at the
// unit that asked for it): docs/outputs.md, "requirements".
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "locus/detail/counts.hpp"

namespace locus {

enum class Count : unsigned {
  bytes_on_node,   // payload of gets, puts, accumulates and messages to a unit of my node
  bytes_off_node,  // ... to a unit of another node
  messages,        // two-sided sends (MPI_Isend, MPI_Send, started persistent sends)
  rma_ops,         // MPI one-sided calls issued (get, put, accumulate, fetch-and-op, ...)
  atomic_updates,  // elements updated atomically (accumulates, atomic updates, notify)
  atomic_fetches,  // fetch-and-op and compare-and-swap calls
  flops,           // floating-point operations of the apps' kernels (their formulas)
  memory_bytes,    // memory traffic of the apps' kernels (their formulas)
  collectives,     // collective calls (allreduce, barrier): the library chooses their messages
};
constexpr unsigned kCountKinds = static_cast<unsigned>(Count::collectives) + 1;
// The kinds' names, in the enum's order (the summary's and the outputs').
const char* count_name(Count k) noexcept;

static_assert(kCountKinds == detail::kCountSlots, "a block holds every kind");

// Adds n to kind k of the current phase (this thread's counter).
inline void count(Count k, std::uint64_t n) noexcept {
  detail::add_count(detail::counts_block(), detail::g_phase.load(std::memory_order_relaxed), k, n);
}
// Two kinds at once (an accumulate's bytes and its updates).
inline void count(Count k1, std::uint64_t n1, Count k2, std::uint64_t n2) noexcept {
  detail::CountBlock* b = detail::counts_block();
  const int p = detail::g_phase.load(std::memory_order_relaxed);
  detail::add_count(b, p, k1, n1);
  detail::add_count(b, p, k2, n2);
}
// A payload of `bytes` to a unit of my node or of another.
inline void count_bytes(bool same_node, std::uint64_t bytes) noexcept {
  count(same_node ? Count::bytes_on_node : Count::bytes_off_node, bytes);
}
// An app kernel's count, with the formula it comes from (a string
// literal, stated once in the summary: requirements.formulas).
inline void count(Count k, std::uint64_t n, const char* formula) noexcept {
  count(k, n);
  detail::note_formula(k, formula);
}

// ---- phases (the app's timers: profile.hpp)

// The index of a phase name (registered on first use; the same name gives
// the same index in every Timers). Phase 0 is "outside"; past kMaxPhases
// names, further names share phase 0.
int count_phase(const std::string& name);
// Sets the current phase (every thread's counts go there from now on).
inline void set_count_phase(int phase) noexcept {
  detail::g_phase.store(phase, std::memory_order_relaxed);
}
int current_count_phase() noexcept;
// The registered phase names, by index ("outside" first).
std::vector<std::string> count_phases();

// ---- the SMPI build's compute (docs/co-design.md, "A simulated machine")

// Charges the kernels' work counted in the current phase since its last
// charge to this rank's simulated core as the machine model's roofline,
// max(flops / F, memory bytes / B) seconds (smpi_execute_flops), with F and
// B, FLOP/s and bytes/s of one rank, from the environment variable
// LOCUS_SMPI_COMPUTE="F,B" (./locus simulate --compute model sets it). The
// app's timers call it before they read the clock (profile.hpp), so a
// phase's time holds its kernels' charge. Nothing without the variable, and
// nothing in the real build.
#ifdef LOCUS_SMPI
void charge_counted_compute() noexcept;
#else
inline void charge_counted_compute() noexcept {}
#endif

// ---- reading (at the end of a run: sums every thread's block)

// Phase p, kind k, summed over this process's threads.
std::uint64_t counted(int phase, Count k) noexcept;
// Every thread's counters back to zero (tests; no other thread counting).
void reset_counts() noexcept;
// The formulas noted, as (kind, text), in the order first seen.
std::vector<std::pair<Count, std::string>> count_formulas();

// ---- the memory footprint

// Segment bytes this unit holds (its parts; allocate/free, segment.cpp):
// `delta` added to the bytes held now, whose peak is kept.
void note_segment_bytes(std::int64_t delta) noexcept;
// A private allocation this unit declared (require_memory, limits.hpp):
// the largest is kept.
void note_private_bytes(double bytes) noexcept;
std::uint64_t segment_bytes_peak() noexcept;
std::uint64_t private_bytes_declared() noexcept;

}  // namespace locus
