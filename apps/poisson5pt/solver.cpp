// The poisson5pt sweeps. Every point update and every reduction is written
// so that the result does not depend on the decomposition: red-black
// colours follow the global index, each colour's update reads only the
// other colour, and residuals and errors are max norms (exact to reduce).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "locus/console.hpp"
#include "locus/counts.hpp"
#include "locus/cpu.hpp"
#include "locus/error.hpp"
#include "locus/io.hpp"
#include "locus/kokkos.hpp"
#include "locus/wait.hpp"
#include "poisson5pt.hpp"

namespace poisson5pt {

Method parse_method(const std::string& name) {
  if (name == "gauss-seidel") return Method::gauss_seidel;
  if (name == "sor") return Method::sor;
  if (name == "jacobi") return Method::jacobi;
  throw locus::Error("poisson5pt.solver.method: unknown method '" + name + "'");
}

std::string method_name(Method m) {
  switch (m) {
    case Method::gauss_seidel:
      return "gauss-seidel";
    case Method::sor:
      return "sor";
    case Method::jacobi:
      return "jacobi";
  }
  return "";
}

double Problem::f(long i, long j) const {
  switch (setup) {
    case Setup::manufactured:
      return 2.0 * M_PI * M_PI * exact(i, j);
    case Setup::paper:
      return source;
    case Setup::boundary:
      return 0.0;
  }
  return 0.0;
}

double Problem::boundary(long i, long j) const {
  if (setup != Setup::boundary) return 0.0;
  // Corners belong to the x edges; the 5-point stencil never reads them.
  if (i == 0) return edges[0];
  if (i == n + 1) return edges[1];
  if (j == 0) return edges[2];
  return edges[3];
}

double Problem::exact(long i, long j) const {
  return std::sin(M_PI * double(i) * h()) * std::sin(M_PI * double(j) * h());
}

double optimal_omega(double h) {
  return 2.0 / (1.0 + std::sin(M_PI * h));
}

namespace {

constexpr std::array<long, 3> kGhosts{1, 1, 0};
// The solver's vectors (h^2 f, f, the split copy): Views in the apps'
// memory space, as the fields are (locus::GridFieldT).
template <class T>
using Vector = Kokkos::View<T*, locus::MemSpace>;
constexpr int kRed = 0, kBlack = 1;

// `#pragma GCC ivdep` for a host compiler; nothing in device code.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || !defined(__GNUC__)
#define POISSON5PT_IVDEP
#else
#define POISSON5PT_IVDEP _Pragma("GCC ivdep")
#endif

// The colour-split kernels. A row's points of one colour are one contiguous
// vector x (the row's columns of one parity), their left and right
// neighbours the other parity's vector y at k+a and k+a+1 (a = -1 for even
// columns, 0 for odd), their lower and upper neighbours the same parity's
// vectors of the rows below and above at k. Every update is written as in
// the row-major sweep, term for term (no fused multiply-add: the build is
// ISO C++, which leaves contraction off), so the result is bitwise the
// same whatever the vector width. The pointers name disjoint half rows,
// hence __restrict.
// The sweeps are the kernels of every execution space (host and device);
// KOKKOS_FORCEINLINE_FUNCTION is `inline` and always_inline on a host
// compiler, as the host loops need.
template <class T, bool Sor>
KOKKOS_FORCEINLINE_FUNCTION T relaxed(T old, T g, T w) {
  if constexpr (Sor)
    return old + w * (g - old);
  else
    return g;
}

template <class T, bool Sor>
KOKKOS_FORCEINLINE_FUNCTION void split_row_body(T* __restrict x, const T* __restrict y,
                                                const T* __restrict dn, const T* __restrict up,
                                                const T* __restrict b, long k0, long k1, long a, T w) {
  const T quarter = T(0.25);
  for (long k = k0; k < k1; ++k) {
    const T g = quarter * (((y[k + a] + y[k + a + 1]) + (dn[k] + up[k])) + b[k]);
    x[k] = relaxed<T, Sor>(x[k], g, w);
  }
}

// Red row j (x, y; rows j-1 and j+1: xs, xup) and black row j-1 (xs, ys;
// rows j-2 and j: xss, x) in one loop: at each k the red point first (it
// reads the old black point below), then the black point below it (it
// reads that new red point). Both colours' points at k share the column
// parity, hence one a. With ahead > 0, every cache line of the four
// streams that come from memory (x, xup, b, bs) is prefetched `ahead`
// elements early: the hardware prefetcher alone leaves the loads waiting
// (the sweep then costs its compute time plus its memory time). When
// `next` holds the next pass's four streams (at its first point), the
// last `ahead` elements prefetch those instead of lines past the row's
// end, so the next pass does not start cold (6-11 % faster on rows of
// 4096 points than restarting the prefetch each pass).
template <class T, bool Sor>
KOKKOS_FORCEINLINE_FUNCTION void split_pair_body(T* __restrict x, const T* __restrict y, T* __restrict xs,
                                                 const T* __restrict ys, const T* __restrict xss,
                                                 const T* __restrict xup, const T* __restrict b,
                                                 const T* __restrict bs, long k0, long k1, long a, T w,
                                                 long ahead, const T* const* next) {
  const T quarter = T(0.25);
  auto point = [&](long k) {
    const T g = quarter * (((y[k + a] + y[k + a + 1]) + (xs[k] + xup[k])) + b[k]);
    const T red = relaxed<T, Sor>(x[k], g, w);
    x[k] = red;
    const T gs = quarter * (((ys[k + a] + ys[k + a + 1]) + (xss[k] + red)) + bs[k]);
    xs[k] = relaxed<T, Sor>(xs[k], gs, w);
  };
  long k = k0;
  if (ahead > 0) {
    // Blocks of two cache lines per stream (measured best of 1, 2, 4, 8):
    // the prefetches, then the block's points in a loop of fixed length,
    // which vectorises whole.
    constexpr long line = 64 / static_cast<long>(sizeof(T)), block = 2 * line;
    const long tail = next ? (k0 < k1 - ahead ? k1 - ahead : k0) : k1;  // max(k0, k1 - ahead)
    for (; k + block <= tail; k += block) {
      // Prefetches never fault: the ones past the row's end are harmless.
      for (long l = 0; l < block; l += line) {
        LOCUS_PREFETCH(x + k + ahead + l, 1);
        LOCUS_PREFETCH(xup + k + ahead + l, 0);
        LOCUS_PREFETCH(b + k + ahead + l, 0);
        LOCUS_PREFETCH(bs + k + ahead + l, 0);
      }
      for (long m = 0; m < block; ++m) point(k + m);
    }
    if (next) {
      // The last `ahead` elements: each block prefetches the next pass's
      // lines at the same distance from that pass's first point.
      for (; k + block <= k1; k += block) {
        for (long l = k - tail; l < k - tail + block; l += line) {
          LOCUS_PREFETCH(next[0] + l, 1);
          LOCUS_PREFETCH(next[1] + l, 0);
          LOCUS_PREFETCH(next[2] + l, 0);
          LOCUS_PREFETCH(next[3] + l, 0);
        }
        for (long m = 0; m < block; ++m) point(k + m);
      }
    }
  }
  for (; k < k1; ++k) point(k);
}

// The kernels compiled for the build's instruction set (host and device)
// and, on an x86-64 host, for AVX2 (the same body); the solver picks one at
// run time (locus::cpu) and calls it directly (split_row, split_pair
// below), no function pointer. Device code always takes the baseline.
#define POISSON5PT_SPLIT_KERNELS(SUFFIX, ATTR)                                                            \
  template <class T, bool Sor>                                                                            \
  ATTR void split_row_##SUFFIX(T* __restrict x, const T* __restrict y, const T* __restrict dn,            \
                               const T* __restrict up, const T* __restrict b, long k0, long k1, long a,   \
                               T w) {                                                                     \
    split_row_body<T, Sor>(x, y, dn, up, b, k0, k1, a, w);                                                \
  }                                                                                                       \
  template <class T, bool Sor>                                                                            \
  ATTR void split_pair_##SUFFIX(T* __restrict x, const T* __restrict y, T* __restrict xs,                 \
                                const T* __restrict ys, const T* __restrict xss, const T* __restrict xup, \
                                const T* __restrict b, const T* __restrict bs, long k0, long k1, long a,  \
                                T w, long ahead, const T* const* next) {                                  \
    split_pair_body<T, Sor>(x, y, xs, ys, xss, xup, b, bs, k0, k1, a, w, ahead, next);                    \
  }
