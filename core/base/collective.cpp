// Collective errors: a condition on any rank becomes the same
// CollectiveError on every rank.
#include "locus/collective.hpp"

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "locus/error.hpp"
#include "locus/wait.hpp"

namespace locus {

int& CollectiveError::live() {
  static int count = 0;
  return count;
}

void exscan_sum(MPI_Comm comm, const long long* in, long long* out, int n) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
#ifdef LOCUS_SMPI
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<long long> all(static_cast<std::size_t>(size) * static_cast<std::size_t>(n));
  MPI_Allgather(in, n, MPI_LONG_LONG, all.data(), n, MPI_LONG_LONG, comm);
  for (int i = 0; i < n; ++i) {
    long long sum = 0;
    for (int r = 0; r < rank; ++r) sum += all[static_cast<std::size_t>(r) * static_cast<std::size_t>(n) + i];
    out[i] = sum;
  }
#else
  MPI_Request req;
  MPI_Iexscan(in, out, n, MPI_LONG_LONG, MPI_SUM, comm, &req);
  wait_yielding(req);
  if (rank == 0)
    for (int i = 0; i < n; ++i) out[i] = 0;
#endif
}

void alltoallv(const void* send, const int* scount, const int* sdispl, void* recv, const int* rcount,
               const int* rdispl, MPI_Datatype type, MPI_Comm comm) {
#ifdef LOCUS_SMPI
  int n = 1;
  MPI_Comm_size(comm, &n);
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(type, &lb, &extent);
  constexpr int kTag = 0x4c41;  // this exchange's own tag; every call completes before the next
  std::vector<MPI_Request> reqs;
  for (int u = 0; u < n; ++u)
    if (rcount[u] > 0) {
      reqs.emplace_back();
      MPI_Irecv(static_cast<char*>(recv) + rdispl[u] * extent, rcount[u], type, u, kTag, comm, &reqs.back());
    }
  for (int u = 0; u < n; ++u)
    if (scount[u] > 0) {
      reqs.emplace_back();
      MPI_Isend(static_cast<const char*>(send) + sdispl[u] * extent, scount[u], type, u, kTag, comm,
                &reqs.back());
    }
  MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
#else
  MPI_Request req;
  MPI_Ialltoallv(send, scount, sdispl, type, recv, rcount, rdispl, type, comm, &req);
  wait_yielding(req);
#endif
}

bool collective_cleanup_allowed() {
  return std::uncaught_exceptions() == 0 || CollectiveError::alive() > 0;
}

void collective_require(MPI_Comm comm, bool ok, const std::string& msg) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int first_bad = ok ? INT32_MAX : rank;
  locus::yielding::allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, comm);
  if (first_bad == INT32_MAX) return;
  int len = rank == first_bad ? static_cast<int>(msg.size()) : 0;
  locus::yielding::bcast(&len, 1, MPI_INT, first_bad, comm);
  std::string text = rank == first_bad ? msg : std::string(len, '\0');
  locus::yielding::bcast(text.data(), len, MPI_CHAR, first_bad, comm);
  throw CollectiveError(text);
}

void collectively(MPI_Comm comm, const std::function<void()>& fn) {
  std::string msg;
  bool ok = true;
  try {
    fn();
  } catch (const CollectiveError&) {
    throw;
  } catch (const Error& e) {
    ok = false;
    msg = e.what();
  }
  collective_require(comm, ok, msg);
}

}  // namespace locus
