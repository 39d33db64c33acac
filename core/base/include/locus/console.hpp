#pragma once
// The progress line rank 0 shows on a terminal: step, residual, elapsed,
// ETA, refreshed about once a second. Off with --quiet, off when stderr is
// not a terminal (logs stay clean), off on every other rank.
#include <string>

namespace locus {

class ProgressLine {
 public:
  ProgressLine(bool enabled, long max_steps, double tolerance);
  ~ProgressLine();
  // Cheap when nothing is shown; refreshes at most once a second (or every
  // LOCUS_PROGRESS_INTERVAL seconds).
  void update(long step, double residual);
  // Clears the line.
  void finish();
  bool enabled() const { return enabled_; }

 private:
  std::string eta(long step, double residual, double elapsed) const;
  bool enabled_;
  long max_steps_;
  double tolerance_;
  double start_ = 0, last_shown_ = 0, interval_ = 1.0;
  // For a convergence-based ETA: log-residual slope since the last refresh.
  long last_step_ = 0;
  double last_residual_ = 0;
  double steps_per_decade_ = 0;
};

// True when this process's stderr is a terminal, or LOCUS_TTY=1 says the
// launcher's is (mpiexec turns stderr into a pipe).
bool stderr_is_terminal();

}  // namespace locus
