#pragma once
// heat3d: 3D heat conduction on the unit cube, forward Euler with the
// 7-point stencil (the dournac heat3d code of the DART locality paper).
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "locus/app.hpp"
#include "locus/decomp.hpp"
#include "locus/field.hpp"
#include "locus/halo.hpp"
#include "locus/profile.hpp"

namespace heat3d {

locus::AppInfo app_info();

enum class Init { Uniform, Sine };

// One discrete problem: grid, physics, time step.
struct Problem {
  std::array<long, 3> n{};  // interior points per dimension (x, y, z)
  double k0 = 1.0;
  double t_boundary = 10.0;
  double t_initial = -10.0;
  double dt = 0.0;  // the effective step (already limited)
  Init init = Init::Uniform;

  // h = 1/(n+1) per dimension.
  double h(int d) const { return 1.0 / (static_cast<double>(n[d]) + 1.0); }
  // Forward Euler stability: dt <= 1 / (2 k0 sum 1/h^2); heat3d uses the
  // stricter dournac limit 0.125 h_min^2 / k0.
  double dt_limit() const;
};

// How the stencil writes the new field (heat3d.kernel.streaming_stores):
// streaming stores (no read for ownership of un's lines), plain cached
// stores, or the faster of the two as timed on the steps after the first.
enum class Stores { automatic, streaming, cached };

// The grid, its fields and the stepping on one rank.
class Solver {
 public:
  // Collective over the team (the app's units).
  Solver(locus::Team& team, const Problem& p, const locus::Dims& procs, const std::string& halo,
         locus::Timers& timers);

  // Sets the interior from the initial condition and every ghost cell to the
  // boundary value.
  void initialize();
  // Replaces the interior with `f`'s (a restart); ghosts keep boundary values.
  void load_interior(const locus::HostField3D& f);
  // One forward Euler step; returns the global max |T_new - T_old|, which
  // is the same on every rank and every decomposition.
  double step();

  const locus::GridField& field() const { return u_; }
  const locus::CartDecomp& decomp() const { return decomp_; }
  const Problem& problem() const { return p_; }
  std::string halo_name() const { return halo_->name(); }
  // True once the first step's optimized kernel matched the reference.
  bool kernel_checked() const { return checked_; }
  // Streaming or cached stores (default automatic); before the first step.
  void set_stores(Stores s) { stores_ = s; }
  // automatic: the kTuneSteps steps after the first run in pairs, cached,
  // streaming, cached, streaming; the second step of each pair is timed,
  // and the stores with the smaller sum stay.
  static constexpr int kTuneSteps = 8;
  // Which stores this rank's kernel uses, and why (for the summary).
  std::string stores_report() const;
  // Rows of y per cache block of the sweep (from this CPU's L2; 0 before
  // the first step).
  long block_rows() const { return block_rows_; }
  // The row kernel of the last step (portable, its AVX2 compilation, or
  // the streaming-store refinement) for the summary.
  const std::string& row_kernel() const { return row_kernel_; }

  // Collective reductions over the interior.
  double global_min() const;
  // Collective: every interior value is finite (no NaN, no inf).
  bool all_finite() const;
  double global_max() const;
  // Temperature at global point (nx/2, ny/2, nz/2).
  double centre_value() const;
  // max |u - amplitude * u0| / max|amplitude * u0| for the sine mode.
  double sine_relative_error(double amplitude) const;

 private:
  double initial_value(long gi, long gj, long gk) const;
  void check_against_reference(const locus::HostField3D& ref, double ref_max, double opt_max,
                               const char* which);
  MPI_Comm comm_;
  Problem p_;
  locus::CartDecomp decomp_;
  std::unique_ptr<locus::HaloExchange<double>> halo_;
  locus::Timers& timers_;
  bool streaming_now() const;
  void tune(bool streaming, double seconds);
  locus::GridField u_, un_;
  bool checked_ = false;
  Stores stores_ = Stores::automatic;
  int tuned_steps_ = 0;
  double tune_seconds_[2] = {0.0, 0.0};  // cached, streaming
  bool streaming_ = false;
  long block_rows_ = 0;
  std::string row_kernel_ = "none (no step)";
};

// The forward Euler 7-point update T' = T + a (rx (W - 2T + E) + ry (S -
// 2T + N) + rz (B - 2T + U)), with a = dt k0 and r = 1/h^2, written with
// the coefficients gathered once: T' = (c0 T + cx (W + E)) + (cy (S + N)
// + cz (B + U)), c = a r, c0 = 1 - 2 (cx + cy + cz). The same update in
// 6 additions and 4 multiplications per cell instead of 9 and 5 (a
// different rounding in the last bits); every kernel uses this one form.
struct StencilCoefficients {
  double c0, cx, cy, cz;
};
StencilCoefficients stencil_coefficients(double rx, double ry, double rz, double a);

// The plain reference kernel (a scalar triple loop): writes u's update
// into un's interior and returns the local max |T_new - T_old|.
double reference_step(const locus::HostField3D& u, const locus::HostField3D& un, const std::array<long, 3>& n,
                      double rx, double ry, double rz, double a);

// The app: reads the context's config, runs, validates, writes output.
int run(locus::Context& ctx);

}  // namespace heat3d
