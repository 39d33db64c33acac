#pragma once
// Same-node accumulates of contiguous runs by hardware transactions (Intel
// RTM: xbegin/xend). A locked instruction costs ~20 cycles and waits for its
// line, and a sum of doubles is a compare-and-swap loop on top: an
// accumulate of a tensor block went at 5.8 ns per element on the Intel
// host, against 0.8 for plain adds. A transaction over a chunk of 512
// bytes applies plain operations and commits them at once: it is
// atomic with respect to every other access to those lines (any conflict
// aborts it), so the run stays atomic per element as MPI_Accumulate is.
// A chunk whose transaction aborts (a conflict, a page fault, an
// interrupt) is applied by the per-element CPU atomics instead; after
// kGiveUp aborts in a row the rest of the run takes the atomics (a CPU
// whose RTM always aborts costs one attempt per run, not per chunk).
// TransactionalBatch does the same for single elements at scattered
// addresses (update_nbi). comm.htm: auto uses both where the CPU has RTM;
// off never. Both check cpu_has_rtm() (locus/cpu.hpp: read once, hidden by
// LOCUS_CPU_HIDE=rtm) before any XBEGIN, so on a CPU without RTM (every AMD
// EPYC, Intel parts with TSX disabled) they take the atomics and never
// issue the instruction.
#include <cstddef>
#include <cstdint>

#include "locus/cpu.hpp"
#include "locus/gptr.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define LOCUS_HTM_X86 1
#else
#define LOCUS_HTM_X86 0
#endif

namespace locus::detail {

// Whether the CPU offers RTM and it is not hidden (locus/cpu.hpp).
inline bool cpu_has_rtm() noexcept {
  return LOCUS_HTM_X86 && cpu::features().rtm;
}

// Calls run(plain), plain(T& a, T v) applying op to a without atomics (the
// body of a transaction).
template <class T, class Run>
void plain_update(Op op, Run&& run) {
  switch (op) {
    case Op::sum:
      return run([](T& a, T v) { a = static_cast<T>(a + v); });
    case Op::min:
      return run([](T& a, T v) { a = v < a ? v : a; });
    case Op::max:
      return run([](T& a, T v) { a = v > a ? v : a; });
    case Op::replace:
      return run([](T& a, T v) { a = v; });
    case Op::bxor:
      if constexpr (std::is_integral_v<T>) return run([](T& a, T v) { a ^= v; });
      return;
  }
}

#if LOCUS_HTM_X86
// One chunk in one transaction; false when it aborted (nothing applied).
template <class T, class Plain>
__attribute__((target("rtm"))) bool transaction(T* dst, const T* v, std::size_t n, const Plain& plain) {
  if (_xbegin() != _XBEGIN_STARTED) return false;
  for (std::size_t k = 0; k < n; ++k) plain(dst[k], v[k]);
  _xend();
  return true;
}
#endif

struct HtmCounts {
  std::uint64_t commits = 0, aborts = 0;
};
// This thread's transactions (for tests and the benchmark).
inline HtmCounts& htm_counts() noexcept {
  thread_local HtmCounts c;
  return c;
}

// A run of n elements: chunks by transactions, atomic(dst + k, v[k]) for
// the chunks that abort and after kGiveUp aborts in a row.
template <class T, class Plain, class Atomic>
void transactional_run(T* dst, const T* v, std::size_t n, const Plain& plain, const Atomic& atomic) {
  constexpr std::size_t kChunk = 512 / sizeof(T);
  constexpr int kGiveUp = 4;
  std::size_t k = 0;
#if LOCUS_HTM_X86
  HtmCounts& counts = htm_counts();
  int failed = cpu_has_rtm() ? 0 : kGiveUp;  // no RTM: straight to the atomics
  while (k < n && failed < kGiveUp) {
    const std::size_t m = n - k < kChunk ? n - k : kChunk;
    if (transaction(dst + k, v + k, m, plain)) {
      ++counts.commits;
      failed = 0;
    } else {
      ++counts.aborts;
      ++failed;
      for (std::size_t i = 0; i < m; ++i) atomic(dst + k + i, v[k + i]);
    }
    k += m;
  }
#endif
  for (; k < n; ++k) atomic(dst + k, v[k]);
}

#if LOCUS_HTM_X86
// Elements at scattered addresses in one transaction; false when it
// aborted (nothing applied).
template <class T, class Plain>
__attribute__((target("rtm"))) bool scattered_transaction(T* const* dst, const T* v, std::size_t n,
                                                          const Plain& plain) {
  if (_xbegin() != _XBEGIN_STARTED) return false;
  for (std::size_t k = 0; k < n; ++k) plain(*dst[k], v[k]);
  _xend();
  return true;
}
#endif

// Single elements at scattered addresses (update_nbi's same-node part),
// applied kBatch at a time in one transaction: a locked instruction waits
// for its line, so random updates go one miss at a time, while a
// transaction's loads are in flight together (random XOR on a 2 MB table,
// one core: 0.168 GUPS by lock xor, 0.299 by transactions of 16, 0.343
// plain). A batch that aborts takes the atomics, and so does every batch
// after kGiveUp aborts in a row.
template <class T, class Plain, class Atomic>
class TransactionalBatch {
 public:
  static constexpr std::size_t kBatch = 16;
  TransactionalBatch(const Plain& plain, const Atomic& atomic)
      : plain_(plain), atomic_(atomic), failed_(cpu_has_rtm() ? 0 : kGiveUp) {}
  ~TransactionalBatch() { flush(); }
  TransactionalBatch(const TransactionalBatch&) = delete;
  TransactionalBatch& operator=(const TransactionalBatch&) = delete;
  void add(T* dst, T v) {
    dst_[n_] = dst;
    v_[n_] = v;
    if (++n_ == kBatch) flush();
  }
  void flush() {
    if (n_ == 0) return;
#if LOCUS_HTM_X86
    if (failed_ < kGiveUp) {
      if (scattered_transaction(dst_, v_, n_, plain_)) {
        ++htm_counts().commits;
        failed_ = 0;
        n_ = 0;
        return;
      }
      ++htm_counts().aborts;
      ++failed_;
    }
#endif
    for (std::size_t k = 0; k < n_; ++k) atomic_(dst_[k], v_[k]);
    n_ = 0;
  }

