#include <Kokkos_Core.hpp>
#include <cmath>
#include <limits>

#include "heat3d.hpp"
#include "locus/wait.hpp"

namespace heat3d {

using locus::Field3D;

double Problem::dt_limit() const {
  double hmin = std::min({h(0), h(1), h(2)});
  return 0.125 * hmin * hmin / k0;
}

Solver::Solver(locus::Team& team, const Problem& p, const locus::Dims& procs, const std::string& halo,
               locus::Timers& timers)
    : comm_(team.comm()),
      p_(p),
      decomp_(team.comm(), p.n, procs, "heat3d.procs"),
      halo_(locus::make_halo<double>(halo, decomp_, team)),
      timers_(timers),
      u_(team, decomp_),
      un_(team, decomp_) {}

double Solver::initial_value(long gi, long gj, long gk) const {
  if (p_.init == Init::Uniform) return p_.t_initial;
  const double pi = M_PI;
  return std::sin(pi * double(gi + 1) * p_.h(0)) * std::sin(pi * double(gj + 1) * p_.h(1)) *
         std::sin(pi * double(gk + 1) * p_.h(2));
}

void Solver::initialize() {
  // Every cell first: the ghost layers keep the boundary value for good.
  Kokkos::deep_copy(u_.view(), p_.t_boundary);
  Kokkos::deep_copy(un_.view(), p_.t_boundary);
  const auto& n = decomp_.local();
  const auto& o = decomp_.offset();
  Field3D u = u_.view();
  for (long k = 1; k <= n[2]; ++k)
    for (long j = 1; j <= n[1]; ++j)
      for (long i = 1; i <= n[0]; ++i) u(k, j, i) = initial_value(o[0] + i - 1, o[1] + j - 1, o[2] + k - 1);
}

void Solver::load_interior(const Field3D& f) {
  const auto& n = decomp_.local();
  Kokkos::deep_copy(Kokkos::subview(u_.view(), std::make_pair(1L, n[2] + 1), std::make_pair(1L, n[1] + 1),
                                    std::make_pair(1L, n[0] + 1)),
                    Kokkos::subview(f, std::make_pair(1L, n[2] + 1), std::make_pair(1L, n[1] + 1),
                                    std::make_pair(1L, n[0] + 1)));
}

double Solver::step() {
  const long nx = decomp_.local()[0], ny = decomp_.local()[1], nz = decomp_.local()[2];
  const double rx = 1.0 / (p_.h(0) * p_.h(0));
  const double ry = 1.0 / (p_.h(1) * p_.h(1));
  const double rz = 1.0 / (p_.h(2) * p_.h(2));
  const double a = p_.dt * p_.k0;
  Field3D u = u_.view(), un = un_.view();
  // Cells i0..i1 of row (j, k); returns max |T_new - T_old| over them.
  auto row = [=](long k, long j, long i0, long i1, double m) {
    for (long i = i0; i <= i1; ++i) {
      const double c = u(k, j, i);
      const double lap = (u(k, j, i - 1) - 2.0 * c + u(k, j, i + 1)) * rx +
                         (u(k, j - 1, i) - 2.0 * c + u(k, j + 1, i)) * ry +
                         (u(k - 1, j, i) - 2.0 * c + u(k + 1, j, i)) * rz;
      const double v = c + a * lap;
      un(k, j, i) = v;
      m = std::max(m, std::fabs(v - c));
    }
    return m;
  };
  double local_max = 0.0;
  if (!halo_->split_phase()) {
    {
      auto t = timers_.scope("halo");
      halo_->exchange(u_);
    }
    auto t = timers_.scope("compute");
    // One z-plane per iteration; the inner x loop vectorises.
    Kokkos::parallel_reduce(
        "heat3d::step", Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(1, nz + 1),
        KOKKOS_LAMBDA(long k, double& m) {
          for (long j = 1; j <= ny; ++j) m = row(k, j, 1, nx, m);
        },
        Kokkos::Max<double>(local_max));
  } else {
    // The paper's overlap: start the face transfers, update the cells that
    // read no ghost, complete the transfers, update the boundary shell.
    // Every cell is computed exactly as above, so the field is bitwise the
    // same.
    {
      auto t = timers_.scope("halo");
      halo_->begin(u_);
    }
    {
      auto t = timers_.scope("compute");
      for (long k = 2; k < nz; ++k)
        for (long j = 2; j < ny; ++j) local_max = row(k, j, 2, nx - 1, local_max);
    }
    {
      auto t = timers_.scope("halo");
      halo_->end(u_);
    }
    auto t = timers_.scope("compute");
    for (long k = 1; k <= nz; ++k)
      for (long j = 1; j <= ny; ++j) {
        if (k == 1 || k == nz || j == 1 || j == ny) {
          local_max = row(k, j, 1, nx, local_max);
        } else {
          local_max = row(k, j, 1, 1, local_max);
          if (nx > 1) local_max = row(k, j, nx, nx, local_max);
        }
      }
  }
  std::swap(u_, un_);
  double global_max = 0.0;
  {
    auto t = timers_.scope("reduce");
    locus::allreduce_yielding(&local_max, &global_max, 1, MPI_DOUBLE, MPI_MAX, comm_);
  }
  return global_max;
}

namespace {
template <class F>
double reduce_interior(const Field3D& u, const locus::CartDecomp& dc, double init, F f) {
  const auto& n = dc.local();
  double v = init;
  for (long k = 1; k <= n[2]; ++k)
    for (long j = 1; j <= n[1]; ++j)
      for (long i = 1; i <= n[0]; ++i) v = f(v, u(k, j, i), i, j, k);
  return v;
}
}  // namespace

double Solver::global_min() const {
  double v = reduce_interior(u_.view(), decomp_, std::numeric_limits<double>::infinity(),
                             [](double m, double x, long, long, long) { return std::min(m, x); });
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MIN, comm_);
  return v;
}

