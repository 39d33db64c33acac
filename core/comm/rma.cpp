#include "locus/rma.hpp"

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <vector>

#include "comm/aggregate.hpp"
#include "comm/calls.hpp"
#include "comm/comm_state.hpp"
#include "locus/counts.hpp"
#include "locus/datatype.hpp"
#include "locus/wait.hpp"
#include "mem/htm.hpp"
#include "mem/shared_pages.hpp"
#include "mem/stripe_locks.hpp"
#include "progress/progress_engine.hpp"
#include "progress/progress_thread.hpp"
#include "xfer/transfer.hpp"

namespace locus {

namespace {

using detail::CommScope;
using detail::Endpoint;
using detail::Started;
using detail::Target;

}  // namespace

namespace {

using detail::atomic_path;
using detail::atomic_route;
using detail::AtomicPath;
using detail::choose;
using detail::endpoint;
using detail::Path;
using detail::same_node;

detail::Aggregator& target_aggregator(const Target& t) {
  return *detail::aggregator_of(*t.team);
}

void check_shapes(const Layout& a, const Layout& b) {
  if (a.block != b.block || a.count != b.count || a.rows != b.rows)
    throw Error(
        "strided transfer: local and remote layouts must have the same block, count and rows "
        "(strides may differ)");
}

void check_rc(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(std::string(what) + ": " + detail::mpi_error_text(rc));
}

// Counted requirements (counts.hpp) of the general route, at the unit
// that issues the call, whoever moves the data (a progress process takes
// an offloaded transfer, a ghost a redirected one): the payload's bytes by
// where the target unit is, and the MPI calls the route issues.
// MPI calls of a transfer of `bytes` over these layouts (start_transfer:
// pieces of at most kChunk when dense and larger).
std::uint64_t mpi_calls(const Layout& local, const Layout& remote, std::size_t bytes) {
  if (!detail::contiguous(local) || !detail::contiguous(remote) || bytes <= detail::kChunk) return 1;
  return (bytes + detail::kChunk - 1) / detail::kChunk;
}
void count_transfer(const Target& t, const Layout& local, const Layout& remote, std::size_t esize, Path p) {
  const std::size_t bytes = local.elements() * esize;
  count_bytes(same_node(t), bytes);
  const bool shm =
      p == Path::shared || (p == Path::offload && (*detail::core().settings).locality && same_node(t));
  if (!shm) locus::count(Count::rma_ops, mpi_calls(local, remote, bytes));
}

// Completes what an executor started, blocking (yielding).
void complete(Started& s, const Endpoint& e) {
  if (s.req != MPI_REQUEST_NULL) wait_yielding(s.req);
  if (s.flush) MPI_Win_flush(e.rank, e.win);
}

// Hands a transfer to the progress process; false when it cannot take it.
bool offload(detail::CommandKind kind, void* origin, const Layout& local, const Target& t,
             const Layout& remote, std::size_t esize, Handle& h) {
  const bool shm = (*detail::core().settings).locality && same_node(t);
  return detail::progress_engine()->submit(kind, origin, local, t.team->id(), t.seg->id, t.unit, t.offset,
                                           remote, esize, shm, h);
}

Handle transfer_async(bool get, void* origin, const Layout& local, const Target& t, const Layout& remote,
                      std::size_t esize, Route r) {
  detail::CommScope timed;
  check_shapes(local, remote);
  if (local.elements() == 0) return HandleAccess::ready();
  Path p = choose(t, r, local.elements() * esize, true);
  count_transfer(t, local, remote, esize, p);
  if (p == Path::offload) {
    Handle h;
    if (offload(get ? detail::CommandKind::get : detail::CommandKind::put, origin, local, t, remote, esize,
                h))
      return h;
    p = choose(t, r, 0, false);
  }
  const Endpoint e = endpoint(t, p);
  Started s = detail::start_transfer(get, static_cast<char*>(origin), local, e, remote, esize);
  check_rc(s.rc, get ? "get" : "put");
  return detail::make_handle(s, e);
}

void transfer(bool get, void* origin, const Layout& local, const Target& t, const Layout& remote,
              std::size_t esize, Route r) {
  CommScope timed;
  check_shapes(local, remote);
  if (local.elements() == 0) return;
  const Path p = choose(t, r, 0, false);
  count_transfer(t, local, remote, esize, p);
  const Endpoint e = endpoint(t, p);
  Started s = detail::start_transfer(get, static_cast<char*>(origin), local, e, remote, esize);
  check_rc(s.rc, get ? "get" : "put");
  complete(s, e);
}

MPI_Op mpi_op(Op op) {
  switch (op) {
    case Op::sum:
      return MPI_SUM;
    case Op::min:
      return MPI_MIN;
    case Op::max:
      return MPI_MAX;
    case Op::replace:
      return MPI_REPLACE;
    case Op::bxor:
      return MPI_BXOR;
  }
  return MPI_SUM;
}

// ---- CPU atomics

template <class F>
void dispatch(MPI_Datatype type, F&& f) {
  if (type == MPI_INT32_T)
    f(std::int32_t{});
  else if (type == MPI_INT64_T)
    f(std::int64_t{});
  else if (type == MPI_UINT64_T)
    f(std::uint64_t{});
  else if (type == MPI_FLOAT)
    f(float{});
  else if (type == MPI_DOUBLE)
    f(double{});
  else
    throw Error("atomics: unsupported element type");
}

std::size_t type_size(MPI_Datatype type) {
  if (type == MPI_INT32_T || type == MPI_FLOAT) return 4;
  if (type == MPI_INT64_T || type == MPI_UINT64_T || type == MPI_DOUBLE) return 8;
  int size = 0;
  MPI_Type_size(type, &size);
  return static_cast<std::size_t>(size);
}

void check_op(MPI_Datatype type, Op op, const char* what) {
  if (op == Op::bxor && (type == MPI_FLOAT || type == MPI_DOUBLE))
    throw Error(std::string(what) + ": Op::bxor needs an integer element type");
}

}  // namespace

namespace detail {

void get_strided(void* dst, const Layout& local, const Ref& r, const Layout& remote, std::size_t esize,
                 Route route) {
  get_strided(dst, local, resolve(r), remote, esize, route);
}
Handle get_strided_async(void* dst, const Layout& local, const Ref& r, const Layout& remote,
                         std::size_t esize, Route route) {
  return get_strided_async(dst, local, resolve(r), remote, esize, route);
}
void put_strided(const Ref& r, const Layout& remote, const void* src, const Layout& local, std::size_t esize,
                 Route route) {
  put_strided(resolve(r), remote, src, local, esize, route);
}
Handle put_strided_async(const Ref& r, const Layout& remote, const void* src, const Layout& local,
                         std::size_t esize, Route route) {
  return put_strided_async(resolve(r), remote, src, local, esize, route);
}
Handle accumulate_async(const Ref& r, const Layout& remote, const void* src, const Layout& local,
                        MPI_Datatype type, Op op) {
  return accumulate_async(resolve(r), remote, src, local, type, op);
}
void fetch_and_op(const Ref& r, const void* operand, void* result, MPI_Datatype type, Op op) {
  fetch_and_op(resolve(r), operand, result, type, op);
}
void compare_and_swap(const Ref& r, const void* compare, const void* value, void* result, MPI_Datatype type) {
  compare_and_swap(resolve(r), compare, value, result, type);
}
void put_nbi(const Ref& r, const void* src) {
  put_nbi(resolve(r), src, r.bytes);
}
void get_nbi(void* dst, const Ref& r) {
  get_nbi(dst, resolve(r), r.bytes);
}
void accumulate_nbi(const Ref& r, const void* values, std::size_t count, MPI_Datatype type, Op op) {
  accumulate_nbi(resolve(r), values, count, type, op);
}

void get_strided(void* dst, const Layout& local, const Target& t, const Layout& remote, std::size_t esize,
                 Route r) {
  transfer(true, dst, local, t, remote, esize, r);
}

Handle get_strided_async(void* dst, const Layout& local, const Target& t, const Layout& remote,
                         std::size_t esize, Route r) {
  return transfer_async(true, dst, local, t, remote, esize, r);
}

void put_strided(const Target& t, const Layout& remote, const void* src, const Layout& local,
                 std::size_t esize, Route r) {
  transfer(false, const_cast<void*>(src), local, t, remote, esize, r);
}

Handle put_strided_async(const Target& t, const Layout& remote, const void* src, const Layout& local,
                         std::size_t esize, Route r) {
  return transfer_async(false, const_cast<void*>(src), local, t, remote, esize, r);
}

namespace {
// One run of n contiguous elements by one(dst + k, v[k]), a relaxed CPU
// atomic (relaxed_update's; the caller fences once after all runs). A
// locked instruction waits for its line, so an out-of-cache run would go
// one miss at a time: every line is prefetched for writing 16 lines ahead.
// Runs shorter than this take the per-element atomics even with comm.htm:
// a transaction pays off from a few elements on, and a run of one or two
// is an atomic_update's job.
constexpr std::size_t kHtmMinRun = 4;

template <class T, class One>
void cpu_accumulate_run(T* dst, const T* v, std::size_t n, const One& one) {
  constexpr std::size_t kLine = 64 / sizeof(T), kAhead = 16 * kLine;
  for (std::size_t k = 0; k < n; ++k) {
    if (k % kLine == 0 && k + kAhead < n) __builtin_prefetch(dst + k + kAhead, 1, 3);
    one(dst + k, v[k]);
  }
}

// The stripe locks of t's part (comm.fp_locks: mem/stripe_locks.hpp), or
// nullptr where the segment has none.
char* stripe_area(const Target& t) {
  if (!t.seg->fp_locks) return nullptr;
  const auto u = static_cast<std::size_t>(t.unit);
  return detail::stripe_area(t.seg->peer[u], t.seg->bytes[u]);
}

// A run of n elements from byte `offset` of a part (dst its first element)
// by plain operations under the stripe locks at `area`; the operands at
// `in`, in any alignment.
template <class T>
void locked_run(char* area, std::uint64_t offset, T* dst, const char* in, std::size_t n, Op op) {
  plain_update<T>(op, [&](auto plain) {
    locked_pieces(area, offset, sizeof(T), n, [&](std::size_t k, std::size_t m) {
      for (std::size_t i = k; i < k + m; ++i) {
        T v;
        std::memcpy(&v, in + i * sizeof(T), sizeof v);
        plain(dst[i], v);
      }
    });
  });
}
}  // namespace

Handle accumulate_async(const Target& t, const Layout& remote, const void* src, const Layout& local,
                        MPI_Datatype type, Op op) {
  check_shapes(local, remote);
  check_op(type, op, "accumulate");
  if (local.elements() == 0) return HandleAccess::ready();
  CommScope timed;
  const std::size_t esize = type_size(type);
  const AtomicPath path = atomic_route(t);
  if (path == AtomicPath::aggregate) {
    // Element by element into the batch, then completed here: a handle
    // stands for one operation (accumulate_nbi is the batched call).
    const char* in = static_cast<const char*>(src);
    detail::Aggregator& agg = target_aggregator(t);
    for (std::size_t r = 0; r < local.rows; ++r)
      for (std::size_t c = 0; c < local.count; ++c)
        for (std::size_t k = 0; k < local.block; ++k) {
          Target e = t;
          e.offset += (r * remote.row_stride + c * remote.stride + k) * esize;
          agg.update(e, in + (r * local.row_stride + c * local.stride + k) * esize, type, op);
        }
    agg.flush(t.unit);
    return HandleAccess::ready();
  }
  if (path == AtomicPath::cpu) {
    char* base = detail::cpu_address(t);
    const char* in = static_cast<const char*>(src);
    const bool htm = (*detail::core().settings).htm && local.block >= kHtmMinRun;
    char* area = stripe_area(t);
    dispatch(type, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (stripe_locked<T>())
        if (area) {  // comm.fp_locks: each run under its stripes' locks
          for (std::size_t r = 0; r < local.rows; ++r)
            for (std::size_t c = 0; c < local.count; ++c) {
              const std::size_t at = r * remote.row_stride + c * remote.stride;
              locked_run(area, t.offset + at * sizeof(T), reinterpret_cast<T*>(base) + at,
                         in + (r * local.row_stride + c * local.stride) * sizeof(T), local.block, op);
            }
          return;
        }
      relaxed_update<T>(op, [&](auto one) {
        auto runs = [&](auto&& run) {
          for (std::size_t r = 0; r < local.rows; ++r)
            for (std::size_t c = 0; c < local.count; ++c)
              run(reinterpret_cast<T*>(base) + r * remote.row_stride + c * remote.stride,
                  reinterpret_cast<const T*>(in) + r * local.row_stride + c * local.stride);
        };
        if (htm)
          plain_update<T>(op, [&](auto plain) {
            runs([&](T* dst, const T* v) { transactional_run(dst, v, local.block, plain, one); });
          });
        else
          runs([&](T* dst, const T* v) { cpu_accumulate_run(dst, v, local.block, one); });
      });
    });
    std::atomic_thread_fence(std::memory_order_release);
    locus::count(Count::bytes_on_node, local.elements() * esize, Count::atomic_updates, local.elements());
    return HandleAccess::ready();
  }
  // (aggregated: Aggregator::update counted each element)
  count_bytes(same_node(t), local.elements() * esize);
  locus::count(Count::atomic_updates, local.elements(), Count::rma_ops, 1);
  const Endpoint e = endpoint(t, atomic_path(t));
  int n = 1;
  MPI_Datatype lt = type, rt = type;
  if (contiguous(local) && contiguous(remote)) {
    if (local.elements() > static_cast<std::size_t>(INT_MAX))
      throw Error("accumulate: more than " + std::to_string(INT_MAX) + " elements in one call");
    n = static_cast<int>(local.elements());
  } else {
    lt = layout_type(local, esize, type);
    rt = layout_type(remote, esize, type);
  }
  Started s;
  s.rc = MPI_Raccumulate(src, n, lt, e.rank, e.disp, n, rt, mpi_op(op), e.win, &s.req);
  e.issued();
  s.flush = true;
  check_rc(s.rc, "accumulate");
  return detail::make_handle(s, e);
}

void fetch_and_op(const Target& t, const void* operand, void* result, MPI_Datatype type, Op op) {
  check_op(type, op, "fetch_and_op");
  CommScope timed;
  const AtomicPath path = atomic_route(t);
  if (path == AtomicPath::aggregate) {
    target_aggregator(t).fetch(t, operand, result, type, op);
    return;
  }
  if (path == AtomicPath::cpu) {
    dispatch(type, [&](auto zero) {
      using T = decltype(zero);
      T v;
      std::memcpy(&v, operand, sizeof v);
      T* p = reinterpret_cast<T*>(detail::cpu_address(t));
      T old;
      if (char* area = stripe_locked<T>() ? stripe_area(t) : nullptr) {  // comm.fp_locks
        StripeGuard hold(area, t.offset);
        old = *p;
        plain_update<T>(op, [&](auto plain) { plain(*p, v); });
      } else {
        old = cpu_apply(p, v, op);
      }
      std::memcpy(result, &old, sizeof old);
    });
    locus::count(Count::atomic_fetches, 1);
    return;
  }
  locus::count(Count::atomic_fetches, 1, Count::rma_ops, 1);
  // MPI_Rget_accumulate is the request form of MPI_Fetch_and_op: its
  // completion means the old value arrived, so the update was applied.
  const Endpoint e = endpoint(t, atomic_path(t));
  MPI_Request req;
  MPI_Rget_accumulate(operand, 1, type, result, 1, type, e.rank, e.disp, 1, type, mpi_op(op), e.win, &req);
  wait_yielding(req);
}

void compare_and_swap(const Target& t, const void* compare, const void* value, void* result,
                      MPI_Datatype type) {
  // Doubles are compared bit for bit as 64-bit integers (MPI allows only
  // integer types in MPI_Compare_and_swap).
  if (type == MPI_DOUBLE) type = MPI_INT64_T;
  if (type == MPI_FLOAT) type = MPI_INT32_T;
  CommScope timed;
  const AtomicPath path = atomic_route(t);
  if (path == AtomicPath::aggregate) {
    target_aggregator(t).compare_and_swap(t, compare, value, result, type);
    return;
  }
  if (path == AtomicPath::cpu) {
    auto cas = [&](auto zero) {
      using T = decltype(zero);
      T expected, desired;
      std::memcpy(&expected, compare, sizeof expected);
      std::memcpy(&desired, value, sizeof desired);
      maybe_locked(stripe_area(t), t.offset, [&] {  // comm.fp_locks: under the lock
        std::atomic_ref<T>(*reinterpret_cast<T*>(detail::cpu_address(t)))
            .compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
      });
      std::memcpy(result, &expected, sizeof expected);
    };
    if (type == MPI_INT32_T)
      cas(std::int32_t{});
    else
      cas(std::int64_t{});
    locus::count(Count::atomic_fetches, 1);
    return;
  }
  locus::count(Count::atomic_fetches, 1, Count::rma_ops, 1);
  const Endpoint e = endpoint(t, atomic_path(t));
  // (SimGrid's SMPI declares compare_addr without const)
  MPI_Compare_and_swap(value, const_cast<void*>(compare), result, type, e.rank, e.disp, e.win);
  MPI_Win_flush(e.rank, e.win);
}

namespace {
// Values of handle-free MPI accumulates, which must outlive the call until
// a local completion: a per-thread arena, recycled after flush_local_all on
// the windows it fed (or after a flush).
struct ValueArena {
  std::vector<std::uint64_t> words = std::vector<std::uint64_t>(8192);
  std::size_t used = 0;
  std::vector<MPI_Win> wins;
  // Waits until every value handed to MPI may be reused.
  void recycle() {
    for (MPI_Win w : wins) MPI_Win_flush_local_all(w);
    used = 0;
    wins.clear();
  }
};
ValueArena& value_arena() {
  thread_local ValueArena a;
  return a;
}
}  // namespace

void recycle_values() {
  value_arena().recycle();
}

namespace {
void* arena_copy(const void* values, std::size_t bytes, MPI_Win win) {
  ValueArena& a = value_arena();
  const std::size_t words = (bytes + 7) / 8;
  if (a.used + words > a.words.size()) a.recycle();
  if (words > a.words.size()) a.words.resize(words);
  if (a.wins.empty() || a.wins.back() != win) a.wins.push_back(win);
  void* p = a.words.data() + a.used;
  a.used += words;
  std::memcpy(p, values, bytes);
  return p;
}
}  // namespace

// Contiguous bytes by MPI_Get/MPI_Put without a request (a flush completes
// them), in pieces of at most kChunk.
int move_nbi(bool get, char* origin, std::size_t bytes, const Endpoint& e) {
  int rc = MPI_SUCCESS;
  for (std::size_t done = 0; done < bytes && rc == MPI_SUCCESS; done += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, bytes - done));
    const MPI_Aint d = e.disp + static_cast<MPI_Aint>(done);
    rc = get ? MPI_Get(origin + done, n, MPI_BYTE, e.rank, d, n, MPI_BYTE, e.win)
             : MPI_Put(origin + done, n, MPI_BYTE, e.rank, d, n, MPI_BYTE, e.win);
  }
  e.issued();
  return rc;
}

