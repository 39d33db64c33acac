// Counted requirements (counts.hpp): the threads' blocks, the phase
// table, the formulas and the footprint.
#include "locus/counts.hpp"

#include <algorithm>
#include <cstring>
#ifdef LOCUS_SMPI
#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#endif
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

#ifdef LOCUS_SMPI
namespace locus {

namespace {
// The rates of LOCUS_SMPI_COMPUTE and what each phase has been charged
// (per simulated rank: SMPI privatizes the library's globals).
struct Injection {
  bool read = false;
  double flops_per_s = 0, bytes_per_s = 0;
  std::uint64_t charged[detail::kMaxPhases][2]{};
};

Injection& injection() {
  static Injection in;
  return in;
}

// "F,B": two positive finite numbers; anything else stops the run with one
// line naming the variable (every rank reads the same environment).
void read_rates(Injection& in) {
  in.read = true;
  const char* v = std::getenv("LOCUS_SMPI_COMPUTE");
  if (!v || !*v) return;
  char* end = nullptr;
  errno = 0;
  const double f = std::strtod(v, &end);
  double b = 0;
  bool ok = errno == 0 && end != v && *end == ',';
  if (ok) {
    const char* rest = end + 1;
    b = std::strtod(rest, &end);
    ok = errno == 0 && end != rest && *end == '\0';
  }
  if (!ok || !(f > 0) || !(b > 0) || f > 1e300 || b > 1e300) {
    std::fprintf(stderr,
                 "locus: error: LOCUS_SMPI_COMPUTE=%s: needs F,B (FLOP/s and memory bytes/s of one rank, "
                 "both positive and finite)\n",
                 v);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  in.flops_per_s = f;
  in.bytes_per_s = b;
}
}  // namespace

void charge_counted_compute() noexcept {
  Injection& in = injection();
  if (!in.read) read_rates(in);
  if (!(in.flops_per_s > 0)) return;
  const int p = current_count_phase();
  const std::uint64_t f = counted(p, Count::flops), b = counted(p, Count::memory_bytes);
  // (counts reset since the last charge start again from 0)
  const std::uint64_t df = f >= in.charged[p][0] ? f - in.charged[p][0] : f;
  const std::uint64_t db = b >= in.charged[p][1] ? b - in.charged[p][1] : b;
  in.charged[p][0] = f;
  in.charged[p][1] = b;
  // the simulated core runs at F (the platform's speed is the machine
  // file's core_gflops): flops worth the roofline's seconds
  const double work =
      std::max(static_cast<double>(df), static_cast<double>(db) / in.bytes_per_s * in.flops_per_s);
  if (work > 0) smpi_execute_flops(work);
}

}  // namespace locus
#endif
