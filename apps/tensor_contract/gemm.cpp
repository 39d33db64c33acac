// The portable tile product (gemm.hpp).
#include "gemm.hpp"

#include "locus/kokkos.hpp"

namespace tensor_contract {

namespace {

using gidx = std::int64_t;

struct GemmTiles {
  static constexpr int kT = 16;  // tile edge: c's tiles and the panels of a and b
  using Policy = Kokkos::TeamPolicy<locus::ExecSpace>;
  using Member = Policy::member_type;
  using Scratch =
      Kokkos::View<double*, locus::ExecSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  static std::size_t scratch_bytes() { return 3 * Scratch::shmem_size(kT * kT); }

  gidx m, n, k, tiles_n;
  const double* a;
  const double* b;
  double* c;

  KOKKOS_INLINE_FUNCTION void operator()(const Member& t) const {
    const gidx i0 = (t.league_rank() / tiles_n) * kT, j0 = (t.league_rank() % tiles_n) * kT;
    const int mi = static_cast<int>(m - i0 < kT ? m - i0 : kT),
              nj = static_cast<int>(n - j0 < kT ? n - j0 : kT);
    Scratch ct(t.team_scratch(0), kT * kT), at(t.team_scratch(0), kT * kT), bt(t.team_scratch(0), kT * kT);
    // c's tile into scratch (its accumulators across the panels)
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, mi * nj), [&](int e) {
      const int i = e / nj, j = e % nj;
      ct(i * kT + j) = c[(i0 + i) * n + j0 + j];
    });
    for (gidx k0 = 0; k0 < k; k0 += kT) {
      const int kb = static_cast<int>(k - k0 < kT ? k - k0 : kT);
      t.team_barrier();  // the previous panels are used up (and c's tile is in)
      Kokkos::parallel_for(Kokkos::TeamThreadRange(t, mi * kb), [&](int e) {
        const int i = e / kb, l = e % kb;
        at(i * kT + l) = a[(i0 + i) * k + k0 + l];
      });
      Kokkos::parallel_for(Kokkos::TeamThreadRange(t, kb * nj), [&](int e) {
        const int l = e / nj, j = e % nj;
        bt(l * kT + j) = b[(k0 + l) * n + j0 + j];
      });
      t.team_barrier();
      Kokkos::parallel_for(Kokkos::TeamThreadRange(t, mi * nj), [&](int e) {
        const int i = e / nj, j = e % nj;
        double s = ct(i * kT + j);
        for (int l = 0; l < kb; ++l) s += at(i * kT + l) * bt(l * kT + j);
        ct(i * kT + j) = s;
      });
    }
    t.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(t, mi * nj), [&](int e) {
      const int i = e / nj, j = e % nj;
      c[(i0 + i) * n + j0 + j] = ct(i * kT + j);
    });
  }
};

}  // namespace

void gemm_portable(gidx m, gidx n, gidx k, const double* a, const double* b, double* c) {
  if (m <= 0 || n <= 0) return;
  const gidx tiles_m = (m + GemmTiles::kT - 1) / GemmTiles::kT,
             tiles_n = (n + GemmTiles::kT - 1) / GemmTiles::kT;
  const GemmTiles f{m, n, k, tiles_n, a, b, c};
  const GemmTiles::Policy policy = GemmTiles::Policy(static_cast<int>(tiles_m * tiles_n), Kokkos::AUTO)
                                       .set_scratch_size(0, Kokkos::PerTeam(GemmTiles::scratch_bytes()));
  Kokkos::parallel_for("tensor::gemm", policy, f);
  Kokkos::fence();
}

}  // namespace tensor_contract