void put_nbi(const Target& t, const void* src, std::size_t bytes) {
  CommScope timed;
  const Endpoint e = endpoint(t, choose(t, Route::local, bytes, false));
  count_bytes(same_node(t), bytes);
  if (e.shared) {
    std::memcpy(e.shared, src, bytes);
    std::atomic_thread_fence(std::memory_order_release);
    return;
  }
  locus::count(Count::rma_ops, (bytes + kChunk - 1) / kChunk);
  check_rc(move_nbi(false, const_cast<char*>(static_cast<const char*>(src)), bytes, e), "put_nbi");
}

void get_nbi(void* dst, const Target& t, std::size_t bytes) {
  CommScope timed;
  if (t.seg->cpu_atomics && !same_node(t) && bytes <= 8 && !t.seg->redirect) {
    target_aggregator(t).get(dst, t, bytes);
    return;
  }
  const Endpoint e = endpoint(t, choose(t, Route::local, bytes, false));
  count_bytes(same_node(t), bytes);
  if (e.shared) {
    std::atomic_thread_fence(std::memory_order_acquire);
    std::memcpy(dst, e.shared, bytes);
    return;
  }
  locus::count(Count::rma_ops, (bytes + kChunk - 1) / kChunk);
  // No request: a flush completes it.
  check_rc(move_nbi(true, static_cast<char*>(dst), bytes, e), "get_nbi");
}

