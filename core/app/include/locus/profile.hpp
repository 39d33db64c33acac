#pragma once
// Named wall-clock timers per rank, their min/avg/max over ranks, and the
// figure of merit of the run summary every app prints at the end
// (report.hpp). The timers are also the
// phases of the counted requirements (counts.hpp): while a timer runs, and
// no timer started after it still runs, counts go to its phase.
#include <mpi.h>

#include <string>
#include <vector>

#include "locus/tree.hpp"

namespace locus {

class Timers {
 public:
  // The same names, in the same order, on every rank.
  explicit Timers(std::vector<std::string> names);

  // start makes the timer's phase the current one; stop makes the
  // innermost timer still running current again ("outside" when none).
  void start(const std::string& name);
  void stop(const std::string& name);
  double seconds(const std::string& name) const;
  // Adds time measured elsewhere (e.g. per phase inside a kernel).
  void add(const std::string& name, double seconds);
  const std::vector<std::string>& names() const { return names_; }
  // The timers that were the innermost running one whenever `name` started
  // or was added to, in the order first seen: its time is part of theirs
  // (`total` for a phase of the run; empty for `total` itself).
  std::vector<std::string> within(const std::string& name) const;
  const std::vector<double>& values() const { return total_; }

  // Stops the timer when it goes out of scope.
  class Scope {
   public:
    Scope(Timers& t, const std::string& name) : t_(t), name_(name) { t_.start(name_); }
    ~Scope() { t_.stop(name_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Timers& t_;
    std::string name_;
  };
  Scope scope(const std::string& name) { return Scope(*this, name); }

 private:
  std::size_t index(const std::string& name) const;
  std::vector<std::string> names_;
  std::vector<double> total_;
  std::vector<double> started_;
  std::vector<int> phase_;                         // timer -> its phase (counts.hpp)
  std::vector<int> running_;                       // phases of the running timers, in start order
  std::vector<std::size_t> stack_;                 // the running timers, in start order
  std::vector<std::vector<std::size_t>> parents_;  // timer -> what ran around it (within)
  void note_parent(std::size_t i);
};

struct TimerStats {
  std::string name;
  double min, avg, max;
  std::vector<std::string> within;  // Timers::within (the summary's `within`)
};

// The time each repeat of a timed loop took on this rank (a step, an
// iteration, a product): how many, the least and the largest.
struct RepeatTimes {
  long count = 0;
  double min = 0, max = 0;
  void add(double seconds);
};

// The app's one figure of merit (the same shape in every app): `work`
// units of `name` per second of `seconds`, which is the whole timed solve
// of the slowest rank, communication included (`divides_by` says what it
// covers). Value, unit, seconds and meaning as a map; finish_output
// copies it into the HDF5 output as root attributes figure_of_merit_*.
// `work` is in the unit's own scale (e.g. 1e6 updates for "Mupdates/s").
Tree figure_of_merit(const std::string& name, double work, const std::string& unit, double seconds,
                     const std::string& divides_by);
// The figure of merit of the timed loop that timer `timer` measured:
// as above, with `seconds` the slowest rank's total of that timer (the
// summary's timers_seconds.TIMER.max, unrounded), and the map also names
// `timer`. With `repeats` counted (`each`: "step", "product", ...) it
// adds `repeats`: count, each, and the least, mean and largest seconds
// of one repeat on any rank. Collective.
Tree figure_of_merit(const std::string& name, double work, const std::string& unit, const Timers& timers,
                     const std::string& timer, const std::string& divides_by, MPI_Comm comm,
                     const RepeatTimes& repeats = {}, const std::string& each = "");
// A rate rounded to six significant digits (0 when `seconds` is not positive).
double rate(double work, double seconds);

// The median of repeated measurements (the upper one of an even count);
// what the benchmarks report. `v` must not be empty.
double median(std::vector<double> v);

// Collective.
std::vector<TimerStats> reduce_timers(const Timers& t, MPI_Comm comm);
// Collective: every rank's values, rank-major (ranks x timers).
std::vector<double> gather_timers(const Timers& t, MPI_Comm comm);

}  // namespace locus