POISSON5PT_SPLIT_KERNELS(baseline, KOKKOS_FUNCTION)
#if LOCUS_HOST_AVX2
POISSON5PT_SPLIT_KERNELS(avx2, LOCUS_TARGET_AVX2)
#define POISSON5PT_HAVE_AVX2 1
#endif
#undef POISSON5PT_SPLIT_KERNELS

template <class T, bool Sor>
KOKKOS_FUNCTION void split_row(bool avx2, T* x, const T* y, const T* dn, const T* up, const T* b, long k0,
                               long k1, long a, T w) {
#ifdef POISSON5PT_HAVE_AVX2
  if (avx2) return split_row_avx2<T, Sor>(x, y, dn, up, b, k0, k1, a, w);
#endif
  (void)avx2;
  split_row_baseline<T, Sor>(x, y, dn, up, b, k0, k1, a, w);
}

template <class T, bool Sor>
KOKKOS_FUNCTION void split_pair(bool avx2, T* x, const T* y, T* xs, const T* ys, const T* xss, const T* xup,
                                const T* b, const T* bs, long k0, long k1, long a, T w, long ahead,
                                const T* const* next) {
#ifdef POISSON5PT_HAVE_AVX2
  if (avx2) return split_pair_avx2<T, Sor>(x, y, xs, ys, xss, xup, b, bs, k0, k1, a, w, ahead, next);
#endif
  (void)avx2;
  split_pair_baseline<T, Sor>(x, y, xs, ys, xss, xup, b, bs, k0, k1, a, w, ahead, next);
}

// The counted requirements of the kernels (counts.hpp), per interior point
// of this rank, in the phase their timer gives. Memory: each point's own
// values read (and written) once, neighbours from cache; `esize` is the
// solver's element (8 bytes, 4 in single precision). Only the solve's
// kernels: the first iteration's reference kernels are not counted.
void count_sweep(long points, std::size_t esize, bool sor) {
  const auto n = static_cast<std::uint64_t>(points);
  if (sor)
    // g = 1/4 ((W + E) + (S + N) + h^2 f), then u + w (g - u)
    locus::count(locus::Count::flops, 8 * n,
                 "poisson5pt SOR sweep: 8 per point (4 additions and 1 multiplication of the Gauss-Seidel "
                 "value, 1 subtraction, 1 multiplication and 1 addition of the over-relaxation)");
  else
    // g = 1/4 ((W + E) + (S + N) + h^2 f)
    locus::count(locus::Count::flops, 5 * n,
                 "poisson5pt Gauss-Seidel and Jacobi sweeps: 5 per point (4 additions, 1 multiplication)");
  locus::count(
      locus::Count::memory_bytes, 3 * esize * n,
      "poisson5pt sweeps: 3 elements per point (u read, u written, h^2 f read; elements of 8 bytes, 4 "
      "in single precision)");
}

