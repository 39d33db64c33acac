#include "locus/wait.hpp"

#include <sched.h>

#include "locus/counts.hpp"

namespace locus {

namespace {
// Tests before the first yield: enough for a same-node round trip.
constexpr unsigned kSpins = 64;
}  // namespace

void relax(unsigned& spins) {
  if (++spins > kSpins) sched_yield();
}

void relax_with_progress(unsigned& spins, MPI_Comm comm) {
  if (spins % 4 == 3) {
    int any = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &any, MPI_STATUS_IGNORE);
  }
  relax(spins);
}

#ifdef LOCUS_SMPI
// The SMPI build: the blocking calls. A simulated rank never shares a core,
// SimGrid simulates a blocking wait exactly, and every MPI_Test it answers
// costs simulated time (smpi/test), which a polling loop would pile up.
void wait_yielding(MPI_Request& req) {
  MPI_Wait(&req, MPI_STATUS_IGNORE);
}

void wait_all_yielding(std::vector<MPI_Request>& reqs) {
  MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
}

void wait_each_yielding(std::vector<MPI_Request>& reqs) {
  MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE);
}

void barrier_yielding(MPI_Comm comm) {
  MPI_Barrier(comm);
}

void allreduce_yielding(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm) {
  MPI_Allreduce(send, recv, count, type, op, comm);
}

namespace yielding {
void barrier(MPI_Comm comm) {
  MPI_Barrier(comm);
}
void allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  MPI_Allreduce(send, recv, count, type, op, comm);
}
void reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  MPI_Reduce(send, recv, count, type, op, root, comm);
}
void bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  MPI_Bcast(buf, count, type, root, comm);
}
void gather(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
            int root, MPI_Comm comm) {
  MPI_Gather(send, scount, stype, recv, rcount, rtype, root, comm);
}
void allgather(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
               MPI_Comm comm) {
  MPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
}
void allgatherv(const void* send, int scount, MPI_Datatype stype, void* recv, const int* rcounts,
                const int* displs, MPI_Datatype rtype, MPI_Comm comm) {
  MPI_Allgatherv(send, scount, stype, recv, rcounts, displs, rtype, comm);
}
void alltoall(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
              MPI_Comm comm) {
  MPI_Alltoall(send, scount, stype, recv, rcount, rtype, comm);
}
void comm_dup(MPI_Comm comm, MPI_Comm* out) {
  MPI_Comm_dup(comm, out);
}
}  // namespace yielding
#else
namespace {
// Polls one request by MPI_Test until it completes; `spins` carries over
// between the requests of one wait.
void test_until_done(MPI_Request& req, unsigned& spins) {
  for (int flag = 0;; relax(spins)) {
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag) return;
  }
}
}  // namespace

void wait_yielding(MPI_Request& req) {
  unsigned spins = 0;
  test_until_done(req, spins);
}

// One request alone is tested by MPI_Test: with MPICH 4.0 (ch4:ucx,
// MPI_THREAD_MULTIPLE) a poll by MPI_Testall of one request costs 20 ns
// more, 5 % of an 8-byte exchange. Several are tested together: testing
// them one by one is slower when the first is a receive (a two-rank
// exchange of 8 bytes: 0.437 against 0.406 us).
void wait_all_yielding(std::vector<MPI_Request>& reqs) {
  if (reqs.size() == 1) return wait_yielding(reqs.front());
  int flag = 0;
  for (unsigned spins = 0;; relax(spins)) {
    MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE);
    if (flag) return;
  }
}

void wait_each_yielding(std::vector<MPI_Request>& reqs) {
  unsigned spins = 0;
  for (MPI_Request& r : reqs) test_until_done(r, spins);
}

void barrier_yielding(MPI_Comm comm) {
  count(Count::collectives, 1);
  yielding::barrier(comm);
}

void allreduce_yielding(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                        MPI_Comm comm) {
  locus::count(Count::collectives, 1);
  yielding::allreduce(send, recv, count, type, op, comm);
}

namespace yielding {
namespace {
// Starts a non-blocking collective by start(&request) and waits for it,
// yielding.
template <class Start>
void run(Start&& start) {
  MPI_Request req = MPI_REQUEST_NULL;
  start(&req);
  wait_yielding(req);
}
}  // namespace

void barrier(MPI_Comm comm) {
  run([&](MPI_Request* r) { MPI_Ibarrier(comm, r); });
}
void allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  run([&](MPI_Request* r) { MPI_Iallreduce(send, recv, count, type, op, comm, r); });
}
void reduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
  run([&](MPI_Request* r) { MPI_Ireduce(send, recv, count, type, op, root, comm, r); });
}
void bcast(void* buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  run([&](MPI_Request* r) { MPI_Ibcast(buf, count, type, root, comm, r); });
}
void gather(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
            int root, MPI_Comm comm) {
  run([&](MPI_Request* r) { MPI_Igather(send, scount, stype, recv, rcount, rtype, root, comm, r); });
}
void allgather(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
               MPI_Comm comm) {
  run([&](MPI_Request* r) { MPI_Iallgather(send, scount, stype, recv, rcount, rtype, comm, r); });
}
void allgatherv(const void* send, int scount, MPI_Datatype stype, void* recv, const int* rcounts,
                const int* displs, MPI_Datatype rtype, MPI_Comm comm) {
  run([&](MPI_Request* r) { MPI_Iallgatherv(send, scount, stype, recv, rcounts, displs, rtype, comm, r); });
}
void alltoall(const void* send, int scount, MPI_Datatype stype, void* recv, int rcount, MPI_Datatype rtype,
              MPI_Comm comm) {
  run([&](MPI_Request* r) { MPI_Ialltoall(send, scount, stype, recv, rcount, rtype, comm, r); });
}
void comm_dup(MPI_Comm comm, MPI_Comm* out) {
  run([&](MPI_Request* r) { MPI_Comm_idup(comm, out, r); });
}
}  // namespace yielding
#endif

}  // namespace locus
