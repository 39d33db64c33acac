#pragma once
// HPCC RandomAccess's update stream and table, shared by the GUPS
// benchmark (bench/gups.cpp) and HPCC's own loop run as a peer
// (bench/hpcc_ra.cpp): the polynomial stream (HPCC_starts jumps), the
// table of words spread over the ranks, and the table the whole stream
// must leave.
#include <cstdint>
#include <vector>

namespace bench::hpcc {

using u64 = std::uint64_t;

constexpr u64 kPoly = 0x7;
constexpr std::int64_t kPeriod = 1317624576693539401LL;

inline u64 next_random(u64 r) {
  return (r << 1) ^ (static_cast<std::int64_t>(r) < 0 ? kPoly : 0);
}

// The n-th value of HPCC's stream (HPCC_starts): square-and-multiply in
// GF(2)[x] modulo the polynomial.
inline u64 stream_start(std::int64_t n) {
  while (n < 0) n += kPeriod;
  while (n > kPeriod) n -= kPeriod;
  if (n == 0) return 1;
  u64 m2[64];
  u64 t = 1;
  for (int i = 0; i < 64; ++i) {
    m2[i] = t;
    t = next_random(next_random(t));
  }
  int i = 62;
  while (i >= 0 && !((n >> i) & 1)) --i;
  u64 r = 2;
  while (i > 0) {
    u64 sq = 0;
    for (int j = 0; j < 64; ++j)
      if ((r >> j) & 1) sq ^= m2[j];
    r = sq;
    --i;
    if ((n >> i) & 1) r = next_random(r);
  }
  return r;
}

struct Table {
  u64 local = 0, total = 0;  // words per unit, in all
  int shift = 0;             // log2(local)
  u64 mask = 0;              // total - 1 when total is a power of two, else 0
  int rank = 0;
  u64 owner(u64 g) const { return g >> shift; }
  u64 offset(u64 g) const { return g & (local - 1); }
  u64 index(u64 r) const { return mask ? r & mask : r % total; }
};

inline void init_table(u64* t, const Table& tb) {
  const u64 first = static_cast<u64>(tb.rank) * tb.local;
  for (u64 i = 0; i < tb.local; ++i) t[i] = first + i;
}

// Calls update(global index, value) for this unit's share of the stream.
template <class F>
void for_each_update(const Table& tb, F&& update) {
  const u64 n = 4 * tb.local;
  u64 r = stream_start(static_cast<std::int64_t>(n * static_cast<u64>(tb.rank)));
  for (u64 i = 0; i < n; ++i) {
    r = next_random(r);
    update(tb.index(r), r);
  }
}

// The expected table part of this unit: the whole stream, own words only.
inline std::vector<u64> expected_part(const Table& tb, int units) {
  std::vector<u64> t(tb.local);
  Table me = tb;
  init_table(t.data(), me);
  for (int u = 0; u < units; ++u) {
    Table from = tb;
    from.rank = u;
    for_each_update(from, [&](u64 g, u64 v) {
      if (me.owner(g) == static_cast<u64>(tb.rank)) t[me.offset(g)] ^= v;
    });
  }
  return t;
}

}  // namespace bench::hpcc
