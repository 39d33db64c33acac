#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__CUDA_ARCH__)
#include <immintrin.h>
#define HEAT3D_AVX2 1  // the host-only streaming-store refinement can be compiled
#else
#define HEAT3D_AVX2 0
#endif

#include "heat3d.hpp"
#include "locus/counts.hpp"
#include "locus/cpu.hpp"
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
// fused multiply-adds: ISO C++ leaves it off, and the CUDA build turns it
// off), so the fields are bitwise equal. The maximum is exact and
// order-independent, so the vectorised reduction equals the reference's
// running maximum.
//
// row_span is the loop of every execution space: plain C++ over the
// cells, vectorised by the compiler (LOCUS_SIMD_MAX), no intrinsic, no
// function pointer. Reads reach c[i0 - 1] and c[i1 + 1]: ghost cells, all
// inside the field.
KOKKOS_FORCEINLINE_FUNCTION double row_span(const double* __restrict c, const double* __restrict s,
                                            const double* __restrict n, const double* __restrict b,
                                            const double* __restrict t, double* __restrict o, long i0,
                                            long i1, const StencilCoefficients& k, double m) {
  LOCUS_SIMD_MAX(m)
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

// row_cells, the row kernel: row_span over chunks of kChunk cells. On host
// compilers (LOCUS_PREFETCH; nothing in device code) each chunk first
// prefetches, kAhead cells ahead, the lines of the two streams a blocked
// sweep takes from memory: the plane above (t, read) and the output row
// (o, for writing: its read for ownership starts early). The hardware
// prefetcher alone keeps too few lines in flight for one core. Intel Xeon
// (2 MiB L2), 1 rank, of the triad roofline: the AVX2 compile 0.72 ->
// 0.82-0.87 at 256^3 and 0.70 -> 0.82-0.90 at 400^3 (the write-allocate
// ceiling is 0.889); the SSE2 baseline 0.65 -> 0.74-0.77 at 256^3. The
// plane above alone gave 0.77-0.81 at 400^3; 2-3 KiB ahead as 4 KiB.
constexpr long kChunk = 64;                    // cells per chunk: 8 cache lines
[[maybe_unused]] constexpr long kAhead = 512;  // cells ahead: 4 KiB (device code does not prefetch)

KOKKOS_FORCEINLINE_FUNCTION double row_cells(const double* __restrict c, const double* __restrict s,
                                             const double* __restrict n, const double* __restrict b,
                                             const double* __restrict t, double* __restrict o, long i0,
                                             long i1, const StencilCoefficients& k, double m) {
  for (long i = i0; i <= i1; i += kChunk) {
    const long e = i + kChunk - 1 < i1 ? i + kChunk - 1 : i1;
    for (long q = i; q <= e; q += 8) {  // (a prefetch never faults, past the field's end too)
      LOCUS_PREFETCH(t + q + kAhead, 0);
      LOCUS_PREFETCH(o + q + kAhead, 1);
    }
    m = row_span(c, s, n, b, t, o, i, e, k, m);
  }
  return m;
}

struct PortableRow {
  KOKKOS_INLINE_FUNCTION static double cells(const double* c, const double* s, const double* n,
                                             const double* b, const double* t, double* o, long i0, long i1,
                                             const StencilCoefficients& k, double m) {
    return row_cells(c, s, n, b, t, o, i0, i1, k, m);
  }
};

#if HEAT3D_AVX2
// The same source compiled for AVX2 (a host specialisation: the build's
// baseline ISA is SSE2, two cells per vector, and the sweep is then bound
// by instructions rather than memory). Chosen at run time where the CPU
// has AVX2 (locus/cpu.hpp: LOCUS_CPU_HIDE=avx2 hides it); a direct call
// per row, no function pointer.
struct Avx2Row {
  __attribute__((target("avx2"))) static double cells(const double* __restrict c, const double* __restrict s,
                                                      const double* __restrict n, const double* __restrict b,
                                                      const double* __restrict t, double* __restrict o,
                                                      long i0, long i1, const StencilCoefficients& k,
                                                      double m) {
    return row_cells(c, s, n, b, t, o, i0, i1, k, m);
  }
};

// The host-only refinement: AVX2 with streaming stores. The row's whole
// lines of o are written with vmovntpd and no line of un is read for
// ownership: 16 bytes of memory traffic per cell instead of 24; the cells
// before the first whole line and after the last take the portable
// kernel. The same operations in the same order as PortableRow (no FMA),
// so it gives the same bits. Chosen at run time only where the CPU has
// AVX2 (locus/cpu.hpp: not hidden) and the kernels run on the host. The
// caller fences once after the sweep (store_fence), not per row (a fence
// per row measured 0.68 against 0.87 of triad). The plane above (t) is
// prefetched kPrefetch bytes ahead (+10-20 % out of cache on the Intel
// host).
constexpr long kPrefetch = 4096 / sizeof(double);

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

struct StreamingRow {
  __attribute__((target("avx2"))) static double cells(const double* __restrict c, const double* __restrict s,
                                                      const double* __restrict n, const double* __restrict b,
                                                      const double* __restrict t, double* __restrict o,
                                                      long i0, long i1, const StencilCoefficients& k,
                                                      double m) {
    long i = i0;
    while (i <= i1 && (reinterpret_cast<std::uintptr_t>(o + i) & 63) != 0) ++i;  // to the first whole line
    m = row_span(c, s, n, b, t, o, i0, std::min(i, i1 + 1) - 1, k, m);
    const __m256d mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    __m256d m0 = _mm256_set1_pd(m), m1 = m0;
    for (; i + 7 <= i1; i += 8) {
      __builtin_prefetch(t + i + kPrefetch);
      const __m256d a0 = cell_quad(c + i, s + i, n + i, b + i, t + i, k);
      const __m256d a1 = cell_quad(c + i + 4, s + i + 4, n + i + 4, b + i + 4, t + i + 4, k);
      _mm256_stream_pd(o + i, a0);
      _mm256_stream_pd(o + i + 4, a1);
      m0 = _mm256_max_pd(m0, _mm256_and_pd(_mm256_sub_pd(a0, _mm256_loadu_pd(c + i)), mask));
      m1 = _mm256_max_pd(m1, _mm256_and_pd(_mm256_sub_pd(a1, _mm256_loadu_pd(c + i + 4)), mask));
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_max_pd(m0, m1));
    for (double x : lanes) m = x > m ? x : m;
    return row_span(c, s, n, b, t, o, i, i1, k, m);
  }
};
#endif

// Whether the host refinement may run: AVX2 streaming stores on this CPU
// (not hidden by LOCUS_CPU_HIDE) and kernels on the host.
bool streaming_available() {
#if HEAT3D_AVX2
  return locus::kHostExec && locus::cpu::features().streaming_stores;
#else
  return false;
#endif
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

// The fields and coefficients of one sweep; Row is the row kernel
// (PortableRow, or the host-only StreamingRow).
template <class Row>
struct Stencil {
  Field3D u, un;
  StencilCoefficients co;
  long nx, ny, nz;
  long block;  // rows of y per cache block (locus::cpu::stencil_block_rows)

  KOKKOS_INLINE_FUNCTION double cells(long k, long j, long i0, long i1, double m) const {
    return Row::cells(&u(k, j, 0), &u(k, j - 1, 0), &u(k, j + 1, 0), &u(k - 1, j, 0), &u(k + 1, j, 0),
                      &un(k, j, 0), i0, i1, co, m);
  }
};

// Every interior cell (the non-split path): one row (k, j) per index, in
// blocks of st.block rows of y: all planes k of one block, then the next
// block. The rows a block's sweep reads again (three planes of st.block
// rows) stay in L2 while it moves up through k; the block is sized from
// this CPU's L2 (a constant 32, tuned to a 2 MiB L2, measured 0.742-0.779
// of triad at 256^3 against 0.713-0.752 plane after plane). Rows past ny
// (the last block) do nothing.
template <class Row>
struct FullStep {
  Stencil<Row> st;
  KOKKOS_INLINE_FUNCTION void operator()(long r, double& m) const {
    const long per = st.nz * st.block, b = r / per, q = r % per;
    const long k = q / st.block + 1, j = b * st.block + q % st.block + 1;
    if (j <= st.ny) m = st.cells(k, j, 1, st.nx, m);
  }
  long rows() const { return (st.ny + st.block - 1) / st.block * st.block * st.nz; }
};

// The cells that read no ghost (split path, while the faces travel):
// rows k in 2..nz-1, j in 2..ny-1, cells 2..nx-1, blocked as FullStep.
template <class Row>
struct InnerStep {
  Stencil<Row> st;
  KOKKOS_INLINE_FUNCTION void operator()(long r, double& m) const {
    const long per = (st.nz - 2) * st.block, b = r / per, q = r % per;
    const long k = q / st.block + 2, j = b * st.block + q % st.block + 2;
    if (j <= st.ny - 1) m = st.cells(k, j, 2, st.nx - 1, m);
  }
  long rows() const { return (st.ny - 2 + st.block - 1) / st.block * st.block * (st.nz - 2); }
};

// The boundary shell (split path, after the faces arrived): whole rows on
// the first and last planes and rows, the two end cells elsewhere.
struct ShellStep {
  Stencil<PortableRow> st;
  KOKKOS_INLINE_FUNCTION void operator()(long r, double& m) const {
    const long k = r / st.ny + 1, j = r % st.ny + 1;
    if (k == 1 || k == st.nz || j == 1 || j == st.ny) {
      m = st.cells(k, j, 1, st.nx, m);
    } else {
      m = st.cells(k, j, 1, 1, m);
      if (st.nx > 1) m = st.cells(k, j, st.nx, st.nx, m);
    }
  }
  long rows() const { return st.nz * st.ny; }
};

// One sweep of STEP: the local max |T_new - T_old|; *SECONDS its time,
// the fence after streaming stores included.
template <class Step>
double sweep(const char* name, const Step& step, bool streamed, double* seconds = nullptr) {
  double m = 0.0;
  const double t0 = MPI_Wtime();
  Kokkos::parallel_reduce(name, locus::Range<long>(0, step.rows()), step, Kokkos::Max<double>(m));
  if (streamed) store_fence();
  if (seconds) *seconds = MPI_Wtime() - t0;
  return m;
}

// Which compilation of the row kernel a sweep runs.
enum class RowVariant { portable, avx2, streaming };

RowVariant row_variant(bool streaming) {
#if HEAT3D_AVX2
  if (locus::kHostExec && streaming) return RowVariant::streaming;  // only where streaming_available()
  if (locus::host_avx2()) return RowVariant::avx2;
#endif
  (void)streaming;
  return RowVariant::portable;
}

const char* row_variant_name(RowVariant v) {
  switch (v) {
    case RowVariant::avx2:
      return "portable compiled for AVX2 (host specialisation, chosen at run time)";
    case RowVariant::streaming:
      return "AVX2 streaming stores (host refinement, chosen at run time)";
    case RowVariant::portable:
      break;
  }
  return "portable (the one source, the build's baseline ISA)";
}

// A sweep of Step<Row> with the row kernel row_variant chose.
template <template <class> class Step>
double sweep_rows(const char* name, const Stencil<PortableRow>& st, bool streaming,
                  double* seconds = nullptr) {
#if HEAT3D_AVX2
  if constexpr (locus::kHostExec) {
    switch (row_variant(streaming)) {
      case RowVariant::streaming:
        return sweep(name, Step<StreamingRow>{{st.u, st.un, st.co, st.nx, st.ny, st.nz, st.block}}, true,
                     seconds);
      case RowVariant::avx2:
        return sweep(name, Step<Avx2Row>{{st.u, st.un, st.co, st.nx, st.ny, st.nz, st.block}}, false,
                     seconds);
      case RowVariant::portable:
        break;
    }
  }
#endif
  return sweep(name, Step<PortableRow>{st}, false, seconds);
}

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
  if (!streaming_available())
    return locus::cpu::features().hidden.find("stream") != std::string::npos
               ? "cached (streaming stores hidden by LOCUS_CPU_HIDE)"
               : "cached (streaming stores need AVX2 and a host execution space)";
  if (stores_ != Stores::automatic)
    return std::string(stores_ == Stores::streaming ? "streaming" : "cached") +
           " (heat3d.kernel.streaming_stores: " + (stores_ == Stores::streaming ? "on" : "off") + ")";
  if (tuned_steps_ < kTuneSteps) return "cached (auto: the run ended before both were timed)";
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s (auto, this rank: %d steps each timed, cached %.4g s, streaming %.4g s)",
                streaming_ ? "streaming" : "cached", kTuneSteps / 4, tune_seconds_[0], tune_seconds_[1]);
  return buf;
}

