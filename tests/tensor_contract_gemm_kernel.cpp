// The portable tile product of tensor_contract (gemm.hpp) against a naive
// triple loop: non-square sizes that are not multiples of the kernel's 16 x
// 16 tiles, k = 0 and 1, a single row or column, accumulation into a C
// that is not zero. The operands are in locus::MemSpace (copied there and
// back through host mirrors: no copies on a host build). Row-major, no
// transposes: the only form the task loop calls (its sorts put both
// operands into matrix layout).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gemm.hpp"
#include "locus/hash.hpp"
#include "locus/kokkos.hpp"

namespace {

using gidx = std::int64_t;
using View = Kokkos::View<double*, locus::MemSpace>;

// Values: small integers in [-3, 3] (every product and sum exact, so the
// kernel must match the loop bitwise) or uniform in [-1, 1).
std::vector<double> values(std::size_t n, std::uint64_t seed, bool integer) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t h = locus::mix64(seed * 7919 + i);
    v[i] = integer ? double(static_cast<int>(h % 7) - 3) : double(h >> 11) * 0x1.0p-52 - 1.0;
  }
  return v;
}

View to_view(const std::vector<double>& h) {
  View v("operand", h.size());
  auto m = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < h.size(); ++i) m(i) = h[i];
  Kokkos::deep_copy(v, m);
  return v;
}

// c += a b by the naive loop (c also returns the sums of |a b|, in cabs).
void naive(gidx m, gidx n, gidx k, const std::vector<double>& a, const std::vector<double>& b,
           std::vector<double>& c, std::vector<double>& cabs) {
  cabs.assign(c.size(), 0.0);
  for (gidx i = 0; i < m; ++i)
    for (gidx j = 0; j < n; ++j) {
      double s = c[i * n + j], t = std::fabs(c[i * n + j]);
      for (gidx l = 0; l < k; ++l) {
        s += a[i * k + l] * b[l * n + j];
        t += std::fabs(a[i * k + l] * b[l * n + j]);
      }
      c[i * n + j] = s;
      cabs[i * n + j] = t;
    }
}

void check_product(gidx m, gidx n, gidx k, bool integer) {
  SCOPED_TRACE("m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k) +
               (integer ? ", integers" : ", random"));
  const auto a = values(std::size_t(m * k), 1, integer), b = values(std::size_t(k * n), 2, integer);
  std::vector<double> c = values(std::size_t(m * n), 3, integer), cabs;
  View av = to_view(a), bv = to_view(b), cv = to_view(c);
  tensor_contract::gemm_portable(m, n, k, av.data(), bv.data(), cv.data());
  const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), cv);
  naive(m, n, k, a, b, c, cabs);
  const double eps = 0x1.0p-52;
  int bad = 0;
  for (gidx e = 0; e < m * n && bad < 5; ++e) {
    const double want = c[std::size_t(e)], x = got(e);
    if (integer ? x != want : std::fabs(x - want) > 2.0 * double(k + 1) * eps * cabs[std::size_t(e)]) {
      ADD_FAILURE() << "element (" << e / n << ", " << e % n << "): " << x << ", the loop " << want;
      ++bad;
    }
  }
}

const gidx kSizes[][3] = {{1, 1, 1},    {1, 37, 5},   {29, 1, 17}, {16, 16, 16}, {17, 15, 33},
                          {45, 37, 29}, {33, 18, 50}, {64, 48, 3}, {7, 100, 1},  {20, 9, 0}};

TEST(TensorGemm, IntegersExactlyTheLoop) {
  for (const auto& s : kSizes) check_product(s[0], s[1], s[2], true);
}

TEST(TensorGemm, RandomWithinTheRoundingBound) {
  for (const auto& s : kSizes) check_product(s[0], s[1], s[2], false);
}

// m = 0 or n = 0: no kernel, C untouched (and no operand read).
TEST(TensorGemm, EmptyProductLeavesC) {
  View c = to_view(values(12, 4, false));
  const auto before = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
  tensor_contract::gemm_portable(0, 3, 4, nullptr, nullptr, c.data());
  tensor_contract::gemm_portable(4, 0, 3, nullptr, nullptr, c.data());
  const auto after = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(before(i), after(i));
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