void count_residual(long points, std::size_t esize) {
  const auto n = static_cast<std::uint64_t>(points);
  // f + (W + E + S + N - 4 u) / h^2 (as a multiplication by 1/h^2); the
  // maximum of |.| is not counted
  locus::count(locus::Count::flops, 7 * n,
               "poisson5pt residual: 7 per point (4 additions and subtractions and 2 multiplications of the "
               "Laplacian, 1 addition of f)");
  locus::count(locus::Count::memory_bytes, (esize + 8) * n,
               "poisson5pt residual: an element and a double per point (u, f read)");
}

// The split copy's points of one colour in row j, columns i0..i1: their
// half (part 0: even global column, 1: odd) and k range, and the offset a
// of their left neighbour in the other half.
struct Span {
  long k0, k1, a, part;
};

// (left + right + below + above - 4 u) / h^2 (r = 1 / h^2), in this order
// in both layouts: the same residual history bit for bit.
KOKKOS_INLINE_FUNCTION double laplacian(double left, double right, double below, double above, double u,
                                        double r) {
  return (left + right + below + above - 4.0 * u) * r;
}

// The solver's storage as the sweeps see it: pointers into the memory
// space and the layout, copied by value into every kernel (host or device).
template <class T>
struct Sweeps {
  T* u;          // the row-major field (ghosts at 0 and n+1)
  T* w;          // split layout: the iterate the sweeps update
  const T* rhs;  // h^2 f at cell()
  long nx, ny, sx, ox, oy;
  long hp;     // split layout: half-row pitch
  long rs;     // sweeps' storage: from row j to row j+1 (sx when natural)
  long ahead;  // split layout: prefetch distance in elements (0: none)
  T omega;
  bool split;
  bool avx2;  // the split sweeps' AVX2 compilation (host only; never taken in device code)

  // Point (i, j) of the row-major field.
  KOKKOS_INLINE_FUNCTION std::size_t idx(long i, long j) const {
    return static_cast<std::size_t>(j * sx + i);
  }
  // Point (i, j) in the sweeps' storage (the split copy and h^2 f): row j
  // holds the columns of even global index, then (at hp) the odd ones.
  KOKKOS_INLINE_FUNCTION std::size_t cell(long i, long j) const {
    if (!split) return idx(i, j);
    return static_cast<std::size_t>(j * rs + ((ox + i) & 1) * hp + (i >> 1));
  }

  KOKKOS_INLINE_FUNCTION Span span(long j, long i0, long i1, int colour) const {
    const long part = (oy + j + colour) & 1;
    const long q = part ^ (ox & 1);  // parity of the local column
    const long first = i0 + ((i0 & 1) != q ? 1 : 0), last = i1 - ((i1 & 1) != q ? 1 : 0);
    return {first >> 1, first <= last ? (last >> 1) + 1 : first >> 1, q ? 0L : -1L, part};
  }

  // Relaxes the points of `colour` in row j, columns i0..i1. In place is
  // safe in any order (hence ivdep, which lets the stride-2 loop vectorise):
  // a point of `colour` reads only points of the other colour, which this
  // loop never writes.
  template <bool Sor>
  KOKKOS_INLINE_FUNCTION void relax(long j, long i0, long i1, int colour) const {
    T* r = u + j * sx;
    const T* dn = r - sx;
    const T* up = r + sx;
    const T* b = rhs + j * sx;
    const T quarter = T(0.25), w = omega;
    const long first = i0 + (((ox + i0 + oy + j) & 1) != colour ? 1 : 0);
    POISSON5PT_IVDEP
    for (long i = first; i <= i1; i += 2) {
      const T g = quarter * (((r[i - 1] + r[i + 1]) + (dn[i] + up[i])) + b[i]);
      if constexpr (Sor)
        r[i] = r[i] + w * (g - r[i]);
      else
        r[i] = g;
    }
  }

  template <bool Sor>
  KOKKOS_INLINE_FUNCTION void relax_split(long j, long i0, long i1, int colour) const {
    const Span s = span(j, i0, i1, colour);
    if (s.k0 >= s.k1) return;
    T* row = w + j * rs;
    const long xo = s.part * hp, yo = (1 - s.part) * hp;
    split_row<T, Sor>(avx2, row + xo, row + yo, row - rs + xo, row + rs + xo, rhs + j * rs + xo, s.k0, s.k1,
                      s.a, omega);
  }

  // Red row j and black row j-1 in columns i0..i1 (the same half of both).
  // With `next`, the pass ends by prefetching the streams of the same
  // pass one row up (red row j+1, black row j).
  template <bool Sor>
  KOKKOS_INLINE_FUNCTION void relax_split_rows(long j, long i0, long i1, bool next) const {
    const Span s = span(j, i0, i1, kRed);
    if (s.k0 >= s.k1) return;
    T* row = w + j * rs;
    T* below = row - rs;
    const T* b = rhs + j * rs;
    const long xo = s.part * hp, yo = (1 - s.part) * hp;
    const T* streams[4] = {};
    if (next) {
      const Span n = span(j + 1, i0, i1, kRed);
      const long no = n.part * hp + n.k0;
      streams[0] = row + rs + no;      // red row j+1
      streams[1] = row + 2 * rs + no;  // row j+2 (its red points' up neighbours)
      streams[2] = b + rs + no;        // its right-hand side
      streams[3] = b + no;             // black row j's right-hand side
    }
    split_pair<T, Sor>(avx2, row + xo, row + yo, below + xo, below + yo, below - rs + xo, row + rs + xo,
                       b + xo, b - rs + xo, s.k0, s.k1, s.a, omega, ahead, next ? streams : nullptr);
  }

