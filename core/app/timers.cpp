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
#include "locus/wait.hpp"

namespace locus {

Timers::Timers(std::vector<std::string> names)
    : names_(std::move(names)),
      total_(names_.size(), 0.0),
      started_(names_.size(), -1.0),
      parents_(names_.size()) {
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
void Timers::note_parent(std::size_t i) {
  if (stack_.empty()) return;
  const std::size_t p = stack_.back();
  if (p != i && std::find(parents_[i].begin(), parents_[i].end(), p) == parents_[i].end())
    parents_[i].push_back(p);
}

void Timers::start(const std::string& name) {
  std::size_t i = index(name);
  if (Kokkos::is_initialized()) Kokkos::Profiling::pushRegion("locus::" + name);
  note_parent(i);
  charge_counted_compute();  // the SMPI build: the enclosing phase's kernels so far (counts.hpp)
  stack_.push_back(i);
  running_.push_back(phase_[i]);
  set_count_phase(phase_[i]);
  started_[i] = MPI_Wtime();
}

void Timers::stop(const std::string& name) {
  std::size_t i = index(name);
  if (started_[i] < 0) throw Error("internal: timer " + name + " stopped before it started");
  const bool kokkos = Kokkos::is_initialized();
  if (kokkos) Kokkos::fence();
  charge_counted_compute();  // the SMPI build: this phase's kernels, before its clock stops
  total_[i] += MPI_Wtime() - started_[i];
  started_[i] = -1.0;
  // (timers need not stop in the reverse order of their starts)
  const auto it = std::find(running_.rbegin(), running_.rend(), phase_[i]);
  if (it != running_.rend()) running_.erase(std::next(it).base());
  const auto si = std::find(stack_.rbegin(), stack_.rend(), i);
  if (si != stack_.rend()) stack_.erase(std::next(si).base());
  set_count_phase(running_.empty() ? 0 : running_.back());
  if (kokkos) Kokkos::Profiling::popRegion();
}

void Timers::add(const std::string& name, double seconds) {
  const std::size_t i = index(name);
  note_parent(i);
  total_[i] += seconds;
}

std::vector<std::string> Timers::within(const std::string& name) const {
  std::vector<std::string> out;
  for (std::size_t p : parents_[index(name)]) out.push_back(names_[p]);
  return out;
}

void RepeatTimes::add(double seconds) {
  min = count == 0 ? seconds : std::min(min, seconds);
  max = count == 0 ? seconds : std::max(max, seconds);
  ++count;
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

Tree figure_of_merit(const std::string& name, double work, const std::string& unit, const Timers& timers,
                     const std::string& timer, const std::string& divides_by, MPI_Comm comm,
                     const RepeatTimes& repeats, const std::string& each) {
  double seconds = timers.seconds(timer);
  locus::yielding::allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  Tree f = figure_of_merit(name, work, unit, seconds, divides_by);
  f["timer"] = timer;
  // every rank takes part (the reductions), whether it counted repeats or not
  long count[2] = {repeats.count, -repeats.count};
  double ext[2] = {repeats.count > 0 ? repeats.min : HUGE_VAL, repeats.count > 0 ? -repeats.max : HUGE_VAL};
  locus::yielding::allreduce(MPI_IN_PLACE, count, 2, MPI_LONG, MPI_MIN, comm);
  locus::yielding::allreduce(MPI_IN_PLACE, ext, 2, MPI_DOUBLE, MPI_MIN, comm);
  if (!each.empty() && count[0] > 0 && count[0] == -count[1]) {
    Tree r = Tree::map();
    r["count"] = count[0];
    r["each"] = each;
    r["seconds_min"] = ext[0];
    r["seconds_mean"] = seconds / double(count[0]);
    r["seconds_max"] = -ext[1];
    f["repeats"] = r;
  }
  return f;
}

std::vector<TimerStats> reduce_timers(const Timers& t, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const auto& v = t.values();
  int n = static_cast<int>(v.size());
  std::vector<double> mn(v.size()), mx(v.size()), sum(v.size());
  locus::yielding::allreduce(v.data(), mn.data(), n, MPI_DOUBLE, MPI_MIN, comm);
  locus::yielding::allreduce(v.data(), mx.data(), n, MPI_DOUBLE, MPI_MAX, comm);
  locus::yielding::allreduce(v.data(), sum.data(), n, MPI_DOUBLE, MPI_SUM, comm);
  std::vector<TimerStats> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out.push_back({t.names()[i], mn[i], sum[i] / size, mx[i], t.within(t.names()[i])});
  return out;
}

std::vector<double> gather_timers(const Timers& t, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const auto& v = t.values();
  std::vector<double> all(v.size() * static_cast<std::size_t>(size));
  locus::yielding::allgather(v.data(), static_cast<int>(v.size()), MPI_DOUBLE, all.data(),
                             static_cast<int>(v.size()), MPI_DOUBLE, comm);
  return all;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace locus
