#include "locus/console.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace locus {

bool stderr_is_terminal() {
  // Under mpiexec stderr is a pipe to the launcher; ./locus run passes
  // LOCUS_TTY=1 when its own stderr is a terminal.
  const char* env = std::getenv("LOCUS_TTY");
  if (env && std::string(env) == "1") return true;
  return isatty(fileno(stderr)) != 0;
}

namespace {
// Seconds between two refreshes: 1, or LOCUS_PROGRESS_INTERVAL (a positive
// number of seconds, for tests and slow terminals).
double refresh_interval() {
  const char* env = std::getenv("LOCUS_PROGRESS_INTERVAL");
  if (!env || !*env) return 1.0;
  char* end = nullptr;
  const double s = std::strtod(env, &end);
  if (end && *end == '\0' && std::isfinite(s) && s > 0) return s;
  std::fprintf(stderr,
               "locus: warning: LOCUS_PROGRESS_INTERVAL=%s is not a positive number of seconds; using 1\n",
               env);
  return 1.0;
}
}  // namespace

ProgressLine::ProgressLine(bool enabled, long max_steps, double tolerance)
    : enabled_(enabled), max_steps_(max_steps), tolerance_(tolerance) {
  start_ = last_shown_ = MPI_Wtime();
  if (enabled_) interval_ = refresh_interval();
}

ProgressLine::~ProgressLine() {
  finish();
}

namespace {
std::string clock_text(double s) {
  char buf[32];
  long t = static_cast<long>(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}
}  // namespace

std::string ProgressLine::eta(long step, double residual, double elapsed) const {
  if (step <= 0) return "?";
  double per_step = elapsed / static_cast<double>(step);
  double remaining = static_cast<double>(max_steps_ - step);
  // When the residual falls steadily, convergence may come before max_steps.
  if (steps_per_decade_ > 0 && tolerance_ > 0 && residual > tolerance_) {
    double to_go = steps_per_decade_ * std::log10(residual / tolerance_);
    remaining = std::min(remaining, to_go);
  }
  return clock_text(per_step * remaining);
}

void ProgressLine::update(long step, double residual) {
  if (!enabled_) return;
  double now = MPI_Wtime();
  if (now - last_shown_ < interval_) return;
  if (last_residual_ > 0 && residual > 0 && residual < last_residual_ && step > last_step_) {
    double decades = std::log10(last_residual_ / residual);
    steps_per_decade_ = static_cast<double>(step - last_step_) / decades;
  } else {
    steps_per_decade_ = 0;
  }
  last_step_ = step;
  last_residual_ = residual;
  last_shown_ = now;
  std::fprintf(stderr, "\r  step %ld/%ld  residual %.3e  elapsed %s  eta %s   ", step, max_steps_, residual,
               clock_text(now - start_).c_str(), eta(step, residual, now - start_).c_str());
  std::fflush(stderr);
}

void ProgressLine::finish() {
  if (!enabled_) return;
  std::fprintf(stderr, "\r%78s\r", "");
  std::fflush(stderr);
  enabled_ = false;
}

}  // namespace locus
