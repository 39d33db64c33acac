// The peer users run for GUPS: HPCC 1.5.0's MPIRandomAccess update loop,
// in its own MPI job, with no locus in the process (MPI_Init, no thread
// support asked: as the hpcc binary starts). `./locus bench gups` runs it
// alternately with the locus benchmark on the same table and stream
// (tools/bench_gups_peer.py), so that locus is compared with HPCC itself and
// not only with the tuned bucketed baseline inside bench/gups.
//
// The loop, step for step as HPCC's Power2NodesMPIRandomAccessUpdate: before
// each update, every message that has arrived is applied (one MPI_Test at
// least); then, while fewer than 1024 updates wait in the buckets, the next
// update is applied here or bucketed for its owner; otherwise, once the one
// send in flight is done, the largest bucket (at most 1024 values) goes out
// with MPI_Isend; at the end a zero-length "done" message to every rank.
// HPCC keeps its buckets in a pool and the largest in a heap; here a vector
// per rank and a scan when sending: the same choices. HPCC's stream and
// table (bench/hpcc_stream.hpp); any rank count (HPCC has a second loop
// for rank counts that are not powers of two; this one places the words
// as bench/gups does).
//
// Checked: the table after the updates against the one the whole stream
// must leave (every word), then HPCC's replay (T[k] == k again).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hpcc_stream.hpp"

namespace {

using namespace bench::hpcc;

constexpr u64 kPending = 1024;  // HPCC's MAX_TOTAL_PENDING_UPDATES and LOCAL_BUFFER_SIZE
constexpr int kData = 1, kDone = 2;

class Loop {
 public:
  Loop(const Table& tb, int size, u64* table)
      : tb_(tb), size_(size), table_(table), in_(kPending), out_(kPending), finish_(size, MPI_REQUEST_NULL) {
    buckets_.assign(static_cast<std::size_t>(size), {});
  }
  void run() {
    receiving_ = size_ - 1;
    pending_ = 0;
    post();
    const u64 n = 4 * tb_.local;
    u64 r = stream_start(static_cast<std::int64_t>(n * static_cast<u64>(tb_.rank)));
    for (u64 i = 0; i < n;) {
      receive();
      if (pending_ < kPending) {
        r = next_random(r);
        const u64 g = tb_.index(r), dest = tb_.owner(g);
        if (dest == static_cast<u64>(tb_.rank)) {
          table_[tb_.offset(g)] ^= r;
        } else {
          buckets_[dest].push_back(r);
          ++pending_;
        }
        ++i;
      } else {
        send_largest();
      }
    }
    while (pending_ > 0) {
      receive();
      send_largest();
    }
    for (int d = 0; d < size_; ++d)
      if (d != tb_.rank) MPI_Isend(nullptr, 0, MPI_UINT64_T, d, kDone, MPI_COMM_WORLD, &finish_[d]);
    while (receiving_ > 0) {
      MPI_Status st;
      MPI_Wait(&recv_, &st);
      apply(st);
      post();
    }
    MPI_Waitall(size_, finish_.data(), MPI_STATUSES_IGNORE);
    MPI_Cancel(&recv_);
    MPI_Wait(&recv_, MPI_STATUS_IGNORE);
    MPI_Wait(&send_, MPI_STATUS_IGNORE);
  }