namespace {
// The step's counted requirements (counts.hpp), per interior cell, in the
// compute phase. Only the solve's kernel: the first step's reference and
// checking kernels are not counted.
void count_step(long cells) {
  const auto n = static_cast<std::uint64_t>(cells);
  // T' = (c0 T + cx (W + E)) + (cy (S + N) + cz (B + U)): 6 additions and 4
  // multiplications, and the residual's subtraction |T' - T| (the
  // maximum is a comparison, not counted).
  locus::count(locus::Count::flops, 11 * n,
               "heat3d step: 11 per interior cell (6 additions and 4 multiplications of the update, 1 "
               "subtraction of the residual)");
  // T read once and T' written once; the neighbours come from cache (the
  // sweep's cache blocking). Cached stores also read T' for ownership
  // (8 bytes more); the streaming-store kernel does not.
  locus::count(locus::Count::memory_bytes, 16 * n,
               "heat3d step: 16 bytes per interior cell (T read once, T' written once; neighbours from "
               "cache, no read for ownership)");
}
}  // namespace

double Solver::step() {
  const auto& n = decomp_.local();
  const long nx = n[0], ny = n[1], nz = n[2];
  const double rx = 1.0 / (p_.h(0) * p_.h(0)), ry = 1.0 / (p_.h(1) * p_.h(1)), rz = 1.0 / (p_.h(2) * p_.h(2));
  const double a = p_.dt * p_.k0;
  const bool streaming = streaming_now();
  const StencilCoefficients co = stencil_coefficients(rx, ry, rz, a);
  const long block = locus::cpu::stencil_block_rows(std::size_t(nx + 2) * sizeof(double), ny);
  const Stencil<PortableRow> st{u_.view(), un_.view(), co, nx, ny, nz, block};
  block_rows_ = block;
  row_kernel_ = row_variant_name(row_variant(streaming));
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
    local_max = sweep_rows<FullStep>("heat3d::step", st, streaming, &kernel_seconds);
    count_step(nx * ny * nz);
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
      inner_max = sweep_rows<InnerStep>("heat3d::step_inner", st, streaming, &kernel_seconds);
    }
    {
      auto t = timers_.scope("halo");
      halo_->end(u_);
    }
    reference();
    {
      auto t = timers_.scope("compute");
      shell_max = sweep("heat3d::step_shell", ShellStep{st}, false);  // a few cells per row: portable
      count_step(nx * ny * nz);  // (the inner cells and the shell: every cell once)
    }
    local_max = std::max(inner_max, shell_max);
  }
  if (!checked_) {
    check_against_reference(ref, ref_max, local_max, "");
    if (streaming_available() && stores_ != Stores::cached) {
      // the streaming kernel over every cell again, into the same field
      const double again_max = sweep_rows<FullStep>("heat3d::step_streaming_check", st, true);
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
  locus::yielding::allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MIN, comm_);
  return v;
}

bool Solver::all_finite() const {
  double bad = reduce_interior(locus::host_copy(u_), decomp_, 0.0, [](double m, double x, long, long, long) {
    return std::isfinite(x) ? m : m + 1;
  });
  locus::yielding::allreduce(MPI_IN_PLACE, &bad, 1, MPI_DOUBLE, MPI_SUM, comm_);
  return bad == 0;
}

double Solver::global_max() const {
  double v = reduce_interior(locus::host_copy(u_), decomp_, -std::numeric_limits<double>::infinity(),
                             [](double m, double x, long, long, long) { return std::max(m, x); });
  locus::yielding::allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm_);
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
  locus::yielding::allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm_);
  return v;
}

double Solver::sine_relative_error(double amplitude) const {
  const auto& o = decomp_.offset();
  double err =
      reduce_interior(locus::host_copy(u_), decomp_, 0.0, [&](double m, double x, long i, long j, long k) {
        double expect = amplitude * initial_value(o[0] + i - 1, o[1] + j - 1, o[2] + k - 1);
        return std::max(m, std::fabs(x - expect));
      });
  locus::yielding::allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, comm_);
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
