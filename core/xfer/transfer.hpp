#pragma once
// Internal: the executors of the one-sided core.
//
// A transfer's path is decided once (rma.cpp, choose(): shared memory,
// direct MPI, offload to my node's progress process, or redirect to the
// target node's; an atomic's by atomic_route(): CPU atomics, an aggregated
// batch, MPI accumulate, or redirect); then one executor moves the data. The application units and the
// progress servers run the same executors, so the memcpy-or-MPI choice, the chunking of huge transfers and
// the datatype of a strided layout exist once.
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "locus/datatype.hpp"
#include "locus/detail/ref.hpp"
#include "locus/gptr.hpp"
#include "locus/handle.hpp"
#include "locus/team.hpp"
#include "mem/segment_table.hpp"

namespace locus::detail {

// A global pointer's target, resolved: its segment record and team.
struct Target {
  SegmentInfo* seg;
  Team* team;
  int unit;
  std::uint64_t offset;
};
// Looks up the segment and checks the unit and the bounds (comm.check, or
// always in debug builds). Thread-safe.
Target resolve(int team, int segment, int unit, std::uint64_t offset, std::size_t bytes, const char* what);
inline Target resolve(const Ref& r) {
  return resolve(r.team, r.segment, r.unit, r.offset, r.bytes, r.what);
}

// The general route's calls on a resolved target (rma.hpp declares the
// same on a Ref, for the inline templates).
void get_strided(void* dst, const Layout& local, const Target& t, const Layout& remote, std::size_t esize,
                 Route r);
Handle get_strided_async(void* dst, const Layout& local, const Target& t, const Layout& remote,
                         std::size_t esize, Route r);
void put_strided(const Target& t, const Layout& remote, const void* src, const Layout& local,
                 std::size_t esize, Route r);
Handle put_strided_async(const Target& t, const Layout& remote, const void* src, const Layout& local,
                         std::size_t esize, Route r);
Handle accumulate_async(const Target& t, const Layout& remote, const void* src, const Layout& local,
                        MPI_Datatype type, Op op);
void fetch_and_op(const Target& t, const void* operand, void* result, MPI_Datatype type, Op op);
void compare_and_swap(const Target& t, const void* compare, const void* value, void* result,
                      MPI_Datatype type);
void notify(const Target& flag, std::uint64_t value);
void put_nbi(const Target& t, const void* src, std::size_t bytes);
void get_nbi(void* dst, const Target& t, std::size_t bytes);
void accumulate_nbi(const Target& t, const void* values, std::size_t count, MPI_Datatype type, Op op);

// The remote side of a transfer, resolved: a same-node address (move by
// memcpy) or a rank and displacement in an MPI window.
struct Endpoint {
  char* shared = nullptr;  // non-null: same node, the route is shared memory
  MPI_Win win = MPI_WIN_NULL;
  int rank = -1;
  MPI_Aint disp = 0;
  SegmentInfo* seg = nullptr;  // whose `unflushed` an MPI operation here sets
  // Call after issuing an MPI operation at this endpoint: flush(team) then
  // flushes the segment's window (after the call, so that a concurrent
  // flush that clears the mark cannot miss the operation).
  void issued() const {
    if (seg) seg->unflushed.store(true, std::memory_order_release);
  }
};

// The one route decision of the core (rma.cpp). Every caller -- get/put,
// the handle-free calls, transfer plans -- asks these, so the memcpy-or-MPI
// choice, redirection and the endpoint of a unit exist once.
enum class Path { shared, direct, offload, redirect };
// True when the target's part lies on my node (whatever comm.locality says).
bool same_node(const Target& t);
// The path of a get/put of `bytes` (async: non-blocking with a handle, so
// a progress process may take it).
Path choose(const Target& t, Route r, std::size_t bytes, bool async);
// Where a transfer on that path goes: a same-node address, or a window,
// rank and displacement (the unit's, or its node's ghost's).
Endpoint endpoint(const Target& t, Path p);
// Atomics: one mechanism per segment (segment_table.hpp).
enum class AtomicPath { cpu, aggregate, mpi, redirect };
AtomicPath atomic_route(const Target& t);
// The MPI path of an atomic (direct or redirect).
Path atomic_path(const Target& t);
// The one bounds rule: [offset, offset + bytes) must lie in the unit's
// part. The message (empty when in bounds) names the segment, the unit and
// the part's size; the units check under comm.check or in debug builds,
// plans once when built, progress processes on every command.
std::string bounds_problem(const char* what, int team, int segment, int unit, std::uint64_t offset,
                           std::size_t bytes, std::size_t part);

// What an executor started. Complete at once when req is null and flush is
// false (shared memory). Otherwise complete when req is (for a get: the
// data is here) and, if flush, after MPI_Win_flush(rank, win) (a put is
// visible at the target; request-less pieces of huge transfers).
struct Started {
  MPI_Request req = MPI_REQUEST_NULL;
  bool flush = false;
  int rc = MPI_SUCCESS;  // the MPI error code (windows with MPI_ERRORS_RETURN)
  bool complete() const { return req == MPI_REQUEST_NULL && !flush; }
};

// Starts a get (into origin) or a put (from origin) of `local` elements of
// `esize` bytes, laid out at the endpoint as `remote` (same shape).
Started start_transfer(bool get, char* origin, const Layout& local, const Endpoint& e, const Layout& remote,
                       std::size_t esize);

// Strided copy between two layouts of the same shape.
void copy_strided(char* dst, const Layout& dl, const char* src, const Layout& sl, std::size_t esize);
// The cached MPI datatype of a layout over `base` (MPI_BYTE: `esize`-byte
// elements as bytes; a predefined type of `esize` bytes for accumulates).
// Thread-safe.
MPI_Datatype layout_type(const Layout& l, std::size_t esize, MPI_Datatype base = MPI_BYTE);
// MPI datatypes of strided layouts, built once (layout_type) and freed
// with the runtime, before MPI_Finalize (the core's state, `types`).
struct TypeCache {
  using Key = std::tuple<Layout, std::size_t, MPI_Datatype>;
  std::mutex m;
  std::map<Key, Datatype> types;
};
// A dense layout of the same shape.
Layout packed(const Layout& l);
bool contiguous(const Layout& l);

// Completes locally the handle-free accumulates whose values this thread
// keeps (flush does it too), so that no window they went to is remembered:
// segment free calls it before the segment's window goes (Open MPI
// crashed in MPI_Win_flush_local_all on a freed window).
void recycle_values();

// The MPI library's text for an error code.
std::string mpi_error_text(int rc);

// The communication-ratio profile (async.hpp, auto mode): nanoseconds
// spent in the core's communication calls, counted only while measuring.
// add_comm_ns adds to the runtime's count (comm/comm_state.hpp).
void add_comm_ns(std::uint64_t ns);
class CommScope {
 public:
  CommScope() : on_(g_direct.measuring.load(std::memory_order_relaxed)) {
    if (on_) t0_ = std::chrono::steady_clock::now();
  }
  ~CommScope() {
    if (on_)
      add_comm_ns(static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_)
              .count()));
  }
  CommScope(const CommScope&) = delete;
  CommScope& operator=(const CommScope&) = delete;

 private:
  bool on_;
  std::chrono::steady_clock::time_point t0_{};
};

// MPI counts are ints: contiguous transfers beyond this go in pieces.
constexpr std::size_t kChunk = std::size_t(1) << 30;

}  // namespace locus::detail
