// Timers, their reduction over ranks, rates and the figure of merit
// (profile.hpp).
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "locus/counts.hpp"
#include "locus/error.hpp"
#include "locus/profile.hpp"

namespace locus {

Timers::Timers(std::vector<std::string> names)
    : names_(std::move(names)), total_(names_.size(), 0.0), started_(names_.size(), -1.0) {
  for (const auto& n : names_) phase_.push_back(count_phase(n));
}

std::size_t Timers::index(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) throw Error("internal: unknown timer " + name);
  return static_cast<std::size_t>(it - names_.begin());
}

// Every timer is also a Kokkos::Profiling region ("locus::NAME"), and a
// timer stops only after Kokkos::fence(), so that asynchronous kernels
// are counted where they ran.
void Timers::start(const std::string& name) {
  std::size_t i = index(name);
  if (Kokkos::is_initialized()) Kokkos::Profiling::pushRegion("locus::" + name);
  running_.push_back(phase_[i]);
  set_count_phase(phase_[i]);
  started_[i] = MPI_Wtime();
}

void Timers::stop(const std::string& name) {
  std::size_t i = index(name);
  if (started_[i] < 0) throw Error("internal: timer " + name + " stopped before it started");
  const bool kokkos = Kokkos::is_initialized();
  if (kokkos) Kokkos::fence();
  total_[i] += MPI_Wtime() - started_[i];
  started_[i] = -1.0;
  // (timers need not stop in the reverse order of their starts)
  const auto it = std::find(running_.rbegin(), running_.rend(), phase_[i]);
  if (it != running_.rend()) running_.erase(std::next(it).base());
  set_count_phase(running_.empty() ? 0 : running_.back());
  if (kokkos) Kokkos::Profiling::popRegion();
}

void Timers::add(const std::string& name, double seconds) {
  total_[index(name)] += seconds;
}

double Timers::seconds(const std::string& name) const {
  return total_[index(name)];
}

double rate(double work, double seconds) {
  if (!(seconds > 0) || !std::isfinite(work)) return 0.0;
  const double v = work / seconds;
  if (v == 0 || !std::isfinite(v)) return v;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

Tree figure_of_merit(const std::string& name, double work, const std::string& unit, double seconds,
                     const std::string& divides_by) {
  Tree f = Tree::map();
  f["name"] = name;
  f["value"] = rate(work, seconds);
  f["unit"] = unit;
  f["seconds"] = seconds;
  f["divides_by"] = divides_by;
  return f;
}

std::vector<TimerStats> reduce_timers(const Timers& t, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const auto& v = t.values();
  int n = static_cast<int>(v.size());
  std::vector<double> mn(v.size()), mx(v.size()), sum(v.size());
  MPI_Allreduce(v.data(), mn.data(), n, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(v.data(), mx.data(), n, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(v.data(), sum.data(), n, MPI_DOUBLE, MPI_SUM, comm);
  std::vector<TimerStats> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back({t.names()[i], mn[i], sum[i] / size, mx[i]});
  return out;
}

std::vector<double> gather_timers(const Timers& t, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const auto& v = t.values();
  std::vector<double> all(v.size() * static_cast<std::size_t>(size));
  MPI_Allgather(v.data(), static_cast<int>(v.size()), MPI_DOUBLE, all.data(), static_cast<int>(v.size()),
                MPI_DOUBLE, comm);
  return all;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace locus
