// Counted requirements (counts.hpp): the threads' blocks, the phase
// table, the formulas and the footprint.
#include "locus/counts.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>

namespace locus {

namespace detail {

constinit thread_local CountBlock* t_counts = nullptr;
std::atomic<int> g_phase{0};

namespace {

struct Registry {
  std::mutex m;
  std::vector<std::unique_ptr<CountBlock>> blocks;  // every thread's, kept after the thread ends
  std::vector<std::string> phases{"outside"};
  // Formulas: appended under the lock, published by nformulas (read
  // without the lock); 64 distinct ones is far more than the apps state.
  std::pair<Count, const char*> formulas[64]{};
  std::atomic<std::size_t> nformulas{0};
  // The footprint: segment bytes held now and at peak, the largest private declaration.
  std::atomic<std::int64_t> segment_now{0};
  std::atomic<std::int64_t> segment_peak{0};
  std::atomic<double> private_max{0.0};
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may count during exit
  return *r;
}

// Where a thread's counts go when its block cannot be allocated (lost
// rather than a crash; 4 KiB never fails in practice).
CountBlock g_discard{};

}  // namespace

CountBlock* register_counts() noexcept {
  auto* b = new (std::nothrow) CountBlock{};
  if (!b) return t_counts = &g_discard;
  Registry& r = registry();
  try {
    std::lock_guard<std::mutex> lock(r.m);
    r.blocks.emplace_back(b);
  } catch (...) {
    delete b;
    return t_counts = &g_discard;
  }
  return t_counts = b;
}

void note_formula(Count k, const char* formula) noexcept {
  Registry& r = registry();
  // The common case, lock-free: an address seen before.
  const std::size_t n = r.nformulas.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < n; ++i)
    if (r.formulas[i].second == formula && r.formulas[i].first == k) return;
  try {
    std::lock_guard<std::mutex> lock(r.m);
    const std::size_t have = r.nformulas.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < have; ++i)
      if (r.formulas[i].first == k && std::strcmp(r.formulas[i].second, formula) == 0) return;
    if (have == std::size(r.formulas)) return;
    r.formulas[have] = {k, formula};
    r.nformulas.store(have + 1, std::memory_order_release);
  } catch (...) {
  }
}

}  // namespace detail

const char* count_name(Count k) noexcept {
  static const char* const names[kCountKinds] = {"bytes_on_node", "bytes_off_node", "messages",
                                                 "rma_ops",       "atomic_updates", "atomic_fetches",
                                                 "flops",         "memory_bytes",   "collectives"};
  const auto i = static_cast<unsigned>(k);
  return i < kCountKinds ? names[i] : "?";
}

int count_phase(const std::string& name) {
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.m);
  const auto it = std::find(r.phases.begin(), r.phases.end(), name);
  if (it != r.phases.end()) return static_cast<int>(it - r.phases.begin());
  if (r.phases.size() >= static_cast<std::size_t>(detail::kMaxPhases)) return 0;
  r.phases.push_back(name);
  return static_cast<int>(r.phases.size() - 1);
}

int current_count_phase() noexcept {
  return detail::g_phase.load(std::memory_order_relaxed);
}

std::vector<std::string> count_phases() {
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.m);
  return r.phases;
}

std::uint64_t counted(int phase, Count k) noexcept {
  if (phase < 0 || phase >= detail::kMaxPhases) return 0;
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.m);
  std::uint64_t sum = 0;
  for (const auto& b : r.blocks)
    sum +=
        std::atomic_ref<std::uint64_t>(b->v[phase][static_cast<unsigned>(k)]).load(std::memory_order_relaxed);
  return sum;
}

void reset_counts() noexcept {
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.m);
  for (const auto& b : r.blocks)
    for (auto& row : b->v)
      for (auto& c : row) std::atomic_ref<std::uint64_t>(c).store(0, std::memory_order_relaxed);
}

std::vector<std::pair<Count, std::string>> count_formulas() {
  detail::Registry& r = detail::registry();
  std::lock_guard<std::mutex> lock(r.m);
  std::vector<std::pair<Count, std::string>> out;
  for (std::size_t i = 0; i < r.nformulas.load(std::memory_order_relaxed); ++i)
    out.emplace_back(r.formulas[i].first, r.formulas[i].second);
  return out;
}

void note_segment_bytes(std::int64_t delta) noexcept {
  detail::Registry& r = detail::registry();
  const std::int64_t now = r.segment_now.fetch_add(delta, std::memory_order_relaxed) + delta;
  std::int64_t peak = r.segment_peak.load(std::memory_order_relaxed);
  while (now > peak && !r.segment_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void note_private_bytes(double bytes) noexcept {
  detail::Registry& r = detail::registry();
  double m = r.private_max.load(std::memory_order_relaxed);
  while (bytes > m && !r.private_max.compare_exchange_weak(m, bytes, std::memory_order_relaxed)) {
  }
}

std::uint64_t segment_bytes_peak() noexcept {
  return static_cast<std::uint64_t>(detail::registry().segment_peak.load(std::memory_order_relaxed));
}

std::uint64_t private_bytes_declared() noexcept {
  return static_cast<std::uint64_t>(detail::registry().private_max.load(std::memory_order_relaxed));
}

}  // namespace locus
