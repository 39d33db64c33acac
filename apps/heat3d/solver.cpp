#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HEAT3D_AVX2 1
#endif

#include "heat3d.hpp"
#include "locus/error.hpp"
#include "locus/kokkos.hpp"
#include "locus/wait.hpp"

namespace heat3d {

using locus::Field3D;
using locus::HostField3D;

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
      un_(team, decomp_) {
  halo_->prepare(u_);  // (plans built here, not in the first timed step)
  halo_->prepare(un_);
}

double Solver::initial_value(long gi, long gj, long gk) const {
  if (p_.init == Init::Uniform) return p_.t_initial;
  const double pi = M_PI;
  return std::sin(pi * double(gi + 1) * p_.h(0)) * std::sin(pi * double(gj + 1) * p_.h(1)) *
         std::sin(pi * double(gk + 1) * p_.h(2));
}

void Solver::initialize() {
  // Every cell first: the ghost layers keep the boundary value for good.
  // The initial condition is evaluated on the host (a host view of the
  // field: the field itself when the host can address its space).
  Kokkos::deep_copy(un_.view(), p_.t_boundary);
  const auto& n = decomp_.local();
  const auto& o = decomp_.offset();
  locus::host_fill(u_, [&](const auto& u) {
    Kokkos::deep_copy(u, p_.t_boundary);
    for (long k = 1; k <= n[2]; ++k)
      for (long j = 1; j <= n[1]; ++j)
        for (long i = 1; i <= n[0]; ++i) u(k, j, i) = initial_value(o[0] + i - 1, o[1] + j - 1, o[2] + k - 1);
  });
}

void Solver::load_interior(const HostField3D& f) {
  const auto& n = decomp_.local();
  locus::host_fill(u_, [&](const auto& u) {  // the ghosts keep their values
    Kokkos::deep_copy(Kokkos::subview(u, std::make_pair(1L, n[2] + 1), std::make_pair(1L, n[1] + 1),
                                      std::make_pair(1L, n[0] + 1)),
                      Kokkos::subview(f, std::make_pair(1L, n[2] + 1), std::make_pair(1L, n[1] + 1),
                                      std::make_pair(1L, n[0] + 1)));
  });
}

namespace {

// The 7-point update of cells i0..i1 of one row into o; returns the
// largest of m and |T_new - T_old| over them. Every cell is the same
// expression, term for term, as in reference_step (no contraction into
// fused multiply-adds: ISO C++ leaves it off, and no clone enables FMA),
// so the fields are bitwise equal. The maximum is kept per vector lane and
// folded at the end: max is exact and order-independent, so it equals the
// reference's running maximum (|d| by clearing the sign bit, so -0.0 never
// appears).
//
// SSE2 (every x86-64): two cells per register, four per iteration. The
// west and east neighbours are not loaded: they are shuffled out of the
// registers that hold the row's cells, so an iteration loads 2 row vectors
// and 8 of the other four rows (10 loads, not 14 as with unaligned
// west/east loads; on cores with two 128-bit load ports such as this
// machine's, loads bound the in-cache update). Only the plane above (t)
// comes from memory in a sweep, the other rows being re-read from cache:
// it is prefetched kPrefetch bytes ahead, which the hardware prefetcher
// alone does not sustain (measured +10-20 % out of cache). Where the CPU
// has AVX2 the solver runs stencil_row_avx2 instead; this is the fallback.
// Reads reach c[i0 - 2] and c[i1 + 2]: ghost cells, or for i0 = 1 and
// i1 = nx the last cell of the row before and the first of the row after,
// all inside the field.
inline double scalar_cells(const double* __restrict c, const double* __restrict s, const double* __restrict n,
                           const double* __restrict b, const double* __restrict t, double* __restrict o,
                           long i0, long i1, const StencilCoefficients& k, double m) {
  for (long i = i0; i <= i1; ++i) {
    const double cc = c[i];
    const double v =
        (k.c0 * cc + k.cx * (c[i - 1] + c[i + 1])) + (k.cy * (s[i] + n[i]) + k.cz * (b[i] + t[i]));
    o[i] = v;
    const double d = std::fabs(v - cc);
    m = d > m ? d : m;
  }
  return m;
}

#if defined(__SSE2__)
constexpr long kPrefetch = 4096 / sizeof(double);

inline __m128d cell_pair(__m128d w, __m128d cc, __m128d e, const double* s, const double* n, const double* b,
                         const double* t, const StencilCoefficients& k) {
  const __m128d x =
      _mm_add_pd(_mm_mul_pd(_mm_set1_pd(k.c0), cc), _mm_mul_pd(_mm_set1_pd(k.cx), _mm_add_pd(w, e)));
  const __m128d y = _mm_add_pd(_mm_mul_pd(_mm_set1_pd(k.cy), _mm_add_pd(_mm_loadu_pd(s), _mm_loadu_pd(n))),
                               _mm_mul_pd(_mm_set1_pd(k.cz), _mm_add_pd(_mm_loadu_pd(b), _mm_loadu_pd(t))));
  return _mm_add_pd(x, y);
}

#if defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
double
stencil_row(const double* __restrict c, const double* __restrict s, const double* __restrict n,
            const double* __restrict b, const double* __restrict t, double* __restrict o, long i0, long i1,
            StencilCoefficients k, double m) {
  const __m128d mask = _mm_castsi128_pd(_mm_set1_epi64x(0x7fffffffffffffffLL));
  long i = i0;
  if (i1 - i0 >= 3) {
    __m128d m0 = _mm_set1_pd(m), m1 = m0;
    __m128d prev = _mm_loadu_pd(c + i - 2), cur = _mm_loadu_pd(c + i);
    for (; i + 3 <= i1; i += 4) {
      __builtin_prefetch(t + i + kPrefetch);
      const __m128d next = _mm_loadu_pd(c + i + 2), after = _mm_loadu_pd(c + i + 4);
      const __m128d mid = _mm_shuffle_pd(cur, next, 1);  // c[i+1], c[i+2]
      const __m128d a0 = cell_pair(_mm_shuffle_pd(prev, cur, 1), cur, mid, s + i, n + i, b + i, t + i, k);
      const __m128d a1 =
          cell_pair(mid, next, _mm_shuffle_pd(next, after, 1), s + i + 2, n + i + 2, b + i + 2, t + i + 2, k);
      _mm_storeu_pd(o + i, a0);
      _mm_storeu_pd(o + i + 2, a1);
      m0 = _mm_max_pd(m0, _mm_and_pd(_mm_sub_pd(a0, cur), mask));
      m1 = _mm_max_pd(m1, _mm_and_pd(_mm_sub_pd(a1, next), mask));
      prev = next;
      cur = after;
    }
    m0 = _mm_max_pd(m0, m1);
    const double lo = _mm_cvtsd_f64(m0), hi = _mm_cvtsd_f64(_mm_unpackhi_pd(m0, m0));
    m = lo > m ? lo : m;
    m = hi > m ? hi : m;
  }
  return scalar_cells(c, s, n, b, t, o, i, i1, k, m);
}
#else
double stencil_row(const double* __restrict c, const double* __restrict s, const double* __restrict n,
                   const double* __restrict b, const double* __restrict t, double* __restrict o, long i0,
                   long i1, StencilCoefficients k, double m) {
  return scalar_cells(c, s, n, b, t, o, i0, i1, k, m);
}
#endif

#if HEAT3D_AVX2
// AVX2: four cells per register, eight (one cache line of o) per
// iteration, the same operations in the same order as scalar_cells (no
// FMA), so every kernel gives the same bits. With kStream the row's whole
// lines of o are written with streaming stores (vmovntpd) and no line of
// un is read for ownership: 16 bytes of memory traffic per cell instead of
// 24; the cells before the first whole line and after the last take plain
// stores. The caller fences once after the sweep (heat3d::store_fence), not
// per row (a fence per row measured 0.68 against 0.87 of triad). Reads
// reach c[i0 - 1] and c[i1 + 1].
__attribute__((target("avx2"), always_inline)) inline __m256d cell_quad(const double* c, const double* s,
                                                                        const double* n, const double* b,
                                                                        const double* t,
                                                                        const StencilCoefficients& k) {
  const __m256d x = _mm256_add_pd(
      _mm256_mul_pd(_mm256_set1_pd(k.c0), _mm256_loadu_pd(c)),
      _mm256_mul_pd(_mm256_set1_pd(k.cx), _mm256_add_pd(_mm256_loadu_pd(c - 1), _mm256_loadu_pd(c + 1))));
  const __m256d y = _mm256_add_pd(
      _mm256_mul_pd(_mm256_set1_pd(k.cy), _mm256_add_pd(_mm256_loadu_pd(s), _mm256_loadu_pd(n))),
      _mm256_mul_pd(_mm256_set1_pd(k.cz), _mm256_add_pd(_mm256_loadu_pd(b), _mm256_loadu_pd(t))));
  return _mm256_add_pd(x, y);
}

template <bool kStream>
__attribute__((target("avx2"))) double stencil_row_avx2(const double* __restrict c,
                                                        const double* __restrict s,
                                                        const double* __restrict n,
                                                        const double* __restrict b,
                                                        const double* __restrict t, double* __restrict o,
                                                        long i0, long i1, StencilCoefficients k, double m) {
  long i = i0;
  if (kStream) {  // up to the first whole line of o
    while (i <= i1 && (reinterpret_cast<std::uintptr_t>(o + i) & 63) != 0) ++i;
    m = scalar_cells(c, s, n, b, t, o, i0, std::min(i, i1 + 1) - 1, k, m);
  }
  const __m256d mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  __m256d m0 = _mm256_set1_pd(m), m1 = m0;
  for (; i + 7 <= i1; i += 8) {
    __builtin_prefetch(t + i + kPrefetch);
    const __m256d a0 = cell_quad(c + i, s + i, n + i, b + i, t + i, k);
    const __m256d a1 = cell_quad(c + i + 4, s + i + 4, n + i + 4, b + i + 4, t + i + 4, k);
    if (kStream) {
      _mm256_stream_pd(o + i, a0);
      _mm256_stream_pd(o + i + 4, a1);
    } else {
      _mm256_storeu_pd(o + i, a0);
      _mm256_storeu_pd(o + i + 4, a1);
    }
    m0 = _mm256_max_pd(m0, _mm256_and_pd(_mm256_sub_pd(a0, _mm256_loadu_pd(c + i)), mask));
    m1 = _mm256_max_pd(m1, _mm256_and_pd(_mm256_sub_pd(a1, _mm256_loadu_pd(c + i + 4)), mask));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_max_pd(m0, m1));
  for (double x : lanes) m = x > m ? x : m;
  return scalar_cells(c, s, n, b, t, o, i, i1, k, m);
}
#endif

// One row of the update: the kernel the solver chose (row_kernel).
using RowKernel = double (*)(const double*, const double*, const double*, const double*, const double*,
                             double*, long, long, StencilCoefficients, double);

struct Stencil {
  Field3D u, un;
  StencilCoefficients co;
  long nx, ny, nz;
  RowKernel row;