  template <bool Sor>
  KOKKOS_INLINE_FUNCTION void relax_row(long j, long i0, long i1, int colour) const {
    if (split)
      relax_split<Sor>(j, i0, i1, colour);
    else
      relax<Sor>(j, i0, i1, colour);
  }

  // The largest |residual| of row j (natural or split layout); f at cell().
  KOKKOS_INLINE_FUNCTION double residual_row(long j, const double* f, double r, double m) const {
    if (!split) {
      for (long i = 1; i <= nx; ++i) {
        const std::size_t k = idx(i, j);
        const double v = std::fabs(f[k] + laplacian(u[k - 1], u[k + 1], u[k - sx], u[k + sx], u[k], r));
        m = m < v ? v : m;  // std::max(m, v)
      }
      return m;
    }
    // Split layout: each half row as one contiguous loop.
    for (int colour = kRed; colour <= kBlack; ++colour) {
      const Span s = span(j, 1, nx, colour);
      const std::size_t o = static_cast<std::size_t>(j * rs + s.part * hp);
      const T* x = w + o;
      const T* y = w + j * rs + (1 - s.part) * hp;
      const double* fo = f + o;
      for (long k = s.k0; k < s.k1; ++k) {
        const double v =
            std::fabs(fo[k] + laplacian(y[k + s.a], y[k + s.a + 1], x[k - rs], x[k + rs], x[k], r));
        m = m < v ? v : m;
      }
    }
    return m;
  }
};

// One red-black pass (Solver::red_black) over chunks of rows, its seams
// and its edges, as kernels of every execution space.
template <class T, bool Sor>
struct RedBlack {
  Sweeps<T> sw;
  bool down, upn, left, right;  // neighbours below, above, left, right
  long c0, c1, chunks;

  KOKKOS_INLINE_FUNCTION bool deferred_row(long r) const { return (r == 1 && down) || (r == sw.ny && upn); }
  KOKKOS_INLINE_FUNCTION long first_row(long c) const { return 1 + c * sw.ny / chunks; }

  KOKKOS_INLINE_FUNCTION void pass(long c) const {
    const long ny = sw.ny, nx = sw.nx;
    const long ja = first_row(c), jb = first_row(c + 1);
    for (long j = ja; j < jb; ++j) {
      // black rows ja-1 and ja of a later chunk wait for the end
      const bool black_below = j >= 2 && !deferred_row(j - 1) && (c == 0 || j >= ja + 2);
      if (sw.split && black_below && c0 <= c1) {
        // The red points with no black partner in this pass first.
        if (c0 > 1) sw.template relax_split<Sor>(j, 1, c0 - 1, kRed);
        if (c1 < nx) sw.template relax_split<Sor>(j, c1 + 1, nx, kRed);
        sw.template relax_split_rows<Sor>(j, c0, c1, j + 1 < jb);
        continue;
      }
      sw.template relax_row<Sor>(j, 1, nx, kRed);
      if (black_below) sw.template relax_row<Sor>(j - 1, c0, c1, kBlack);
    }
    if (c == chunks - 1 && !deferred_row(ny)) sw.template relax_row<Sor>(ny, c0, c1, kBlack);
  }

  KOKKOS_INLINE_FUNCTION void seam(long c) const {
    const long ja = first_row(c);
    for (long r = ja - 1; r <= ja; ++r)
      if (r >= 1 && r <= sw.ny && !deferred_row(r) && !(r == sw.ny && c == chunks - 1))
        sw.template relax_row<Sor>(r, c0, c1, kBlack);
  }

  KOKKOS_INLINE_FUNCTION void edge(long j) const {
    if (deferred_row(j)) {
      sw.template relax_row<Sor>(j, 1, sw.nx, kBlack);
      return;
    }
    if (left) sw.template relax_row<Sor>(j, 1, 1, kBlack);
    if (right && !(left && sw.nx == 1)) sw.template relax_row<Sor>(j, sw.nx, sw.nx, kBlack);
  }
};

