#pragma once
// poisson5pt: -Laplace(u) = f on the unit square with Dirichlet boundary
// values, 5-point stencil, iterative relaxation (the DART-MPI Poisson kernel
// of the MPI-3 shared-memory paper: Gauss-Seidel, row decomposition,
// halos by blocking put, float32).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "locus/app.hpp"
#include "locus/decomp.hpp"
#include "locus/field.hpp"
#include "locus/halo.hpp"
#include "locus/io.hpp"
#include "locus/profile.hpp"

namespace poisson5pt {

locus::AppInfo app_info();
int run(locus::Context& ctx);

enum class Setup { manufactured, paper, boundary };
enum class Method { gauss_seidel, sor, jacobi };

Method parse_method(const std::string& name);
std::string method_name(Method m);

// One discrete problem: N x N interior points, h = 1/(N+1).
struct Problem {
  long n = 0;
  Setup setup = Setup::manufactured;
  double source = 1.0;            // paper: the constant f
  std::array<double, 4> edges{};  // boundary: u at x=0, x=1, y=0, y=1
  double h() const { return 1.0 / (static_cast<double>(n) + 1.0); }
  // Source at grid point (i, j), 0 <= i, j <= n+1 (0 and n+1: boundary).
  double f(long i, long j) const;
  // Dirichlet value at a boundary point (i or j is 0 or n+1).
  double boundary(long i, long j) const;
  bool has_exact() const { return setup == Setup::manufactured; }
  // sin(pi x) sin(pi y) for the manufactured setup.
  double exact(long i, long j) const;
};

// The optimal SOR parameter for the model problem, 2 / (1 + sin(pi h)).
double optimal_omega(double h);

struct Options {
  Method method = Method::gauss_seidel;
  double omega = 1.0;  // SOR only (already resolved from auto)
  std::string halo = "locus";
  // One-sided halos: put the own boundary into the neighbours' ghosts (the
  // paper's) or get the neighbours' boundary into the own ghosts.
  locus::Direction direction = locus::Direction::put;
  locus::Dims procs{1, 1, 1};  // the process grid (x, y, 1), already resolved
  // Red-black methods: sweep a copy of the grid stored as each row's even
  // and odd columns (contiguous vectors per colour) instead of the
  // row-major field with stride-2 loops. Same updates in the same order:
  // bitwise the same result. Jacobi always sweeps the row-major field.
  bool split = true;
  // Split layout: use the AVX2 kernels when the CPU has AVX2 (else the
  // build's instruction set), and prefetch the sweep's memory streams this
  // many bytes ahead (0: leave it to the hardware).
  bool vector_auto = true;
  long prefetch_bytes = 2048;
};

// The grid, its fields and the sweeps on one rank, in precision T.
class SolverBase {
 public:
  virtual ~SolverBase() = default;
  // u = 0 inside, boundary values in the ghosts at the domain edge.
  virtual void initialize() = 0;
  // One iteration: both colours (Gauss-Seidel, SOR) or one Jacobi sweep.
  virtual void iterate() = 0;
  // Collective: max |f + Laplace_h(u)| over the interior, computed in double
  // from the current iterate (exchanging ghosts first when they are stale).
  virtual double residual() = 0;
  // Collective: max |u - exact| (manufactured setup only).
  virtual double max_error() = 0;
  // Collective: min and max of u over the interior.
  virtual std::array<double, 2> range() = 0;
  // Collective: u at the grid point nearest to the centre.
  virtual double centre_value() = 0;
  // The solution (and its error against the exact one when with_error) as
  // global (N, N) datasets.
  virtual void write(locus::H5Output& out, bool with_error) = 0;
  virtual const locus::CartDecomp& decomp() const = 0;
  virtual std::string halo_name() const = 0;
  // True once the first iteration matched the plain reference kernel.
  virtual bool kernel_checked() const = 0;
};

// True when the sweeps of these options run on the split layout (asked
// for, and a red-black method: Jacobi always sweeps the row-major field).
bool sweeps_split(const Options& o);

// The instruction set the split sweeps of these options run on: "avx2"
// (asked for auto, and the CPU has it) or "baseline" (the build's); "none"
// when the sweeps do not use the split layout.
std::string sweep_vector(const Options& o);

// precision: "float32" or "float64". Collective over the team.
std::unique_ptr<SolverBase> make_solver(const std::string& precision, locus::Team& team, const Problem& p,
                                        const Options& o, locus::Timers& timers);

// When a solve stops (the poisson5pt.solver.* keys).
struct StopRule {
  double tolerance = 0;  // relative residual; 0: run max_iterations
  long max_iterations = 1;
  long check_every = 1;
  long stall_checks = 0;  // 0: never stop for a stall
};

struct SolveResult {
  long iterations = 0;
  bool converged = false;
  bool stalled = false;          // stopped because the residual stopped falling
  double best = 0;               // lowest relative residual seen
  double initial_residual = 0;   // max |f + Laplace(u0)|
  double relative_residual = 0;  // final, relative to the initial one
  std::vector<double> history;   // relative residual at each check
  std::vector<std::int64_t> history_iterations;
  double seconds = 0;                  // wall time of the iterations (max over ranks)
  double max_error = -1;               // against the exact solution, when the caller knows it
  locus::RepeatTimes iteration_times;  // each iteration's time on this rank (its check included)
};

// Collective over comm: initialises the solver and iterates until the rule
// says stop; rank 0 shows the progress line when `show`. The app and the
// benchmark both solve with it. With `timers` (the app's, which has
// "setup" and "solve"), the initialisation and the initial residual run
// in `setup` and the iteration loop in `solve`, whose time is `seconds`.
SolveResult solve(MPI_Comm comm, SolverBase& solver, const StopRule& rule, bool show,
                  locus::Timers* timers = nullptr);

}  // namespace poisson5pt