bool Solver::all_finite() const {
  double bad = reduce_interior(u_.view(), decomp_, 0.0,
                               [](double m, double x, long, long, long) { return std::isfinite(x) ? m : m + 1; });
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_DOUBLE, MPI_SUM, comm_);
  return bad == 0;
}

double Solver::global_max() const {
  double v = reduce_interior(u_.view(), decomp_, -std::numeric_limits<double>::infinity(),
                             [](double m, double x, long, long, long) { return std::max(m, x); });
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm_);
  return v;
}

double Solver::centre_value() const {
  const auto& n = decomp_.local();
  const auto& o = decomp_.offset();
  double v = -std::numeric_limits<double>::infinity();
  std::array<long, 3> c{};
  bool mine = true;
  for (int d = 0; d < 3; ++d) {
    c[d] = p_.n[d] / 2 - o[d] + 1;  // local index with ghosts
    mine = mine && c[d] >= 1 && c[d] <= n[d];
  }
  if (mine) v = u_.view()(c[2], c[1], c[0]);
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm_);
  return v;
}

double Solver::sine_relative_error(double amplitude) const {
  const auto& o = decomp_.offset();
  double err = reduce_interior(u_.view(), decomp_, 0.0, [&](double m, double x, long i, long j, long k) {
    double expect = amplitude * initial_value(o[0] + i - 1, o[1] + j - 1, o[2] + k - 1);
    return std::max(m, std::fabs(x - expect));
  });
  MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, comm_);
  // The largest |u0| on the grid: the product of the largest sine per axis.
  double peak = 1.0;
  for (int d = 0; d < 3; ++d) {
    double best = 0.0;
    for (long g = 0; g < p_.n[d]; ++g) best = std::max(best, std::sin(M_PI * double(g + 1) * p_.h(d)));
    peak *= best;
  }
  return err / (std::fabs(amplitude) * peak);
}

}  // namespace heat3d