template <class T>
class Solver final : public SolverBase {
 public:
  Solver(locus::Team& team, const Problem& p, const Options& o, locus::Timers& timers)
      : team_(team),
        comm_(team.comm()),
        p_(p),
        o_(o),
        decomp_(team.comm(), {p.n, p.n, 1}, o.procs, "poisson5pt.procs", 2),
        halo_(locus::make_halo<T>(o.halo, decomp_, team,
                                  locus::HaloOptions{o.direction, o.method != Method::jacobi, kGhosts})),
        timers_(timers),
        a_(team, decomp_, kGhosts) {
    if (o.method == Method::jacobi) b_field_ = std::make_unique<locus::GridFieldT<T>>(team, decomp_, kGhosts);
    u_ = &a_;
    halo_->prepare(a_);  // (plans built here, not in the first timed iteration)
    if (b_field_) halo_->prepare(*b_field_);
    const auto& n = decomp_.local();
    nx_ = n[0];
    ny_ = n[1];
    sx_ = nx_ + 2;
    ox_ = decomp_.offset()[0];
    oy_ = decomp_.offset()[1];
    for (int d = 0; d < 2; ++d)
      for (int s = 0; s < 2; ++s) nb_[d][s] = decomp_.neighbor(d, s ? +1 : -1) != MPI_PROC_NULL;
    int size = 1;
    MPI_Comm_size(comm_, &size);
    exchanges_ = size > 1;
    split_ = sweeps_split(o);
    // Half rows padded to whole 64-byte lines: all half rows share one
    // alignment.
    const long per_line = std::max<long>(1, 64 / static_cast<long>(sizeof(T)));
    hp_ = ((sx_ + 1) / 2 + per_line - 1) / per_line * per_line;
    rs_ = split_ ? 2 * hp_ : sx_;
    ahead_ = o.prefetch_bytes / static_cast<long>(sizeof(T));
    avx2_ = sweep_vector(o) == "avx2";
  }

  void initialize() override {
    const std::size_t cells = static_cast<std::size_t>((ny_ + 2) * rs_);
    // Set up on the host (host views: the data itself on a host build).
    rhs_ = Vector<T>("poisson5pt::rhs", cells);  // zeroed
    f_ = Vector<double>("poisson5pt::f", cells);
    const double h2 = p_.h() * p_.h();
    for (locus::GridFieldT<T>* g : {&a_, b_field_.get()}) {
      if (!g) continue;
      locus::host_fill(*g, [&](const auto& v) {
        T* u = v.data();
        for (long j = 0; j <= ny_ + 1; ++j)
          for (long i = 0; i <= nx_ + 1; ++i) {
            const long gi = ox_ + i, gj = oy_ + j;
            const bool edge = gi == 0 || gi == p_.n + 1 || gj == 0 || gj == p_.n + 1;
            u[idx(i, j)] = edge ? T(p_.boundary(gi, gj)) : T(0);
          }
      });
    }
    auto fh = Kokkos::create_mirror_view(f_);
    auto rh = Kokkos::create_mirror_view(rhs_);
    for (long j = 1; j <= ny_; ++j)
      for (long i = 1; i <= nx_; ++i) {
        const double f = p_.f(ox_ + i, oy_ + j);
        fh[cell(i, j)] = f;
        rh[cell(i, j)] = static_cast<T>(h2 * f);
      }
    Kokkos::deep_copy(f_, fh);
    Kokkos::deep_copy(rhs_, rh);
    u_ = &a_;
    if (split_) {
      w_ = Vector<T>("poisson5pt::w", rhs_.size());
      auto wh = Kokkos::create_mirror_view(w_);
      const auto uh = locus::host_copy(a_);
      for (long j = 0; j <= ny_ + 1; ++j)
        for (long i = 0; i <= nx_ + 1; ++i) wh[cell(i, j)] = uh.data()[idx(i, j)];
      Kokkos::deep_copy(w_, wh);
    }
    stale_ = true;
  }

  void iterate() override {
    if (o_.method == Method::jacobi)
      jacobi();
    else if (o_.method == Method::sor)
      red_black<true>();
    else
      red_black<false>();
  }

  double residual() override {
    refresh();
    auto t = timers_.scope("residual");
    const double r = 1.0 / (p_.h() * p_.h());
    double m = 0.0;
    count_residual(nx_ * ny_, sizeof(T));
    const Sweeps<T> sw = sweeps();
    const double* f = f_.data();
    Kokkos::parallel_reduce(
        "poisson5pt::residual", locus::Range<long>(1, ny_ + 1),
        KOKKOS_LAMBDA(long j, double& mj) { mj = sw.residual_row(j, f, r, mj); }, Kokkos::Max<double>(m));
    return global(m, MPI_MAX);
  }

  double max_error() override {
    double m = 0.0;
    const HostIterate h = host_iterate();
    for (long j = 1; j <= ny_; ++j)
      for (long i = 1; i <= nx_; ++i)
        m = std::max(m, std::fabs(double(value(h, i, j)) - p_.exact(ox_ + i, oy_ + j)));
    return global(m, MPI_MAX);
  }

  std::array<double, 2> range() override {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    const HostIterate h = host_iterate();
    for (long j = 1; j <= ny_; ++j)
      for (long i = 1; i <= nx_; ++i) {
        lo = std::min(lo, double(value(h, i, j)));
        hi = std::max(hi, double(value(h, i, j)));
      }
    return {global(lo, MPI_MIN), global(hi, MPI_MAX)};
  }

  double centre_value() override {
    const long ci = (p_.n + 1) / 2 - ox_, cj = (p_.n + 1) / 2 - oy_;
    double v = -std::numeric_limits<double>::infinity();
    if (ci >= 1 && ci <= nx_ && cj >= 1 && cj <= ny_) v = double(value(host_iterate(), ci, cj));
    return global(v, MPI_MAX);
  }

  void write(locus::H5Output& out, bool with_error) override {
    const HostIterate h = host_iterate();
    if (split_) {
      // The field's interior from the split copy (only its faces and ghosts
      // are kept current for the halo exchange).
      locus::host_fill(a_, [&](const auto& v) {
        T* u = v.data();
        for (long j = 1; j <= ny_; ++j)
          for (long i = 1; i <= nx_; ++i) u[idx(i, j)] = h.w[cell(i, j)];
      });
    }
    out.write_field("solution", *u_, decomp_, 2);
    if (!with_error) return;
    locus::GridFieldT<T> e(team_, decomp_, kGhosts);
    locus::host_fill(e, [&](const auto& v) {
      T* d = v.data();
      for (long j = 1; j <= ny_; ++j)
        for (long i = 1; i <= nx_; ++i)
          d[idx(i, j)] = static_cast<T>(double(value(h, i, j)) - p_.exact(ox_ + i, oy_ + j));
    });
    out.write_field("error", e, decomp_, 2);
  }