void accumulate_nbi(const Target& t, const void* values, std::size_t count, MPI_Datatype type, Op op) {
  check_op(type, op, "accumulate_nbi");
  if (count == 0) return;
  CommScope timed;
  const std::size_t esize = type_size(type);
  const char* in = static_cast<const char*>(values);
  switch (atomic_route(t)) {
    case AtomicPath::cpu:
      dispatch(type, [&](auto zero) {
        using T = decltype(zero);
        T* dst = reinterpret_cast<T*>(detail::cpu_address(t));
        if constexpr (stripe_locked<T>())
          if (char* area = stripe_area(t)) {  // comm.fp_locks
            locked_run(area, t.offset, dst, in, count, op);
            return;
          }
        for (std::size_t k = 0; k < count; ++k) {
          T v;
          std::memcpy(&v, in + k * sizeof(T), sizeof v);
          cpu_apply(dst + k, v, op);
        }
      });
      locus::count(Count::bytes_on_node, count * esize, Count::atomic_updates, count);
      return;
    case AtomicPath::aggregate: {
      Aggregator& agg = target_aggregator(t);
      for (std::size_t k = 0; k < count; ++k) {
        Target e = t;
        e.offset += k * esize;
        agg.update(e, in + k * esize, type, op);
      }
      return;
    }
    default:
      break;
  }
  const Endpoint e = endpoint(t, atomic_path(t));
  if (count > static_cast<std::size_t>(INT_MAX))
    throw Error("accumulate_nbi: more than " + std::to_string(INT_MAX) + " elements in one call");
  count_bytes(same_node(t), count * esize);
  locus::count(Count::atomic_updates, count, Count::rma_ops, 1);
  const void* kept = arena_copy(values, count * esize, e.win);
  const int n = static_cast<int>(count);
  const int rc = MPI_Accumulate(kept, n, type, e.rank, e.disp, n, type, mpi_op(op), e.win);
  e.issued();
  check_rc(rc, "accumulate_nbi");
}

}  // namespace detail

