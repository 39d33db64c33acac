#pragma once
// One-sided communication on global pointers.
//
// The path is chosen once per call:
//   same node and comm.locality on -> memcpy on the shared-memory window
//   otherwise                      -> MPI_Rget / MPI_Put, MPI_Rput on the
//                                     team's dynamic window; gets complete
//                                     by a yielding wait on the request,
//                                     puts by a flush
// Route::mpi forces the MPI path for one call (the plain MPI-3 RMA
// baseline, from the same code); comm.locality: off does it for all calls.
//
// Atomics (accumulate, fetch_and_op, compare_and_swap) always use MPI on the
// dynamic window, local target or not, so that every atomic operation on a
// segment is atomic with respect to the others.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "locus/gptr.hpp"
#include "locus/team.hpp"

namespace locus {

enum class Route { automatic, mpi };

// A strided region, in elements: `rows` rows, each `count` blocks of `block`
// contiguous elements, `stride` apart; rows `row_stride` apart.
struct Layout {
  std::size_t block = 0;
  std::size_t count = 1;
  std::size_t stride = 0;
  std::size_t rows = 1;
  std::size_t row_stride = 0;
  std::size_t elements() const { return block * count * rows; }
  // Elements from the first to one past the last.
  std::size_t extent() const;
  bool operator<(const Layout& o) const;
  bool operator==(const Layout& o) const = default;
};

// A non-blocking operation in flight. Completed by wait/wait_all/test.
// It is either an MPI request (direct path; registered with the progress
// thread when one runs) or a command executed by a progress process.
class Handle {
 public:
  bool done() const { return req_ == MPI_REQUEST_NULL && slot_ < 0 && reg_ < 0; }
  // True when a progress process carries the operation.
  bool offloaded() const { return slot_ >= 0; }