 private:
  void post() {
    MPI_Irecv(in_.data(), static_cast<int>(kPending), MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG,
              MPI_COMM_WORLD, &recv_);
  }
  void apply(const MPI_Status& st) {
    if (st.MPI_TAG == kDone) {
      --receiving_;
      return;
    }
    int n = 0;
    MPI_Get_count(&st, MPI_UINT64_T, &n);
    for (int j = 0; j < n; ++j) {
      const u64 v = in_[static_cast<std::size_t>(j)];
      table_[tb_.offset(tb_.index(v))] ^= v;
    }
  }
  // HPCC's "receive messages" loop.
  void receive() {
    int done = 0;
    do {
      MPI_Status st;
      MPI_Test(&recv_, &done, &st);
      if (done) {
        apply(st);
        post();
      }
    } while (done && receiving_ > 0);
  }
  void send_largest() {
    int done = 0;
    MPI_Test(&send_, &done, MPI_STATUS_IGNORE);
    if (!done) return;
    std::size_t pe = 0;
    for (std::size_t d = 1; d < buckets_.size(); ++d)
      if (buckets_[d].size() > buckets_[pe].size()) pe = d;
    std::vector<u64>& b = buckets_[pe];
    const std::size_t k = std::min<std::size_t>(b.size(), kPending);
    std::copy(b.end() - static_cast<std::ptrdiff_t>(k), b.end(), out_.begin());
    b.resize(b.size() - k);
    MPI_Isend(out_.data(), static_cast<int>(k), MPI_UINT64_T, static_cast<int>(pe), kData, MPI_COMM_WORLD,
              &send_);
    pending_ -= k;
  }
  const Table& tb_;
  int size_;
  u64* table_;
  int receiving_ = 0;
  u64 pending_ = 0;
  std::vector<std::vector<u64>> buckets_;
  std::vector<u64> in_, out_;
  std::vector<MPI_Request> finish_;
  MPI_Request recv_ = MPI_REQUEST_NULL, send_ = MPI_REQUEST_NULL;
};

const char* kUsage =
    "usage: hpcc_ra [--log2-local N] [--repeats N]\n"
    "HPCC 1.5.0's MPIRandomAccess update loop in its own MPI job (the peer of ./locus bench gups):\n"
    "  --log2-local N  table words per rank, as a power of two (4-30; default 18, as bench/gups)\n"
    "  --repeats N     timed passes (1-99; default 5); the median is reported\n"
    "Prints GUPS (updates / the slowest rank's time) and the verification: the table after the\n"
    "first pass against the expected one, then HPCC's replay (T[k] == k); exit 1 if it fails.\n";

enum class Parsed { run, help, error };

// Every rank parses the same argv: the same error everywhere, printed once.
Parsed parse(int argc, char** argv, int rank, int& log2_local, int& repeats) {
  auto fail = [&](const std::string& what) {
    if (rank == 0) std::fprintf(stderr, "hpcc_ra: %s\n%s", what.c_str(), kUsage);
    return Parsed::error;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      if (rank == 0) std::fputs(kUsage, stdout);
      return Parsed::help;
    }
    int* into = a == "--log2-local" ? &log2_local : a == "--repeats" ? &repeats : nullptr;
    if (!into) return fail("unknown argument '" + a + "'");
    if (i + 1 == argc) return fail(a + " needs a number");
    char* end = nullptr;
    const long v = std::strtol(argv[++i], &end, 10);
    const long lo = into == &log2_local ? 4 : 1, hi = into == &log2_local ? 30 : 99;
    if (*argv[i] == '\0' || *end != '\0' || v < lo || v > hi)
      return fail(a + " must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                  " (got '" + argv[i] + "')");
    *into = static_cast<int>(v);
  }
  return Parsed::run;
}

long wrong_words(const std::vector<u64>& t, const std::vector<u64>& want) {
  long bad = 0;
  for (std::size_t i = 0; i < t.size(); ++i) bad += t[i] != want[i];
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return bad;
}

double timed_pass(Loop& loop) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t = MPI_Wtime();
  loop.run();
  t = MPI_Wtime() - t;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1, log2_local = 18, repeats = 5;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const Parsed parsed = parse(argc, argv, rank, log2_local, repeats);
  if (parsed != Parsed::run) {
    MPI_Finalize();
    return parsed == Parsed::help ? 0 : 2;
  }
  Table tb;
  tb.shift = log2_local;
  tb.local = u64(1) << log2_local;
  tb.total = tb.local * static_cast<u64>(size);
  tb.mask = (tb.total & (tb.total - 1)) == 0 ? tb.total - 1 : 0;
  tb.rank = rank;
  std::vector<u64> table(tb.local), start(tb.local);
  init_table(start.data(), tb);
  const std::vector<u64> expected = expected_part(tb, size);
  Loop loop(tb, size, table.data());
  std::vector<double> seconds;
  long wrong = 0, replay_wrong = 0;
  for (int r = 0; r < repeats; ++r) {
    table = start;
    seconds.push_back(timed_pass(loop));
    if (r > 0) continue;
    wrong = wrong_words(table, expected);
    loop.run();  // HPCC's check: the same updates again undo the first pass
    replay_wrong = wrong_words(table, start);
  }
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                          : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  const bool pass = wrong == 0 && replay_wrong == 0;
  if (rank == 0) {
    std::printf(
        "# HPCC 1.5.0 MPIRandomAccess update loop, own MPI job (MPI_Init, no locus): table 2^%d words per "
        "rank x "
        "%d ranks, %llu updates, at most %llu pending\n",
        log2_local, size, static_cast<unsigned long long>(4 * tb.total),
        static_cast<unsigned long long>(kPending));
    std::printf("gups: %.6f (median of %d)\n", 4.0 * static_cast<double>(tb.total) / median / 1e9, repeats);
    std::printf("verification: %s (%ld words wrong after the updates, %ld after the replay)\n",
                pass ? "PASS" : "FAIL", wrong, replay_wrong);
  }
  MPI_Finalize();
  return pass ? 0 : 1;
}