void flush(Team& team) {
  detail::CommScope timed;
  detail::complete_lookahead();
  if (detail::Aggregator* a = detail::aggregator_of(team)) a->flush(-1);
  if (detail::ProgressEngine* e = detail::progress_engine(); e && team.served()) e->quiesce();
  // Per target, not MPI_Win_flush_all: MPICH 4.0.2 ch4:ucx returned from
  // MPI_Win_flush_all before request-less MPI_Gets to other (emulated)
  // nodes had delivered their data (core.fine_node2, IndexGather, 1 run in 3).
  // Only windows with operations issued since the last flush (the mark is
  // cleared first: an operation issued meanwhile marks it again).
  std::set<MPI_Win> wins;
  detail::core().segments.for_each(team.id(), [&](SegmentInfo& seg) {
    if (seg.rma != MPI_WIN_NULL && seg.unflushed.exchange(false, std::memory_order_acq_rel))
      wins.insert(seg.rma);
  });
  for (MPI_Win w : wins) {
    int n = 0;
    MPI_Group g;
    MPI_Win_get_group(w, &g);
    MPI_Group_size(g, &n);
    MPI_Group_free(&g);
    for (int r = 0; r < n; ++r) MPI_Win_flush(r, w);
  }
  detail::value_arena().recycle();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void flush(Team& team, int unit) {
  detail::CommScope timed;
  detail::complete_lookahead();
  if (unit < 0 || unit >= team.size())
    throw Error("flush: unit " + std::to_string(unit) + " is not in team " + std::to_string(team.id()) +
                " (" + std::to_string(team.size()) + " units)");
  if (detail::Aggregator* a = detail::aggregator_of(team)) a->flush(unit);
  // The unit itself, and its node's ghost where redirection sends its
  // operations (the same route endpoint() takes).
  std::set<std::pair<MPI_Win, int>> done;
  detail::core().segments.for_each(team.id(), [&](const SegmentInfo& seg) {
    if (seg.rma == MPI_WIN_NULL || !seg.unflushed.load(std::memory_order_acquire)) return;
    const int rank = seg.redirect ? seg.ghost[static_cast<std::size_t>(unit)] : unit;
    if (done.insert({seg.rma, rank}).second) MPI_Win_flush(rank, seg.rma);
  });
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void progress(Team& team) {
  if (detail::Aggregator* a = detail::aggregator_of(team)) a->progress();
}

void barrier(Team& team) {
  detail::complete_lookahead();
  // On cache-coherent memory MPI_Win_sync is a full memory barrier (as in
  // MPICH); the fences around MPI_Barrier give the same guarantee for every
  // segment at once.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (detail::Aggregator* a = detail::aggregator_of(team)) {
    count(Count::collectives, 1);
    a->barrier();  // applies batches until every unit has flushed its own
  } else
    barrier_yielding(team.comm());
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace locus
