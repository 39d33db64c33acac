// Index-gather (Bale's `ig`): a table of 64-bit words spread over the
// units; every unit reads M words at random global indices into a local
// array. Variants, one run, interleaved repeats:
//   raw               the limit: loads from one MPI shared-memory table, no
//                     library in the loop (only when every rank shares one
//                     real node)
//   mpi-get           MPI_Get of one word per index on an MPI_Win_allocate
//                     window, MPI_Win_flush_all per look-ahead batch
//   alltoallv         two-sided: indices bucketed per owner, MPI_Alltoall of
//                     the counts, MPI_Alltoallv of the indices, the owners
//                     look them up, MPI_Alltoallv of the values back
//   locus             locus::get_nbi per index (inline loads on one node,
//                     MPI_Get between nodes), flush per look-ahead batch
//   locus-aggregated  get_nbi on a table with aggregated atomics
//                     (comm.atomics: aggregate): requests to other nodes
//                     travel in batches, the owner answers in batches
// Every variant's result is checked word by word (table[g] is a function of
// g). The rate is million indices gathered per second over all units.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <vector>

#include "common.hpp"
#include "locus/profile.hpp"
#include "locus/rma.hpp"
#include "locus/runtime.hpp"
#include "locus/segment.hpp"
#include "locus/wait.hpp"

