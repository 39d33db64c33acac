// Matrix Market fuzz harness: reads every file named in a list (one path
// per line) with the parallel reader, in one MPI job. Each file must either
// load or end with a CollectiveError of the form "PATH:LINE: ..." that is
// the same on every rank. A crash ends the job (non-zero exit), a hang hits
// the test's timeout. Prints one line of counts; exit 1 on a bad outcome.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "locus/app.hpp"
#include "locus/error.hpp"
#include "spmv.hpp"

namespace {

const char* const kUsage =
    "usage: mpiexec -n RANKS spmv_mm_fuzz LIST\n"
    "Reads every Matrix Market file named in LIST (one path a line) with spmv's\n"
    "parallel reader. Each must load, or be refused with 'PATH:LINE: what', the\n"
    "same on every rank. Prints one line of counts; exit 0 when every file did\n"
    "one or the other, 1 otherwise, 2 on a bad argument (tests/spmv_fuzz.py runs\n"
    "it on mutated files).\n";

std::uint64_t fnv(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

bool well_formed(const std::string& msg, const std::string& path) {
  if (msg.compare(0, path.size() + 1, path + ":") != 0) return false;
  std::size_t i = path.size() + 1;
  std::size_t digits = 0;
  while (i < msg.size() && msg[i] >= '0' && msg[i] <= '9') ++i, ++digits;
  return digits > 0 && msg.compare(i, 2, ": ") == 0 && msg.size() > i + 2;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  locus::prepare_mpi_environment();
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string arg = argc == 2 ? argv[1] : "";
  if (arg == "-h" || arg == "--help") {
    if (rank == 0) std::printf("%s", kUsage);
    MPI_Finalize();
    return 0;
  }
  std::ifstream list(arg);
  if (argc != 2 || !list) {
    if (rank == 0) {
      if (argc == 2) std::fprintf(stderr, "spmv_mm_fuzz: error: cannot open %s\n", argv[1]);
      std::fprintf(stderr, "%s", kUsage);
    }
    MPI_Finalize();
    return 2;
  }
  std::string path;
  long files = 0, loaded = 0, rejected = 0, bad = 0;
  while (std::getline(list, path)) {
    if (path.empty()) continue;
    ++files;
    std::string outcome;
    bool ok_form = true;
    try {
      spmv::MatrixInfo info;
      spmv::RowBlock rows = spmv::read_matrix_market(MPI_COMM_WORLD, path, spmv::ReadOptions{}, info);
      long long nnz = rows.nnz(), total = 0;
      MPI_Allreduce(&nnz, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
      outcome = "loaded " + std::to_string(rows.n) + " " + std::to_string(total);
      ++loaded;
    } catch (const locus::CollectiveError& e) {
      outcome = e.what();
      ok_form = well_formed(outcome, path);
      ++rejected;
    }
    // the same outcome on every rank
    const std::uint64_t h = fnv(outcome);
    std::uint64_t lo = 0, hi = 0;
    MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    if (!ok_form || lo != hi) {
      ++bad;
      if (rank == 0)
        std::fprintf(stderr, "BAD %s: %s%s\n", path.c_str(), outcome.c_str(),
                     lo != hi ? " (ranks disagree)" : " (not 'PATH:LINE: what')");
    }
  }
  if (rank == 0)
    std::printf("fuzz: %ld files, %ld loaded, %ld rejected with PATH:LINE, %ld bad\n", files, loaded,
                rejected, bad);
  MPI_Finalize();
  return bad == 0 && files > 0 ? 0 : 1;
}