 private:
  static constexpr int kGiveUp = 4;
  const Plain& plain_;
  const Atomic& atomic_;
  T* dst_[kBatch];
  T v_[kBatch];
  std::size_t n_ = 0;
  int failed_;  // aborts in a row; kGiveUp from the start without RTM
};

// The same batches without transactions, for CPUs without RTM (and
// comm.htm: off): each address is prefetched for writing when it is added
// and the batch's atomics run when kBatch are pending. A locked
// instruction waits for its line, so random updates one by one go one
// miss at a time; with the batch's lines requested ahead, the misses
// overlap and the atomics find their lines in cache. The values and the
// per-element atomicity are the atomics' own.
template <class T, class Atomic>
class PrefetchedBatch {
 public:
  static constexpr std::size_t kBatch = 16;
  explicit PrefetchedBatch(const Atomic& atomic) : atomic_(atomic) {}
  ~PrefetchedBatch() { flush(); }
  PrefetchedBatch(const PrefetchedBatch&) = delete;
  PrefetchedBatch& operator=(const PrefetchedBatch&) = delete;
  void add(T* dst, T v) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(dst, 1);
#endif
    dst_[n_] = dst;
    v_[n_] = v;
    if (++n_ == kBatch) flush();
  }
  void flush() {
    for (std::size_t k = 0; k < n_; ++k) atomic_(dst_[k], v_[k]);
    n_ = 0;
  }

 private:
  const Atomic& atomic_;
  T* dst_[kBatch];
  T v_[kBatch];
  std::size_t n_ = 0;
};

}  // namespace locus::detail