  KOKKOS_INLINE_FUNCTION double cells(long k, long j, long i0, long i1, double m) const {
    return row(&u(k, j, 0), &u(k, j - 1, 0), &u(k, j + 1, 0), &u(k - 1, j, 0), &u(k + 1, j, 0), &un(k, j, 0),
               i0, i1, co, m);
  }
};

bool streaming_available() {
#if HEAT3D_AVX2
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

// The row kernel: AVX2 (streaming or cached stores) where the CPU has it,
// else the SSE2 one (cached).
RowKernel row_kernel(bool streaming) {
#if HEAT3D_AVX2
  if (streaming_available()) return streaming ? stencil_row_avx2<true> : stencil_row_avx2<false>;
#endif
  (void)streaming;
  return stencil_row;
}

// After a sweep with streaming stores: they are weakly ordered, so this
// thread's are fenced before the field is read elsewhere (the halo, other
// ranks through shared memory). The backend's own end of a parallel region
// (a locked instruction on every thread) drains the other threads'.
void store_fence() {
#if HEAT3D_AVX2
  _mm_sfence();
#endif
}

// One sweep of STEP over ROWS row indices: the local max |T_new - T_old|;
// *SECONDS its time, the fence after streaming stores included.
template <class Step>
double sweep(const char* name, long rows, const Step& step, double* seconds = nullptr) {
  double m = 0.0;
  const double t0 = MPI_Wtime();
  Kokkos::parallel_reduce(name, locus::Range<long>(0, rows), step, Kokkos::Max<double>(m));
  if (step.st.row != row_kernel(false)) store_fence();
  if (seconds) *seconds = MPI_Wtime() - t0;
  return m;
}

// Every interior cell (the non-split path): one row (k, j) per index,
// in blocks of kRows rows of y: all planes k of one block, then the next
// block. The rows a block's sweep reads again (kRows rows of three
// planes: 192 KiB at nx = 256) stay in L2 while it moves up through k
// (256^3: 0.742-0.779 of triad against 0.713-0.752 plane after plane,
// alternated runs). Rows past ny (the last block) do nothing.
struct FullStep {
  static constexpr long kRows = 32;
  Stencil st;
  KOKKOS_INLINE_FUNCTION void operator()(long r, double& m) const {
    const long per = st.nz * kRows, b = r / per, q = r % per;
    const long k = q / kRows + 1, j = b * kRows + q % kRows + 1;
    if (j <= st.ny) m = st.cells(k, j, 1, st.nx, m);
  }
};

// The cells that read no ghost (split path, while the faces travel):
// rows k in 2..nz-1, j in 2..ny-1, cells 2..nx-1, y in blocks of kRows
// rows as FullStep.
struct InnerStep {
  static constexpr long kRows = FullStep::kRows;
  Stencil st;
  KOKKOS_INLINE_FUNCTION void operator()(long r, double& m) const {
    const long per = (st.nz - 2) * kRows, b = r / per, q = r % per;
    const long k = q / kRows + 2, j = b * kRows + q % kRows + 2;
    if (j <= st.ny - 1) m = st.cells(k, j, 2, st.nx - 1, m);
  }
};

// The boundary shell (split path, after the faces arrived): whole rows on
// the first and last planes and rows, the two end cells elsewhere.
struct ShellStep {
  Stencil st;
  KOKKOS_INLINE_FUNCTION void operator()(long r, double& m) const {
    const long k = r / st.ny + 1, j = r % st.ny + 1;
    if (k == 1 || k == st.nz || j == 1 || j == st.ny) {
      m = st.cells(k, j, 1, st.nx, m);
    } else {
      m = st.cells(k, j, 1, 1, m);
      if (st.nx > 1) m = st.cells(k, j, st.nx, st.nx, m);
    }
  }
};

}  // namespace

StencilCoefficients stencil_coefficients(double rx, double ry, double rz, double a) {
  const double cx = a * rx, cy = a * ry, cz = a * rz;
  return {1.0 - 2.0 * (cx + cy + cz), cx, cy, cz};
}

double reference_step(const HostField3D& u, const HostField3D& un, const std::array<long, 3>& n, double rx,
                      double ry, double rz, double a) {
  const StencilCoefficients k = stencil_coefficients(rx, ry, rz, a);
  double m = 0.0;
  for (long z = 1; z <= n[2]; ++z)
    for (long j = 1; j <= n[1]; ++j)
      for (long i = 1; i <= n[0]; ++i) {
        const double c = u(z, j, i);
        const double v =
            (k.c0 * c + k.cx * (u(z, j, i - 1) + u(z, j, i + 1))) +
            (k.cy * (u(z, j - 1, i) + u(z, j + 1, i)) + k.cz * (u(z - 1, j, i) + u(z + 1, j, i)));
        un(z, j, i) = v;
        m = std::max(m, std::fabs(v - c));
      }
  return m;
}

bool Solver::streaming_now() const {
  if (!streaming_available() || stores_ == Stores::cached) return false;
  if (stores_ == Stores::streaming) return true;
  // automatic: cached on the first (checked) step, then alternating
  if (!checked_) return false;
  return tuned_steps_ < kTuneSteps ? tuned_steps_ / 2 % 2 == 1 : streaming_;
}

void Solver::tune(bool streaming, double seconds) {
  if (stores_ != Stores::automatic || !streaming_available() || !checked_ || tuned_steps_ >= kTuneSteps)
    return;
  // the second step of each pair: the first one's stores decide what of
  // both fields is still in cache, as in a run of that kind
  if (tuned_steps_ % 2 == 1) tune_seconds_[streaming ? 1 : 0] += seconds;
  if (++tuned_steps_ == kTuneSteps) streaming_ = tune_seconds_[1] < tune_seconds_[0];
}

std::string Solver::stores_report() const {
  if (!streaming_available()) return "cached (streaming stores need AVX2)";
  if (stores_ != Stores::automatic)
    return std::string(stores_ == Stores::streaming ? "streaming" : "cached") +
           " (heat3d.kernel.streaming_stores: " + (stores_ == Stores::streaming ? "on" : "off") + ")";
  if (tuned_steps_ < kTuneSteps) return "cached (auto: the run ended before both were timed)";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s (auto, this rank: %d steps each timed, cached %.4g s, streaming %.4g s)",
                streaming_ ? "streaming" : "cached", kTuneSteps / 4, tune_seconds_[0], tune_seconds_[1]);
  return buf;
}

double Solver::step() {
  const auto& n = decomp_.local();
  const long nx = n[0], ny = n[1], nz = n[2];
  const double rx = 1.0 / (p_.h(0) * p_.h(0)), ry = 1.0 / (p_.h(1) * p_.h(1)), rz = 1.0 / (p_.h(2) * p_.h(2));
  const double a = p_.dt * p_.k0;
  const bool streaming = streaming_now();
  const StencilCoefficients co = stencil_coefficients(rx, ry, rz, a);
  const Stencil st{u_.view(), un_.view(), co, nx, ny, nz, row_kernel(streaming)};
  const long full_rows = (ny + FullStep::kRows - 1) / FullStep::kRows * FullStep::kRows * nz;
  // The first step also runs the reference kernel (untimed, once the ghosts
  // are in) into a scratch field; the optimized result must equal it bit
  // for bit, and so must the streaming-store kernel's when it may run.
  Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace> ref;
  double ref_max = 0.0;
  auto reference = [&] {
    if (checked_) return;
    ref = Kokkos::View<double***, Kokkos::LayoutRight, Kokkos::HostSpace>(
        Kokkos::view_alloc("heat3d::reference", Kokkos::WithoutInitializing), nz + 2, ny + 2, nx + 2);
    locus::Region region("heat3d::reference");
    ref_max = reference_step(locus::host_copy(u_), ref, n, rx, ry, rz, a);
  };
  double local_max = 0.0, kernel_seconds = 0.0;
  if (!halo_->split_phase()) {
    {
      auto t = timers_.scope("halo");
      halo_->exchange(u_);
    }
    reference();
    auto t = timers_.scope("compute");
    local_max = sweep("heat3d::step", full_rows, FullStep{st}, &kernel_seconds);
  } else {
    // The paper's overlap: start the face transfers, update the cells that
    // read no ghost, complete the transfers, update the boundary shell.
    // Every cell is computed exactly as above, so the field is bitwise the
    // same.
    {
      auto t = timers_.scope("halo");
      halo_->begin(u_);
    }
    double inner_max = 0.0, shell_max = 0.0;
    if (nz > 2 && ny > 2 && nx > 2) {
      auto t = timers_.scope("compute");
      const long blocks = (ny - 2 + InnerStep::kRows - 1) / InnerStep::kRows;
      inner_max =
          sweep("heat3d::step_inner", blocks * InnerStep::kRows * (nz - 2), InnerStep{st}, &kernel_seconds);
    }
    {
      auto t = timers_.scope("halo");
      halo_->end(u_);
    }
    reference();
    {
      auto t = timers_.scope("compute");
      Stencil shell = st;  // a few cells per row: cached stores
      shell.row = row_kernel(false);
      shell_max = sweep("heat3d::step_shell", nz * ny, ShellStep{shell});
    }
    local_max = std::max(inner_max, shell_max);
  }
  if (!checked_) {
    check_against_reference(ref, ref_max, local_max, "");
    if (streaming_available() && stores_ != Stores::cached) {
      Stencil again = st;  // the streaming kernel over every cell again, into the same field
      again.row = row_kernel(true);
      const double again_max = sweep("heat3d::step_streaming_check", full_rows, FullStep{again});
      check_against_reference(ref, ref_max, again_max, " with streaming stores");
    }
    checked_ = true;
  } else {
    tune(streaming, kernel_seconds);
  }
  std::swap(u_, un_);
  double global_max = 0.0;
  {
    auto t = timers_.scope("reduce");
    locus::allreduce_yielding(&local_max, &global_max, 1, MPI_DOUBLE, MPI_MAX, comm_);
  }
  return global_max;
}

void Solver::check_against_reference(const HostField3D& ref, double ref_max, double opt_max,
                                     const char* which) {
  const auto& n = decomp_.local();
  const auto un = locus::host_copy(un_);
  long differ = 0;
  for (long k = 1; k <= n[2]; ++k)
    for (long j = 1; j <= n[1]; ++j)
      differ += std::memcmp(&un(k, j, 1), &ref(k, j, 1), sizeof(double) * std::size_t(n[0])) != 0;
  const bool same_max = std::memcmp(&ref_max, &opt_max, sizeof(double)) == 0;
  if (differ || !same_max)
    throw locus::Error("heat3d: the optimized stencil kernel" + std::string(which) +
                       " differs from the reference kernel on the first step (" + std::to_string(differ) +
                       " rows differ; residual " + std::to_string(opt_max) + " vs " +
                       std::to_string(ref_max) + ")");
}

namespace {
template <class F>
double reduce_interior(const HostField3D& u, const locus::CartDecomp& dc, double init, F f) {
  const auto& n = dc.local();
  double v = init;
  for (long k = 1; k <= n[2]; ++k)
    for (long j = 1; j <= n[1]; ++j)
      for (long i = 1; i <= n[0]; ++i) v = f(v, u(k, j, i), i, j, k);
  return v;
}
}  // namespace

double Solver::global_min() const {
  double v = reduce_interior(locus::host_copy(u_), decomp_, std::numeric_limits<double>::infinity(),
                             [](double m, double x, long, long, long) { return std::min(m, x); });
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MIN, comm_);
  return v;
}

bool Solver::all_finite() const {
  double bad = reduce_interior(locus::host_copy(u_), decomp_, 0.0, [](double m, double x, long, long, long) {
    return std::isfinite(x) ? m : m + 1;
  });
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_DOUBLE, MPI_SUM, comm_);
  return bad == 0;
}

double Solver::global_max() const {
  double v = reduce_interior(locus::host_copy(u_), decomp_, -std::numeric_limits<double>::infinity(),
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
  if (mine) Kokkos::deep_copy(v, Kokkos::subview(u_.view(), c[2], c[1], c[0]));
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm_);
  return v;
}

double Solver::sine_relative_error(double amplitude) const {
  const auto& o = decomp_.offset();
  double err =
      reduce_interior(locus::host_copy(u_), decomp_, 0.0, [&](double m, double x, long i, long j, long k) {
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