 private:
  friend struct HandleAccess;
  MPI_Request req_ = MPI_REQUEST_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  int target_ = -1;
  bool put_ = false;
  std::int32_t slot_ = -1;  // progress-process completion slot
  std::int32_t reg_ = -1;   // progress-thread registry entry
  std::uint32_t esize_ = 0;
  std::uint64_t staged_ = 0, staged_bytes_ = 0;  // staging-area offset and size
  void* unpack_ = nullptr;                       // staged get: copied out to here at completion
  Layout unpack_layout_{};
};

enum class Op { sum, min, max, replace };

namespace detail {
struct Target {
  SegmentInfo* seg;
  Team* team;
  int unit;
  std::uint64_t offset;
};
Target resolve(int team, int segment, int unit, std::uint64_t offset, std::size_t bytes, const char* what);

void get_bytes(void* dst, const Target& t, std::size_t bytes, Route r);
void put_bytes(const Target& t, const void* src, std::size_t bytes, Route r);
Handle get_bytes_async(void* dst, const Target& t, std::size_t bytes, Route r);
Handle put_bytes_async(const Target& t, const void* src, std::size_t bytes, Route r);
void get_strided(void* dst, const Layout& local, const Target& t, const Layout& remote, std::size_t esize,
                 Route r);
Handle get_strided_async(void* dst, const Layout& local, const Target& t, const Layout& remote,
                         std::size_t esize, Route r);
void put_strided(const Target& t, const Layout& remote, const void* src, const Layout& local,
                 std::size_t esize, Route r);
Handle put_strided_async(const Target& t, const Layout& remote, const void* src, const Layout& local,
                         std::size_t esize, Route r);

void accumulate(const Target& t, const void* src, std::size_t count, MPI_Datatype type, Op op);
void fetch_and_op(const Target& t, const void* operand, void* result, MPI_Datatype type, Op op);
void compare_and_swap(const Target& t, const void* compare, const void* value, void* result,
                      MPI_Datatype type);

template <class T>
Target target(const GlobalPtr<T>& p, std::size_t count, const char* what) {
  return resolve(p.team, p.segment, p.unit, p.offset, count * sizeof(T), what);
}
template <class T>
MPI_Datatype mpi_type();
template <>
inline MPI_Datatype mpi_type<std::int32_t>() {
  return MPI_INT32_T;
}
template <>
inline MPI_Datatype mpi_type<std::int64_t>() {
  return MPI_INT64_T;
}
template <>
inline MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
}  // namespace detail

// ---- blocking: complete (locally and at the target) on return

template <class T>
void get(T* dst, GlobalPtr<T> src, std::size_t count, Route r = Route::automatic) {
  detail::get_bytes(dst, detail::target(src, count, "get"), count * sizeof(T), r);
}

template <class T>
void put(GlobalPtr<T> dst, const T* src, std::size_t count, Route r = Route::automatic) {
  detail::put_bytes(detail::target(dst, count, "put"), src, count * sizeof(T), r);
}

// Strided: the local and remote layouts describe the same number of elements.
template <class T>
void get(T* dst, const Layout& local, GlobalPtr<T> src, const Layout& remote, Route r = Route::automatic) {
  detail::get_strided(dst, local, detail::target(src, remote.extent(), "get"), remote, sizeof(T), r);
}

template <class T>
void put(GlobalPtr<T> dst, const Layout& remote, const T* src, const Layout& local,
         Route r = Route::automatic) {
  detail::put_strided(detail::target(dst, remote.extent(), "put"), remote, src, local, sizeof(T), r);
}

// ---- non-blocking: the buffers may not be touched until the handle completes

template <class T>
Handle get_async(T* dst, GlobalPtr<T> src, std::size_t count, Route r = Route::automatic) {
  return detail::get_bytes_async(dst, detail::target(src, count, "get_async"), count * sizeof(T), r);
}

template <class T>
Handle put_async(GlobalPtr<T> dst, const T* src, std::size_t count, Route r = Route::automatic) {
  return detail::put_bytes_async(detail::target(dst, count, "put_async"), src, count * sizeof(T), r);
}

template <class T>
Handle get_async(T* dst, const Layout& local, GlobalPtr<T> src, const Layout& remote,
                 Route r = Route::automatic) {
  return detail::get_strided_async(dst, local, detail::target(src, remote.extent(), "get_async"), remote,
                                   sizeof(T), r);
}

template <class T>
Handle put_async(GlobalPtr<T> dst, const Layout& remote, const T* src, const Layout& local,
                 Route r = Route::automatic) {
  return detail::put_strided_async(detail::target(dst, remote.extent(), "put_async"), remote, src, local,
                                   sizeof(T), r);
}

// Completes the operation: data arrived (get) or is visible at the target (put).
void wait(Handle& h);
void wait_all(std::vector<Handle>& hs);
// True (and complete) when the operation has finished; never blocks on the data.
bool test(Handle& h);

// Completes every operation this unit issued on the team's window,
// offloaded ones included (data of a staged get reaches its buffer at the
// handle's wait).
void flush(Team& team);
// Memory synchronisation and MPI_Barrier: after it, every unit sees every
// put completed before it, by any path.
void barrier(Team& team);

// ---- atomics (int32_t, int64_t, double)

template <class T>
void accumulate(GlobalPtr<T> dst, const T* values, std::size_t count, Op op) {
  detail::accumulate(detail::target(dst, count, "accumulate"), values, count, detail::mpi_type<T>(), op);
}

template <class T>
T fetch_and_op(GlobalPtr<T> dst, T operand, Op op) {
  T result{};
  detail::fetch_and_op(detail::target(dst, 1, "fetch_and_op"), &operand, &result, detail::mpi_type<T>(), op);
  return result;
}

template <class T>
T compare_and_swap(GlobalPtr<T> dst, T compare, T value) {
  T result{};
  detail::compare_and_swap(detail::target(dst, 1, "compare_and_swap"), &compare, &value, &result,
                           detail::mpi_type<T>());
  return result;
}

// Frees the MPI datatypes cached for strided transfers (the runtime calls it).
void release_datatype_cache();

}  // namespace locus