  const locus::CartDecomp& decomp() const override { return decomp_; }
  std::string halo_name() const override { return halo_->name(); }
  bool kernel_checked() const override { return checked_; }

 private:
  // Point (i, j) of the row-major field (ghosts at 0 and n+1).
  std::size_t idx(long i, long j) const { return static_cast<std::size_t>(j * sx_ + i); }
  // Point (i, j) in the sweeps' storage (the split copy and h^2 f): row j
  // holds the columns of even global index, then (at hp_) the odd ones.
  std::size_t cell(long i, long j) const {
    if (!split_) return idx(i, j);
    return static_cast<std::size_t>(j * rs_ + ((ox_ + i) & 1) * hp_ + (i >> 1));
  }
  // The iterate as the host reads it: the solver's own views on a host
  // build (no copy), host copies otherwise.
  using HostVector =
      decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), std::declval<Vector<T>>()));
  using HostField = decltype(locus::host_copy(std::declval<const locus::GridFieldT<T>&>()));
  struct HostIterate {
    HostVector w;  // split layout
    HostField u;   // natural layout
  };
  HostIterate host_iterate() const {
    HostIterate h;
    if (split_)
      h.w = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w_);
    else
      h.u = locus::host_copy(*u_);
    return h;
  }
  T value(const HostIterate& h, long i, long j) const {
    return split_ ? h.w[cell(i, j)] : h.u.data()[idx(i, j)];
  }

  // The sweeps' view of the storage (Sweeps), for the kernels.
  Sweeps<T> sweeps() const {
    return {u_->data(), w_.data(), rhs_.data(), nx_,    ny_,         sx_,    ox_,
            oy_,        hp_,       rs_,         ahead_, T(o_.omega), split_, avx2_};
  }

  double global(double v, MPI_Op op) {
    double out = 0.0;
    locus::allreduce_yielding(&v, &out, 1, MPI_DOUBLE, op, comm_);
    return out;
  }

  void exchange() {
    if (!exchanges_) return;
    auto t = timers_.scope("halo");
    if (split_) copy_faces(true);
    halo_->exchange(*u_);
    if (split_) copy_faces(false);
  }
  // The functions that launch kernels are public: nvcc's extended lambdas
  // (KOKKOS_LAMBDA) cannot be defined in a private member function.
 public:
  // The split copy's faces next to another rank into the field (out), or
  // the field's ghosts there into the split copy (in). A kernel: every
  // element moved once (a column face skips the rows a row face moved).
  void copy_faces(bool out) {
    const Sweeps<T> sw = sweeps();
    const long lo = out ? 1 : 0, hi = out ? 0 : 1;  // face or ghost layer
    const bool down = nb_[1][0], upn = nb_[1][1], left = nb_[0][0], right = nb_[0][1];
    const long nx = nx_, ny = ny_;
    Kokkos::parallel_for(
        "poisson5pt::copy_faces", locus::Range<long>(1, (nx > ny ? nx : ny) + 1), KOKKOS_LAMBDA(long q) {
          auto move = [&](long i, long j) {
            if (out)
              sw.u[sw.idx(i, j)] = sw.w[sw.cell(i, j)];
            else
              sw.w[sw.cell(i, j)] = sw.u[sw.idx(i, j)];
          };
          if (q <= nx) {
            if (down) move(q, lo);
            if (upn) move(q, ny + hi);
          }
          if (q <= ny && !(out && ((q == 1 && down) || (q == ny && upn)))) {
            if (left) move(lo, q);
            if (right) move(nx + hi, q);
          }
        });
    Kokkos::fence();
  }

 private:
  // Brings the ghosts up to date unless nothing changed since the last exchange.
  void refresh() {
    if (stale_) exchange();
    stale_ = false;
  }

 public:  // (kernels: see copy_faces)
  // One red-black iteration as one pass over the block: red row j, then
  // black row j-1 (whose red neighbours are final by then); in the split
  // layout both in one loop. Black points next to another rank need that
  // rank's new red values: they wait for the second exchange. Same
  // updates, same order per colour, as two full sweeps, so the result is
  // identical; the block is streamed once.
  //
  // The pass is a Kokkos kernel over chunks of rows (one chunk per thread
  // of the execution space; one chunk, the whole block, with Serial). A
  // chunk starting at row ja > 1 leaves black rows ja-1 and ja for after
  // the pass (black ja-1 reads red ja, which this chunk writes; its own red
  // ja reads the old black ja), so chunks never touch each other's rows in
  // between, and every point gets the same update from the same values as
  // in one sequential pass.
  template <bool Sor>
  void red_black() {
    refresh();
    const bool down = nb_[1][0], upn = nb_[1][1], left = nb_[0][0], right = nb_[0][1];
    const long c0 = left ? 2 : 1, c1 = right ? nx_ - 1 : nx_;
    const bool check = !checked_;
    if (check) reference_first_pass<Sor>();
    const long chunks = std::max<long>(1, std::min<long>(row_chunks_, ny_ / 4));
    const RedBlack<T, Sor> rb{sweeps(), down, upn, left, right, c0, c1, chunks};
    {
      auto t = timers_.scope("compute");
      count_sweep(nx_ * ny_, sizeof(T), Sor);  // (every point: this pass and the edges' below)
      Kokkos::parallel_for(
          "poisson5pt::red_black", locus::Range<long>(0, chunks), KOKKOS_LAMBDA(long c) { rb.pass(c); });
      Kokkos::fence();
      if (chunks > 1)
        Kokkos::parallel_for(
            "poisson5pt::red_black_seams", locus::Range<long>(1, chunks),
            KOKKOS_LAMBDA(long c) { rb.seam(c); });
    }
    if (check) compare_first_pass();
    exchange();
    {
      auto t = timers_.scope("compute");
      Kokkos::parallel_for(
          "poisson5pt::red_black_edges", locus::Range<long>(1, ny_ + 1),
          KOKKOS_LAMBDA(long j) { rb.edge(j); });
    }
    stale_ = true;
  }

 private:
  // Chunks of rows of the red-black pass: one per thread of the execution
  // space; LOCUS_ROW_CHUNKS (a test hook) asks for more, so that a
  // one-thread build runs the chunked pass too. Read once per solver
  // (Kokkos is running by then): a getenv per pass showed in profiles of
  // small grids.
  static long row_chunks() {
    long c = locus::ExecSpace().concurrency();
    if (const char* e = std::getenv("LOCUS_ROW_CHUNKS")) c = std::max(c, std::atol(e));
    return c;
  }

  // The plain reference of the first pass of the first iteration (on a
  // row-major copy with current ghosts): every red point, then the black
  // points the pass updates (rows not next to another rank, columns c0..c1),
  // point by point in the row-major order of the textbook algorithm.
  template <bool Sor>
  void reference_first_pass() {
    locus::Region region("poisson5pt::reference");
    ref_.assign(static_cast<std::size_t>((ny_ + 2) * sx_), T(0));
    const HostIterate h = host_iterate();
    for (long j = 0; j <= ny_ + 1; ++j)
      for (long i = 0; i <= nx_ + 1; ++i) {
        const bool corner = (i == 0 || i == nx_ + 1) && (j == 0 || j == ny_ + 1);
        ref_[idx(i, j)] = corner ? T(0) : value(h, i, j);
      }
    std::vector<T> rhs(ref_.size());
    const auto rhs_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rhs_);
    for (long j = 1; j <= ny_; ++j)
      for (long i = 1; i <= nx_; ++i) rhs[idx(i, j)] = rhs_host[cell(i, j)];
    const T quarter = T(0.25), w = T(o_.omega);
    const bool down = nb_[1][0], upn = nb_[1][1], left = nb_[0][0], right = nb_[0][1];
    const long c0 = left ? 2 : 1, c1 = right ? nx_ - 1 : nx_;
    for (int colour : {kRed, kBlack})
      for (long j = 1; j <= ny_; ++j) {
        if (colour == kBlack && ((j == 1 && down) || (j == ny_ && upn))) continue;
        for (long i = colour == kRed ? 1 : c0; i <= (colour == kRed ? nx_ : c1); ++i) {
          if (((ox_ + i + oy_ + j) & 1) != colour) continue;
          const std::size_t k = idx(i, j);
          const T g = quarter * (((ref_[k - 1] + ref_[k + 1]) + (ref_[k - sx_] + ref_[k + sx_])) + rhs[k]);
          ref_[k] = Sor ? T(ref_[k] + w * (g - ref_[k])) : g;
        }
      }
  }
  // Every interior point against the reference (the black points the first
  // pass leaves for the second are still the old values on both sides).
  void compare_first_pass() {
    long differ = 0;
    const HostIterate h = host_iterate();
    for (long j = 1; j <= ny_; ++j)
      for (long i = 1; i <= nx_; ++i) {
        const T v = value(h, i, j), r = ref_[idx(i, j)];
        differ += std::memcmp(&v, &r, sizeof(T)) != 0;
      }
    ref_.clear();
    ref_.shrink_to_fit();
    if (differ)
      throw locus::Error("poisson5pt: the sweep kernel differs from the reference kernel in " +
                         std::to_string(differ) + " points on the first iteration");
    checked_ = true;
  }

 public:  // (kernels: see copy_faces)
  void jacobi() {
    refresh();
    locus::GridFieldT<T>* next = u_ == &a_ ? b_field_.get() : &a_;
    const T* u = u_->data();
    T* un = next->data();
    const T* rhs = rhs_.data();
    const long nx = nx_, sx = sx_;
    const T quarter = T(0.25);
    const bool check = !checked_;
    if (check) {
      // The plain reference: the same update into a scratch copy (on the
      // host: host views of the field and h^2 f).
      locus::Region region("poisson5pt::reference");
      ref_.assign(static_cast<std::size_t>((ny_ + 2) * sx_), T(0));
      const auto uv = locus::host_copy(*u_);
      const auto rv = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), rhs_);
      const T* uh = uv.data();
      const T* rh = rv.data();
      for (long j = 1; j <= ny_; ++j)
        for (long i = 1; i <= nx_; ++i) {
          const std::size_t k = idx(i, j);
          ref_[k] = quarter * (((uh[k - 1] + uh[k + 1]) + (uh[k - sx_] + uh[k + sx_])) + rh[k]);
        }
    }
    {
      auto t = timers_.scope("compute");
      count_sweep(nx_ * ny_, sizeof(T), false);
      Kokkos::parallel_for(
          "poisson5pt::jacobi", locus::Range<long>(1, ny_ + 1), KOKKOS_LAMBDA(long j) {
            const T* r = u + j * sx;
            const T* dn = r - sx;
            const T* up = r + sx;
            const T* b = rhs + j * sx;
            T* out = un + j * sx;
            for (long i = 1; i <= nx; ++i)
              out[i] = quarter * (((r[i - 1] + r[i + 1]) + (dn[i] + up[i])) + b[i]);
          });
      u_ = next;
    }
    if (check) compare_first_pass();
    stale_ = true;
  }

 private:
  locus::Team& team_;
  MPI_Comm comm_;
  Problem p_;
  Options o_;
  locus::CartDecomp decomp_;
  std::unique_ptr<locus::HaloExchange<T>> halo_;
  locus::Timers& timers_;
  locus::GridFieldT<T> a_;
  std::unique_ptr<locus::GridFieldT<T>> b_field_;  // Jacobi's second field
  locus::GridFieldT<T>* u_ = nullptr;              // the current iterate
  Vector<T> rhs_;                                  // h^2 f, in the solver's precision, at cell()
  Vector<T> w_;                                    // split layout: the iterate the sweeps update
  Vector<double> f_;                               // f, for the residual, at cell()
  long nx_ = 0, ny_ = 0, sx_ = 0, ox_ = 0, oy_ = 0;
  bool nb_[2][2] = {};
  bool exchanges_ = false;
  bool stale_ = true;
  bool split_ = false;
  long hp_ = 0;           // split layout: half-row pitch
  long rs_ = 0;           // sweeps' storage: from row j to row j+1 (sx_ when natural)
  long ahead_ = 0;        // split layout: prefetch distance in elements (0: none)
  bool checked_ = false;  // the first iteration matched the reference kernel
  std::vector<T> ref_;    // the reference's row-major copy (first iteration only)
  bool avx2_ = false;     // the split sweeps' AVX2 compilation (sweep_vector: run time, locus::cpu)
  long row_chunks_ = row_chunks();
};

}  // namespace

