#pragma once
// One-sided communication on global pointers.
//
// Every call takes one route, decided in one place (rma.cpp: choose() for
// transfers, atomic_route() for atomics; the inline path of detail/direct.hpp
// takes the same shared-memory route without the call):
//   same node, comm.locality on       -> load/store on the shared memory;
//                                        small calls inline (detail/direct.hpp)
//   non-blocking, >= runtime.progress.threshold bytes, progress processes
//                                     -> the node's progress process
//   redirection on (async.hpp)        -> the target node's progress process
//   handle-free gets of one element (get_nbi, gather_nbi) on a segment
//   with comm.atomics: aggregate, to another node
//                                     -> a batch that the target's node
//                                        answers (aggregate.hpp)
//   otherwise                         -> MPI RMA on the segment's window
//                                        (comm.window: segment, the default)
//                                        or the team's dynamic window
// Route::mpi forces MPI RMA for one call (the plain MPI-3 baseline, from
// the same code); comm.locality: off does it for all calls.
//
// Atomics take one mechanism per segment (see "atomics" below): CPU atomics
// on the node's shared memory, MPI accumulates, or CPU atomics applied by
// the target's node from batches (comm.atomics: aggregate).
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "locus/counts.hpp"
#include "locus/detail/rma.hpp"
#include "locus/gptr.hpp"
#include "locus/handle.hpp"
#include "locus/team.hpp"