namespace {

using u64 = std::uint64_t;

u64 word_of(u64 g) {
  return (g + 1) * 0x9E3779B97F4A7C15ull;
}

u64 mix(u64 x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

locus::AppInfo app_info() {
  locus::AppInfo app;
  app.name = "ig";
  app.description =
      "Index-gather (Bale's ig): every unit reads M random words of a distributed table; raw shared-memory\n"
      "loads, MPI_Get per word, MPI_Alltoallv, locus get_nbi (direct) and locus aggregated, verified.";
  app.schema.integer("bench.log2_local", 18, 4, 30, "table words per unit, as a power of two")
      .integer("bench.log2_requests", 18, 4, 28, "indices each unit gathers, as a power of two")
      .integer("bench.lookahead", 1024, 1, 1 << 20, "gets in flight per unit before a flush (mpi-get, locus)")
      .integer("bench.repeats", 3, 1, 99, "timed runs per variant (interleaved); the median is reported")
      .string("bench.variants", "raw,mpi-get,alltoallv,locus,locus-aggregated",
              "comma-separated variants to run (raw needs every rank on one real node)");
  locus::add_common_keys(app.schema, "ig");
  return app;
}

const char* const kVariants[] = {"raw", "mpi-get", "alltoallv", "locus", "locus-aggregated"};

struct Setup {
  u64 local = 0, total = 0;
  int shift = 0;
  std::vector<u64> index;  // my requests (global indices)
};

int run(locus::Context& ctx) {
  const auto& c = ctx.config();
  locus::Team& world = ctx.runtime().world();
  const int P = world.size(), me = world.rank();
  Setup s;
  s.shift = static_cast<int>(c.integer("bench.log2_local"));
  s.local = u64(1) << s.shift;
  s.total = s.local * static_cast<u64>(P);
  const u64 M = u64(1) << c.integer("bench.log2_requests");
  const u64 lookahead = static_cast<u64>(c.integer("bench.lookahead"));
  const long repeats = c.integer("bench.repeats");
  s.index.resize(M);
  for (u64 i = 0; i < M; ++i) s.index[i] = mix(i * static_cast<u64>(P) + static_cast<u64>(me) + 12345) % s.total;

  MPI_Comm shm_comm;
  MPI_Comm_split_type(world.comm(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm_comm);
  int shm_size = 0;
  MPI_Comm_size(shm_comm, &shm_size);
  const bool one_host = shm_size == P;

  std::vector<std::string> names = bench::split_list(c.string("bench.variants"));
  {
    std::string bad;
    for (const auto& n : names)
      if (std::find(std::begin(kVariants), std::end(kVariants), n) == std::end(kVariants) && bad.empty()) bad = n;
    locus::collective_require(ctx.comm(), bad.empty() && !names.empty(),
                              c.locate("bench.variants") + ": unknown variant '" + bad +
                                  "' (raw, mpi-get, alltoallv, locus, locus-aggregated, comma-separated)");
  }
  if (!one_host && std::find(names.begin(), names.end(), "raw") != names.end()) {
    names.erase(std::find(names.begin(), names.end(), "raw"));
    if (ctx.rank() == 0) std::printf("# raw skipped: the ranks are on more than one real node\n");
  }

  const u64 first = static_cast<u64>(me) * s.local;
  auto fill = [&](u64* t) {
    for (u64 i = 0; i < s.local; ++i) t[i] = word_of(first + i);
  };
  u64* mpi_base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  MPI_Win_allocate(static_cast<MPI_Aint>(s.local * sizeof(u64)), sizeof(u64), MPI_INFO_NULL, world.comm(), &mpi_base,
                   &win);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
  fill(mpi_base);
  std::vector<const u64*> raw_parts;
  MPI_Win raw_win = MPI_WIN_NULL;
  if (one_host) {
    u64* raw_base = nullptr;
    MPI_Win_allocate_shared(static_cast<MPI_Aint>(s.local * sizeof(u64)), sizeof(u64), MPI_INFO_NULL, shm_comm,
                            &raw_base, &raw_win);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, raw_win);
    fill(raw_base);
    for (int r = 0; r < shm_size; ++r) {
      MPI_Aint size = 0;
      int disp = 0;
      u64* p = nullptr;
      MPI_Win_shared_query(raw_win, r, &size, &disp, &p);
      raw_parts.push_back(p);
    }
  }
  std::vector<u64> own(s.local);
  fill(own.data());
  locus::Array<u64> table(world, s.local);
  fill(table.data());
  locus::Array<u64> agg_table(world, s.local, locus::AsyncHint::follow, locus::AtomicMode::aggregate);
  fill(agg_table.data());
  MPI_Win_sync(win);
  if (raw_win != MPI_WIN_NULL) MPI_Win_sync(raw_win);
  locus::barrier(world);

  std::vector<u64> out(M);
  // alltoallv's buffers, sized once.
  std::vector<int> scount(static_cast<std::size_t>(P)), rcount(static_cast<std::size_t>(P)),
      sdisp(static_cast<std::size_t>(P)), rdisp(static_cast<std::size_t>(P));
  std::vector<u64> sidx(M), ridx, rval, sval(M);
  std::vector<u64> slot_of(M);

  std::map<std::string, std::function<void()>> fn;
  fn["raw"] = [&]() {
    for (u64 i = 0; i < M; ++i) out[i] = raw_parts[s.index[i] >> s.shift][s.index[i] & (s.local - 1)];
  };
  fn["mpi-get"] = [&]() {
    for (u64 i = 0; i < M; ++i) {
      const u64 g = s.index[i];
      MPI_Get(&out[i], 1, MPI_UINT64_T, static_cast<int>(g >> s.shift), static_cast<MPI_Aint>(g & (s.local - 1)), 1,
              MPI_UINT64_T, win);
      if ((i + 1) % lookahead == 0) MPI_Win_flush_all(win);
    }
    MPI_Win_flush_all(win);
  };
  fn["alltoallv"] = [&]() {
    std::fill(scount.begin(), scount.end(), 0);
    for (u64 i = 0; i < M; ++i) ++scount[static_cast<std::size_t>(s.index[i] >> s.shift)];
    for (int p = 0, d = 0; p < P; ++p) sdisp[static_cast<std::size_t>(p)] = d, d += scount[static_cast<std::size_t>(p)];
    std::vector<int> fillpos = sdisp;
    for (u64 i = 0; i < M; ++i) {
      const auto owner = static_cast<std::size_t>(s.index[i] >> s.shift);
      const auto at = static_cast<u64>(fillpos[owner]++);
      sidx[at] = s.index[i] & (s.local - 1);
      slot_of[at] = i;
    }
    MPI_Alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, world.comm());
    int n = 0;
    for (int p = 0; p < P; ++p) rdisp[static_cast<std::size_t>(p)] = n, n += rcount[static_cast<std::size_t>(p)];
    ridx.resize(static_cast<std::size_t>(n));
    rval.resize(static_cast<std::size_t>(n));
    MPI_Alltoallv(sidx.data(), scount.data(), sdisp.data(), MPI_UINT64_T, ridx.data(), rcount.data(), rdisp.data(),
                  MPI_UINT64_T, world.comm());
    for (int k = 0; k < n; ++k) rval[static_cast<std::size_t>(k)] = own[ridx[static_cast<std::size_t>(k)]];
    MPI_Alltoallv(rval.data(), rcount.data(), rdisp.data(), MPI_UINT64_T, sval.data(), scount.data(), sdisp.data(),
                  MPI_UINT64_T, world.comm());
    for (u64 k = 0; k < M; ++k) out[slot_of[k]] = sval[k];
  };
  auto locus_gather = [&](const locus::Array<u64>& t, bool batches) {
    const locus::GlobalPtr<u64> base = t.gptr();
    for (u64 i = 0; i < M; ++i) {
      const u64 g = s.index[i];
      locus::get_nbi(&out[i], base.at(static_cast<int>(g >> s.shift)) + static_cast<std::ptrdiff_t>(g & (s.local - 1)),
                     1);
      if (batches && (i + 1) % lookahead == 0) locus::flush(world);
    }
    locus::flush(world);
  };
  fn["locus"] = [&]() { locus_gather(table, true); };
  fn["locus-aggregated"] = [&]() { locus_gather(agg_table, false); };

  std::map<std::string, std::vector<double>> seconds;
  std::map<std::string, long> wrong;
  for (long rep = 0; rep < repeats; ++rep)
    for (const std::string& name : names) {
      std::fill(out.begin(), out.end(), 0);
      locus::barrier(world);
      const double t0 = MPI_Wtime();
      fn[name]();
      locus::barrier(world);  // applies aggregated requests until every unit is done
      double t = MPI_Wtime() - t0;
      locus::allreduce_yielding(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, world.comm());
      seconds[name].push_back(t);
      if (rep > 0) continue;
      long bad = 0;
      for (u64 i = 0; i < M; ++i) bad += out[i] != word_of(s.index[i]);
      locus::allreduce_yielding(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, world.comm());
      wrong[name] = bad;
    }
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  if (raw_win != MPI_WIN_NULL) {
    MPI_Win_unlock_all(raw_win);
    MPI_Win_free(&raw_win);
  }
  MPI_Comm_free(&shm_comm);
  if (ctx.rank() != 0) return 0;

  bool all_same_node = true;
  for (int u = 0; u < P; ++u) all_same_node = all_same_node && world.same_node(u);
  const double gathered = static_cast<double>(M) * P;
  std::printf("# locus index-gather (Bale ig): table 2^%ld words per unit x %d units, 2^%ld requests per unit, "
              "look-ahead %" PRIu64 ", %s%s%s\n",
              c.integer("bench.log2_local"), P, c.integer("bench.log2_requests"), lookahead,
              all_same_node ? "same node" : "multi-node",
              ctx.runtime().node_map().emulated_size ? " (emulated nodes)" : "", bench::oversubscription_note().c_str());
  std::printf("%-17s %12s %8s %10s %8s %12s  %s\n", "variant", "Mindex/s", "/raw", "/alltoallv", "/mpi-get",
              "wrong words", "verdict");
  std::map<std::string, double> rate;
  for (const auto& n : names) rate[n] = gathered / locus::median(seconds[n]) / 1e6;
  auto over = [&](const std::string& n, const char* b) { return rate.count(b) && rate[b] > 0 ? rate[n] / rate[b] : 0.0; };
  auto cell = [](double r) {
    char buf[32] = "-";
    if (r > 0) std::snprintf(buf, sizeof buf, "%.2f", r);
    return std::string(buf);
  };
  const std::string dir = c.string("output.dir");
  std::filesystem::create_directories(dir);
  const std::string csv_path = dir + "/" + c.string("output.name") + ".csv";
  std::ofstream csv(csv_path);
  csv << "placement,units,variant,mindex_per_s,over_raw,over_alltoallv,over_mpi_get,wrong,verdict\n";
  bool failed = false;
  for (const auto& n : names) {
    const bool ok = wrong[n] == 0;
    failed = failed || !ok;
    std::printf("%-17s %12.2f %8s %10s %8s %12ld  %s\n", n.c_str(), rate[n], cell(over(n, "raw")).c_str(),
                cell(over(n, "alltoallv")).c_str(), cell(over(n, "mpi-get")).c_str(), wrong[n],
                ok ? "PASS (every word checked)" : "FAIL");
    csv << (all_same_node ? "same-node" : "multi-node") << "," << P << "," << n << "," << rate[n] << ","
        << over(n, "raw") << "," << over(n, "alltoallv") << "," << over(n, "mpi-get") << "," << wrong[n] << ","
        << (ok ? "PASS" : "FAIL") << "\n";
  }
  std::printf("\nlocus_bench:\n  benchmark: ig\n  csv: %s\n  over_subscribed: %s\n",
              std::filesystem::absolute(csv_path).c_str(), bench::oversubscription_note().empty() ? "no" : "yes");
  for (const char* v : {"locus", "locus-aggregated"})
    for (const char* b : {"raw", "alltoallv", "mpi-get"})
      if (rate.count(v) && rate.count(b)) std::printf("  %s_over_%s: %.3f\n", v, b, over(v, b));
  if (bench::oversubscription_note().empty()) {
    std::printf("  goals:\n");
    if (all_same_node && rate.count("locus") && rate.count("raw"))
      std::printf("    goal_locus_ge_half_raw: %s\n", over("locus", "raw") >= 0.5 ? "met" : "missed");
    if (!all_same_node && rate.count("locus-aggregated") && rate.count("alltoallv"))
      std::printf("    goal_aggregated_ge_alltoallv: %s\n", over("locus-aggregated", "alltoallv") >= 1.0 ? "met" : "missed");
  }
  std::printf("  verification: %s\n", failed ? "FAIL" : "PASS");
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  return locus::run(argc, argv, app_info(), run);
}