bool sweeps_split(const Options& o) {
  return o.split && o.method != Method::jacobi;
}

std::string sweep_vector(const Options& o) {
  if (!sweeps_split(o)) return "none";
#ifdef POISSON5PT_HAVE_AVX2
  if (o.vector_auto && locus::host_avx2()) return "avx2";  // run time; LOCUS_CPU_HIDE=avx2 hides it
#endif
  return "baseline";
}

std::unique_ptr<SolverBase> make_solver(const std::string& precision, locus::Team& team, const Problem& p,
                                        const Options& o, locus::Timers& timers) {
  if (precision == "float32") return std::make_unique<Solver<float>>(team, p, o, timers);
  if (precision == "float64") return std::make_unique<Solver<double>>(team, p, o, timers);
  throw locus::Error("poisson5pt.solver.precision: unknown precision '" + precision + "'");
}

SolveResult solve(MPI_Comm comm, SolverBase& solver, const StopRule& rule, bool show, locus::Timers* timers) {
  SolveResult r;
  if (timers) timers->start("setup");
  solver.initialize();
  r.initial_residual = solver.residual();
  if (timers) timers->stop("setup");
  r.history.push_back(1.0);
  r.history_iterations.push_back(0);
  const double res0 = r.initial_residual;
  r.converged = res0 == 0.0;  // already exact (e.g. f = 0 and zero edges)
  double rel = res0 == 0.0 ? 0.0 : 1.0;
  // The best value counts from the first check: the max-norm residual of
  // Gauss-Seidel first rises above the initial one, then falls steadily.
  r.best = HUGE_VAL;
  long since_best = 0;
  locus::ProgressLine progress(show, rule.max_iterations, rule.tolerance);
  locus::barrier_yielding(comm);
  const double before = timers ? timers->seconds("solve") : 0.0;
  if (timers) timers->start("solve");
  const double t0 = MPI_Wtime();
  while (!r.converged && r.iterations < rule.max_iterations) {
    const double ti = MPI_Wtime();
    solver.iterate();
    ++r.iterations;
    if (r.iterations % rule.check_every == 0 || r.iterations == rule.max_iterations) {
      rel = solver.residual() / res0;
      r.history.push_back(rel);
      r.history_iterations.push_back(r.iterations);
      progress.update(r.iterations, rel);
      r.converged = rule.tolerance > 0 && rel <= rule.tolerance;
      // The same value on every rank (a global max), so every rank stops
      // at the same check.
      if (rel < r.best) {
        r.best = rel;
        since_best = 0;
      } else if (rule.tolerance > 0 && rule.stall_checks > 0 && ++since_best >= rule.stall_checks) {
        r.stalled = true;
        r.iteration_times.add(MPI_Wtime() - ti);
        break;
      }
    }
    r.iteration_times.add(MPI_Wtime() - ti);
  }
  double elapsed = MPI_Wtime() - t0;
  if (timers) {
    // the loop's time as the `solve` timer measured it (the figure of merit's)
    timers->stop("solve");
    elapsed = timers->seconds("solve") - before;
  }
  progress.finish();
  locus::allreduce_yielding(&elapsed, &r.seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  r.relative_residual = rel;
  // tolerance 0 asks for a fixed number of iterations: nothing was tested
  // against a tolerance, so nothing converged (the verdict says "not checked").
  return r;
}

}  // namespace poisson5pt