namespace locus {

// Counted requirements (counts.hpp): each call counts once, where it is
// issued: the inline paths here (bytes on my node; CPU atomics), the
// general route in rma.cpp, aggregated records in aggregate.cpp.

// Route per call: same node and comm.locality on -> memcpy on shared
// memory; non-blocking, at least runtime.progress.threshold bytes and
// progress processes on -> the node's progress process (offload);
// otherwise MPI RMA on the segment's window (direct). Route::mpi forces
// direct for one call. Every call below is thread-safe (MPI_THREAD_MULTIPLE):
// several threads of a unit may issue transfers at once.

// ---- blocking: complete (locally and at the target) on return

template <class T>
void get(T* dst, GlobalPtr<T> src, std::size_t count, Route r = Route::automatic) {
  if (r != Route::mpi)
    if (const char* a =
            detail::direct_address(src.team, src.segment, src.unit, src.offset, count * sizeof(T))) {
      std::atomic_thread_fence(std::memory_order_acquire);
      detail::copy_small(dst, a, count * sizeof(T));
      locus::count(Count::bytes_on_node, count * sizeof(T));
      return;
    }
  const Layout l = detail::contiguous_layout(count);
  detail::get_strided(dst, l, detail::target(src, count, "get"), l, sizeof(T), r);
}

template <class T>
void put(GlobalPtr<T> dst, const T* src, std::size_t count, Route r = Route::automatic) {
  if (r != Route::mpi)
    if (char* a = detail::direct_address(dst.team, dst.segment, dst.unit, dst.offset, count * sizeof(T))) {
      detail::copy_small(a, reinterpret_cast<const char*>(src), count * sizeof(T));
      std::atomic_thread_fence(std::memory_order_release);
      locus::count(Count::bytes_on_node, count * sizeof(T));
      return;
    }
  const Layout l = detail::contiguous_layout(count);
  detail::put_strided(detail::target(dst, count, "put"), l, src, l, sizeof(T), r);
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
  const Layout l = detail::contiguous_layout(count);
  return detail::get_strided_async(dst, l, detail::target(src, count, "get_async"), l, sizeof(T), r);
}

template <class T>
Handle put_async(GlobalPtr<T> dst, const T* src, std::size_t count, Route r = Route::automatic) {
  const Layout l = detail::contiguous_layout(count);
  return detail::put_strided_async(detail::target(dst, count, "put_async"), l, src, l, sizeof(T), r);
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

// Hands a request of the application's own non-blocking MPI call
// (MPI_Isend, MPI_Irecv, ...) to locus, APSM-style: with the progress
// thread on (runtime.progress.thread), the thread tests it while the
// application computes, so the transfer advances without MPI calls from the
// application; without the thread, wait/test call MPI on it directly.
// Complete it with wait, wait_all or test like any other handle.
// MPI_REQUEST_NULL gives a handle that is already complete.
Handle adopt(MPI_Request req);

// Completes the operation: data arrived (get) or is visible at the target
// (put, accumulate). Throws Error for a spent, moved-from or empty handle.
void wait(Handle& h);
// Completes every live handle; flushes each (window, target) once, however
// many handles put to it. Spent and empty handles are skipped.
void wait_all(std::vector<Handle>& hs);
// True (and complete, the handle spent) when the operation has finished;
// never blocks on the data.
bool test(Handle& h);

// Completes every operation this unit issued on the team's segments,
// offloaded ones included (data of a staged get reaches its buffer at the
// handle's wait).
void flush(Team& team);
// Memory synchronisation and MPI_Barrier: after it, every unit sees every
// put completed before it, by any path.
void barrier(Team& team);

// ---- atomics (int32_t, int64_t, uint64_t, float, double)
//
// Every atomic on a segment takes one mechanism, fixed when the segment is
// allocated, so any two atomics on one segment are atomic with respect to
// each other:
//   - the whole team on one node, comm.locality on: CPU atomics on the
//     shared memory (no MPI involved), inline for single elements;
//   - a team over several nodes, comm.atomics: mpi (the default): MPI
//     accumulate operations on the segment's window, for local targets too
//     (or through the target's ghost while redirection is on);
//   - comm.atomics: aggregate (or AtomicMode::aggregate at allocation): CPU
//     atomics on same-node targets, and batches to other nodes' units that
//     the target applies with CPU atomics (aggregate.hpp).
// Atomics are not atomic with respect to plain put/get on the same elements
// (as in MPI).

template <class T>
void accumulate(GlobalPtr<T> dst, const T* values, std::size_t count, Op op) {
  if (detail::direct_accumulate(dst, values, count, op)) return;
  const Layout l = detail::contiguous_layout(count);
  Handle h = detail::accumulate_async(detail::target(dst, count, "accumulate"), l, values, l,
                                      detail::mpi_type<T>(), op);
  wait(h);
}

// Strided accumulate: `local` and `remote` have the same shape.
template <class T>
void accumulate(GlobalPtr<T> dst, const Layout& remote, const T* values, const Layout& local, Op op) {
  Handle h = detail::accumulate_async(detail::target(dst, remote.extent(), "accumulate"), remote, values,
                                      local, detail::mpi_type<T>(), op);
  wait(h);
}

// Non-blocking accumulate (element-wise atomic); `values` may not be
// touched until the handle completes.
template <class T>
Handle accumulate_async(GlobalPtr<T> dst, const T* values, std::size_t count, Op op) {
  const Layout l = detail::contiguous_layout(count);
  return detail::accumulate_async(detail::target(dst, count, "accumulate_async"), l, values, l,
                                  detail::mpi_type<T>(), op);
}

template <class T>
Handle accumulate_async(GlobalPtr<T> dst, const Layout& remote, const T* values, const Layout& local, Op op) {
  return detail::accumulate_async(detail::target(dst, remote.extent(), "accumulate_async"), remote, values,
                                  local, detail::mpi_type<T>(), op);
}

template <class T>
T fetch_and_op(GlobalPtr<T> dst, T operand, Op op) {
  if (std::is_integral_v<T> || op != Op::bxor)
    if (char* a = detail::direct_atomic_address(dst.team, dst.segment, dst.unit, dst.offset, sizeof(T),
                                                !std::is_integral_v<T>)) {
      detail::complete_lookahead_if_any();
      locus::count(Count::atomic_fetches, 1);
      return detail::cpu_apply(reinterpret_cast<T*>(a), operand, op);
    }
  T result{};
  detail::fetch_and_op(detail::target(dst, 1, "fetch_and_op"), &operand, &result, detail::mpi_type<T>(), op);
  return result;
}

template <class T>
T compare_and_swap(GlobalPtr<T> dst, T compare, T value) {
  if (char* a = detail::direct_atomic_address(dst.team, dst.segment, dst.unit, dst.offset, sizeof(T), true)) {
    detail::complete_lookahead_if_any();
    locus::count(Count::atomic_fetches, 1);
    // Floating-point values are compared bit for bit (as MPI does).
    using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    Bits expected, desired;
    std::memcpy(&expected, &compare, sizeof(T));
    std::memcpy(&desired, &value, sizeof(T));
    std::atomic_ref<Bits>(*reinterpret_cast<Bits*>(a))
        .compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
    T old;
    std::memcpy(&old, &expected, sizeof(T));
    return old;
  }
  T result{};
  detail::compare_and_swap(detail::target(dst, 1, "compare_and_swap"), &compare, &value, &result,
                           detail::mpi_type<T>());
  return result;
}

// ---- handle-free non-blocking operations (OpenSHMEM's _nbi calls and
// shmem_atomic_*, DART's dart_accumulate + dart_flush)
//
// They return nothing and allocate nothing; flush(team) (every target) or
// flush(team, unit) (one target) completes them: after it, a get's data is
// in its buffer, and a put, accumulate or update is visible at the target.
// Until then put_nbi's source and get_nbi's destination may not be
// touched; accumulate_nbi and atomic_update copy their values. Same node:
// inline, done on return, except a get_nbi of at most 8 bytes and an
// atomic_update, which are done within the thread's next kLookahead such
// calls or at its next flush, barrier or blocking atomic (detail/lookahead.hpp: a
// look-ahead that keeps accesses in flight). Other nodes: MPI RMA without a request, or, on
// segments with aggregated atomics (comm.atomics: aggregate), a record in
// the batch to the target unit (updates, and gets of one element of at
// most 8 bytes: Bale's index-gather).

template <class T>
void put_nbi(GlobalPtr<T> dst, const T* src, std::size_t count) {
  // No fence per call: flush, which completes these, is the fence.
  if (char* a = detail::direct_address(dst.team, dst.segment, dst.unit, dst.offset, count * sizeof(T))) {
    detail::copy_small(a, reinterpret_cast<const char*>(src), count * sizeof(T));
    locus::count(Count::bytes_on_node, count * sizeof(T));
    return;
  }
  detail::put_nbi(detail::target(dst, count, "put_nbi"), src);
}

template <class T>
void get_nbi(T* dst, GlobalPtr<T> src, std::size_t count) {
  if (const char* a =
          detail::direct_address(src.team, src.segment, src.unit, src.offset, count * sizeof(T))) {
    if (count * sizeof(T) <= 8) {
      detail::lookahead_get(dst, a, count * sizeof(T));  // done within kLookahead calls or at flush
    } else {
      detail::complete_lookahead();  // earlier gets first: they may write the same buffer
      std::memcpy(dst, a, count * sizeof(T));
    }
    locus::count(Count::bytes_on_node, count * sizeof(T));
    return;
  }
  if (count * sizeof(T) <= 8 &&
      detail::aggregate_get(dst, src.team, src.segment, src.unit, src.offset, count * sizeof(T)))
    return;
  detail::get_nbi(dst, detail::target(src, count, "get_nbi"));
}

// Index-gather (Bale's ig) in one call: dst[k] = element index[k] of a
// table whose every unit holds `per_unit` elements from `table` on (global
// element g is element g % per_unit of unit g / per_unit; table's own unit
// is not used). Complete at flush, as get_nbi. When every unit is on my
// node, or the segment aggregates its atomics (comm.atomics: aggregate),
// the call buckets the indices itself: same-node elements are loaded at
// once (prefetched ahead), the others become 8-byte requests in the
// batches to their units, with no call, lock or lookup per element.
// Elsewhere it is one get_nbi per element. An index past the table, or a
// unit's part that does not hold the table, is an Error before anything
// moves (always: it costs one compare per element).
template <class T>
void gather_nbi(T* dst, GlobalPtr<T> table, std::size_t per_unit, const std::uint64_t* index, std::size_t n) {
  if (n == 0) return;
  if (sizeof(T) <= 8 &&
      detail::gather_bulk(dst, table.team, table.segment, table.offset, sizeof(T), per_unit, index, n))
    return;
  detail::check_table("gather_nbi", table.team, table.segment, table.offset, sizeof(T), per_unit, index, n);
  const detail::TableIndex at(per_unit);
  for (std::size_t k = 0; k < n; ++k) get_nbi(dst + k, table.at(at.unit(index[k])) + at.element(index[k]), 1);
}

// Element-wise atomic accumulate of `count` values.
template <class T>
void accumulate_nbi(GlobalPtr<T> dst, const T* values, std::size_t count, Op op) {
  if (detail::direct_accumulate(dst, values, count, op)) return;
  detail::accumulate_nbi(detail::target(dst, count, "accumulate_nbi"), values, count, detail::mpi_type<T>(),
                         op);
}

// One atomic update, value by value (shmem_atomic_xor and friends).
template <class T>
void atomic_update(GlobalPtr<T> dst, T value, Op op) {
  if (std::is_integral_v<T> || op != Op::bxor) {
    if (char* a = detail::direct_atomic_address(dst.team, dst.segment, dst.unit, dst.offset, sizeof(T),
                                                !std::is_integral_v<T>)) {
      detail::lookahead_update(a, value, op);  // done within kLookahead calls or at flush
      locus::count(Count::bytes_on_node, sizeof(T), Count::atomic_updates, 1);
      return;
    }
    if (detail::aggregate_update(dst.team, dst.segment, dst.unit, dst.offset, &value, detail::mpi_type<T>(),
                                 op))
      return;
  }
  detail::accumulate_nbi(detail::target(dst, 1, "atomic_update"), &value, 1, detail::mpi_type<T>(), op);
}

// Scatter-update in one call (Bale's histogram; GUPS in bulk): element
// index[k] of the table (laid out as for gather_nbi) becomes op(element,
// values[k]), atomically with respect to the segment's other atomics, for
// every k. Complete at flush, as atomic_update; the values are copied.
// When every unit is on my node (CPU atomics), or the segment aggregates
// its atomics, the call buckets the indices itself: same-node elements
// get relaxed CPU atomics at once (prefetched ahead), the others become
// 16-byte update records in the batches to their units. Elsewhere it is
// one atomic_update per element. The same checks as gather_nbi, before
// anything moves.
template <class T>
void update_nbi(GlobalPtr<T> table, std::size_t per_unit, const std::uint64_t* index, const T* values,
                std::size_t n, Op op) {
  if (n == 0) return;
  if (detail::update_bulk(table.team, table.segment, table.offset, values, detail::mpi_type<T>(), op,
                          per_unit, index, n))
    return;
  detail::check_table("update_nbi", table.team, table.segment, table.offset, sizeof(T), per_unit, index, n);
  const detail::TableIndex at(per_unit);
  for (std::size_t k = 0; k < n; ++k)
    atomic_update(table.at(at.unit(index[k])) + at.element(index[k]), values[k], op);
}

// Completes every handle-free operation this unit issued to `unit` of the
// team (flush(team) completes those to every unit, and the handles' too).
void flush(Team& team, int unit);

// Applies the batches of aggregated operations other units sent to this
// one and sends back what they asked for (comm.atomics: aggregate). Every
// locus call that waits does it; a unit that computes for a long time
// outside locus while others aggregate to it calls it now and then (or
// runs with progress processes, which then apply its batches).
void progress(Team& team);

// ---- notified transfers: producer/consumer synchronisation without a barrier
//
// A flag is a std::uint64_t in a segment that one unit at a time writes
// (its producer) and its owner waits on. notify(flag, v) sets it to v after
// every put, put_async (completed) and put_notify this unit made to the
// flag's unit is visible there; the consumer's wait_notify(flag, v) returns
// once the flag is >= v, and then it sees that data. Same node: a release
// store on the shared memory; other nodes: the data is flushed, then the
// flag is written by an MPI accumulate (replace), completed locally only
// (the next flush to that unit, or MPI progress on either side, completes
// it; accumulates from one origin to one location stay ordered). Use
// growing values (a step count) so that a flag never needs to be reset.
// What a notified exchange costs against MPI two-sided on this machine:
// `./locus bench exchange` (docs/results.md).

void notify(GlobalPtr<std::uint64_t> flag, std::uint64_t value);

// put then notify, in one call (the data is visible when the flag is).
template <class T>
void put_notify(GlobalPtr<T> dst, const Layout& remote, const T* src, const Layout& local,
                GlobalPtr<std::uint64_t> flag, std::uint64_t value) {
  detail::put_strided(detail::target(dst, remote.extent(), "put_notify"), remote, src, local, sizeof(T),
                      Route::automatic);
  notify(flag, value);
}

template <class T>
void put_notify(GlobalPtr<T> dst, const T* src, std::size_t count, GlobalPtr<std::uint64_t> flag,
                std::uint64_t value) {
  const Layout l = detail::contiguous_layout(count);
  put_notify(dst, l, src, l, flag, value);
}

// Waits (yielding, and driving MPI progress) until *flag >= value; flag is
// in this unit's own part of a segment. Returns the flag's value.
std::uint64_t wait_notify(const std::uint64_t* flag, std::uint64_t value);

}  // namespace locus
