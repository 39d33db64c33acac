#include "locus/rma.hpp"

#include <atomic>
#include <climits>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "locus/wait.hpp"
#include "progress_engine.hpp"
#include "progress_thread.hpp"

namespace locus {

std::size_t Layout::extent() const {
  if (elements() == 0) return 0;
  return (rows - 1) * row_stride + (count - 1) * stride + block;
}

bool Layout::operator<(const Layout& o) const {
  return std::tie(block, count, stride, rows, row_stride) <
         std::tie(o.block, o.count, o.stride, o.rows, o.row_stride);
}

namespace {

// MPI datatypes for strided layouts, built once per (layout, element size).
std::map<std::pair<Layout, std::size_t>, MPI_Datatype>& type_cache() {
  static std::map<std::pair<Layout, std::size_t>, MPI_Datatype> cache;
  return cache;
}

}  // namespace

MPI_Datatype detail::layout_type(const Layout& l, std::size_t esize) {
  auto key = std::make_pair(l, esize);
  auto& cache = type_cache();
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  MPI_Datatype block, row, all;
  MPI_Type_contiguous(static_cast<int>(l.block * esize), MPI_BYTE, &block);
  MPI_Type_create_hvector(static_cast<int>(l.count), 1, static_cast<MPI_Aint>(l.stride * esize), block, &row);
  MPI_Type_create_hvector(static_cast<int>(l.rows), 1, static_cast<MPI_Aint>(l.row_stride * esize), row,
                          &all);
  MPI_Type_commit(&all);
  MPI_Type_free(&block);
  MPI_Type_free(&row);
  cache[key] = all;
  return all;
}

namespace {

// Same node and locality on (and not forced through MPI).
bool shared_path(const detail::Target& t, Route r) {
  return r == Route::automatic && Runtime::current().settings().locality &&
         t.seg->peer[static_cast<std::size_t>(t.unit)] != nullptr;
}

char* shared_ptr(const detail::Target& t) {
  return t.seg->peer[static_cast<std::size_t>(t.unit)] + t.offset;
}

MPI_Aint displacement(const detail::Target& t) {
  return t.seg->disp[static_cast<std::size_t>(t.unit)] + static_cast<MPI_Aint>(t.offset);
}

// MPI counts are ints: large transfers go in pieces.
constexpr std::size_t kChunk = std::size_t(1) << 30;

void check_shapes(const Layout& a, const Layout& b) {
  if (a.block != b.block || a.count != b.count || a.rows != b.rows)
    throw Error(
        "strided transfer: local and remote layouts must have the same block, count and rows "
        "(strides may differ)");
}

using detail::copy_strided;
using detail::layout_type;

// A request of the direct path: the progress thread, when one runs, keeps
// it moving.
Handle mpi_handle(MPI_Request req, MPI_Win win, int target, bool put) {
  Handle h = HandleAccess::make(req, win, target, put);
  if (detail::ProgressThread* th = detail::progress_thread()) {
    HandleAccess::reg(h) = th->add(req);
    HandleAccess::req(h) = MPI_REQUEST_NULL;
  }
  return h;
}

// Hands the transfer to the node's progress process when it qualifies: a
// progress engine runs, the team is served, the automatic route, and at
// least the threshold in bytes.
bool offload(detail::CommandKind kind, void* origin, const Layout& local, const detail::Target& t,
             const Layout& remote, std::size_t esize, Route r, Handle& h) {
  detail::ProgressEngine* e = detail::progress_engine();
  if (!e || r != Route::automatic || !t.team->served() || local.elements() * esize < e->settings().threshold)
    return false;
  return e->submit(kind, origin, local, t.team->id(), t.seg->id, t.unit, t.offset, remote, esize,
                   shared_path(t, r), h);
}

Layout bytes_layout(std::size_t bytes) {
  return Layout{bytes, 1, 0, 1, 0};
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
  }
  return MPI_SUM;
}

}  // namespace

namespace detail {

void copy_strided(char* dst, const Layout& dl, const char* src, const Layout& sl, std::size_t esize) {
  const std::size_t len = dl.block * esize;
  for (std::size_t r = 0; r < dl.rows; ++r)
    for (std::size_t c = 0; c < dl.count; ++c)
      std::memcpy(dst + (r * dl.row_stride + c * dl.stride) * esize,
                  src + (r * sl.row_stride + c * sl.stride) * esize, len);
}

Target resolve(int team, int segment, int unit, std::uint64_t offset, std::size_t bytes, const char* what) {
  Runtime& rt = Runtime::current();
  SegmentInfo& seg = rt.segment(team, segment);
  if (unit < 0 || static_cast<std::size_t>(unit) >= seg.bytes.size())
    throw Error(std::string(what) + ": unit " + std::to_string(unit) + " is not in team " +
                std::to_string(team) + " (" + std::to_string(seg.bytes.size()) + " units)");
#ifdef NDEBUG
  const bool check = rt.settings().check;
#else
  const bool check = true;
#endif
  if (check && offset + bytes > seg.bytes[static_cast<std::size_t>(unit)])
    throw Error(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                std::to_string(offset) + " of segment " + std::to_string(segment) + " (team " +
                std::to_string(team) + ") run past the end of unit " + std::to_string(unit) + "'s part (" +
                std::to_string(seg.bytes[static_cast<std::size_t>(unit)]) + " bytes)");
  return Target{&seg, &rt.team(team), unit, offset};
}

void get_bytes(void* dst, const Target& t, std::size_t bytes, Route r) {
  if (bytes == 0) return;
  if (shared_path(t, r)) {
    std::atomic_thread_fence(std::memory_order_acquire);
    std::memcpy(dst, shared_ptr(t), bytes);
    return;
  }
  // MPI_Rget completed by a yielding wait: the data has arrived.
  MPI_Win win = t.team->window();
  for (std::size_t done = 0; done < bytes; done += kChunk) {
    int n = static_cast<int>(std::min(kChunk, bytes - done));
    MPI_Request req;
    MPI_Rget(static_cast<char*>(dst) + done, n, MPI_BYTE, t.unit,
             displacement(t) + static_cast<MPI_Aint>(done), n, MPI_BYTE, win, &req);
    wait_yielding(req);
  }
}

void put_bytes(const Target& t, const void* src, std::size_t bytes, Route r) {
  if (bytes == 0) return;
  if (shared_path(t, r)) {
    std::memcpy(shared_ptr(t), src, bytes);
    std::atomic_thread_fence(std::memory_order_release);
    return;
  }
  MPI_Win win = t.team->window();
  for (std::size_t done = 0; done < bytes; done += kChunk) {
    int n = static_cast<int>(std::min(kChunk, bytes - done));
    MPI_Put(static_cast<const char*>(src) + done, n, MPI_BYTE, t.unit,
            displacement(t) + static_cast<MPI_Aint>(done), n, MPI_BYTE, win);
  }
  MPI_Win_flush(t.unit, win);
}

Handle get_bytes_async(void* dst, const Target& t, std::size_t bytes, Route r) {
  if (bytes == 0) return Handle{};
  Handle h;
  if (offload(CommandKind::get, dst, bytes_layout(bytes), t, bytes_layout(bytes), 1, r, h)) return h;
  if (shared_path(t, r) || bytes > kChunk) {  // memcpy completes at once; huge: blocking pieces
    get_bytes(dst, t, bytes, r);
    return Handle{};
  }
  MPI_Request req;
  int n = static_cast<int>(bytes);
  MPI_Rget(dst, n, MPI_BYTE, t.unit, displacement(t), n, MPI_BYTE, t.team->window(), &req);
  return mpi_handle(req, t.team->window(), t.unit, false);
}

Handle put_bytes_async(const Target& t, const void* src, std::size_t bytes, Route r) {
  if (bytes == 0) return Handle{};
  Handle h;
  if (offload(CommandKind::put, const_cast<void*>(src), bytes_layout(bytes), t, bytes_layout(bytes), 1, r, h))
    return h;
  if (shared_path(t, r) || bytes > kChunk) {
    put_bytes(t, src, bytes, r);
    return Handle{};
  }
  MPI_Request req;
  int n = static_cast<int>(bytes);
  MPI_Rput(src, n, MPI_BYTE, t.unit, displacement(t), n, MPI_BYTE, t.team->window(), &req);
  return mpi_handle(req, t.team->window(), t.unit, true);
}

namespace {
// The direct path of a strided transfer (shapes checked, not empty): a
// memcpy on shared memory, done at return (MPI_REQUEST_NULL), or an MPI
// request-based transfer whose request is returned.
MPI_Request start_get_strided(void* dst, const Layout& local, const Target& t, const Layout& remote,
                              std::size_t esize, Route r) {
  if (shared_path(t, r)) {
    std::atomic_thread_fence(std::memory_order_acquire);
    copy_strided(static_cast<char*>(dst), local, shared_ptr(t), remote, esize);
    return MPI_REQUEST_NULL;
  }
  MPI_Request req;
  MPI_Rget(dst, 1, layout_type(local, esize), t.unit, displacement(t), 1, layout_type(remote, esize),
           t.team->window(), &req);
  return req;
}

MPI_Request start_put_strided(const Target& t, const Layout& remote, const void* src, const Layout& local,
                              std::size_t esize, Route r) {
  if (shared_path(t, r)) {
    copy_strided(shared_ptr(t), remote, static_cast<const char*>(src), local, esize);
    std::atomic_thread_fence(std::memory_order_release);
    return MPI_REQUEST_NULL;
  }
  MPI_Request req;
  MPI_Rput(src, 1, layout_type(local, esize), t.unit, displacement(t), 1, layout_type(remote, esize),
           t.team->window(), &req);
  return req;
}
}  // namespace

void get_strided(void* dst, const Layout& local, const Target& t, const Layout& remote, std::size_t esize,
                 Route r) {
  // Blocking operations stay on the direct path.
  check_shapes(local, remote);
  if (local.elements() == 0) return;
  MPI_Request req = start_get_strided(dst, local, t, remote, esize, r);
  if (req != MPI_REQUEST_NULL) wait_yielding(req);
}

Handle get_strided_async(void* dst, const Layout& local, const Target& t, const Layout& remote,
                         std::size_t esize, Route r) {
  check_shapes(local, remote);
  if (local.elements() == 0) return Handle{};
  Handle h;
  if (offload(CommandKind::get, dst, local, t, remote, esize, r, h)) return h;
  MPI_Request req = start_get_strided(dst, local, t, remote, esize, r);
  return req == MPI_REQUEST_NULL ? Handle{} : mpi_handle(req, t.team->window(), t.unit, false);
}

void put_strided(const Target& t, const Layout& remote, const void* src, const Layout& local,
                 std::size_t esize, Route r) {
  check_shapes(local, remote);
  if (local.elements() == 0) return;
  // Request-based with a yielding wait (a blocking flush busy-polls in
  // MPICH, which costs time slices when ranks outnumber cores).
  MPI_Request req = start_put_strided(t, remote, src, local, esize, r);
  if (req == MPI_REQUEST_NULL) return;
  wait_yielding(req);
  MPI_Win_flush(t.unit, t.team->window());
}

Handle put_strided_async(const Target& t, const Layout& remote, const void* src, const Layout& local,
                         std::size_t esize, Route r) {
  check_shapes(local, remote);
  if (local.elements() == 0) return Handle{};
  Handle h;
  if (offload(CommandKind::put, const_cast<void*>(src), local, t, remote, esize, r, h)) return h;
  MPI_Request req = start_put_strided(t, remote, src, local, esize, r);
  return req == MPI_REQUEST_NULL ? Handle{} : mpi_handle(req, t.team->window(), t.unit, true);
}

void accumulate(const Target& t, const void* src, std::size_t count, MPI_Datatype type, Op op) {
  if (count == 0) return;
  MPI_Win win = t.team->window();
  MPI_Accumulate(src, static_cast<int>(count), type, t.unit, displacement(t), static_cast<int>(count), type,
                 mpi_op(op), win);
  MPI_Win_flush(t.unit, win);
}

void fetch_and_op(const Target& t, const void* operand, void* result, MPI_Datatype type, Op op) {
  // MPI_Rget_accumulate is the request form of MPI_Fetch_and_op: its
  // completion means the old value arrived, so the update was applied.
  MPI_Request req;
  MPI_Rget_accumulate(operand, 1, type, result, 1, type, t.unit, displacement(t), 1, type, mpi_op(op),
                      t.team->window(), &req);
  wait_yielding(req);
}

void compare_and_swap(const Target& t, const void* compare, const void* value, void* result,
                      MPI_Datatype type) {
  // MPI allows only integer types in MPI_Compare_and_swap: doubles are
  // compared bit for bit as 64-bit integers.
  if (type == MPI_DOUBLE) type = MPI_INT64_T;
  MPI_Win win = t.team->window();
  MPI_Compare_and_swap(value, compare, result, type, t.unit, displacement(t), win);
  MPI_Win_flush(t.unit, win);
}

}  // namespace detail

namespace {
// Completes a direct-path handle whose request is done: a put is made
// visible at the target by a flush.
void complete_put(const Handle& h) {
  if (HandleAccess::put(h)) MPI_Win_flush(HandleAccess::target(h), HandleAccess::win(h));
}
}  // namespace

void wait(Handle& h) {
  if (h.done()) return;
  if (HandleAccess::slot(h) >= 0) return detail::progress_engine()->wait(h);
  if (HandleAccess::reg(h) >= 0) {
    detail::progress_thread()->wait(HandleAccess::reg(h));
    HandleAccess::reg(h) = -1;
  } else {
    wait_yielding(HandleAccess::req(h));
  }
  // MPI_Wait on an Rput means the origin buffer is free; the flush makes
  // the data visible at the target.
  complete_put(h);
}

void wait_all(std::vector<Handle>& hs) {
  std::vector<MPI_Request> reqs;
  std::set<std::pair<MPI_Win, int>> flushes;
  reqs.reserve(hs.size());
  for (auto& h : hs) {
    if (h.done() || HandleAccess::slot(h) >= 0 || HandleAccess::reg(h) >= 0) continue;
    reqs.push_back(HandleAccess::req(h));
    if (HandleAccess::put(h)) flushes.insert({HandleAccess::win(h), HandleAccess::target(h)});
    HandleAccess::req(h) = MPI_REQUEST_NULL;
  }
  if (!reqs.empty()) wait_all_yielding(reqs);
  for (const auto& [win, target] : flushes) MPI_Win_flush(target, win);
  // Offloaded and thread-registered handles one by one (in any order, they
  // run concurrently).
  for (auto& h : hs)
    if (!h.done()) wait(h);
}

bool test(Handle& h) {
  if (h.done()) return true;
  if (HandleAccess::slot(h) >= 0) return detail::progress_engine()->test(h);
  if (HandleAccess::reg(h) >= 0) {
    if (!detail::progress_thread()->test(HandleAccess::reg(h))) return false;
    HandleAccess::reg(h) = -1;
    complete_put(h);
    return true;
  }
  int flag = 0;
  MPI_Test(&HandleAccess::req(h), &flag, MPI_STATUS_IGNORE);
  if (flag) complete_put(h);
  return flag != 0;
}

void flush(Team& team) {
  if (detail::ProgressEngine* e = detail::progress_engine(); e && team.served()) e->quiesce();
  MPI_Win_flush_all(team.window());
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void barrier(Team& team) {
  // On cache-coherent memory MPI_Win_sync is a full memory barrier (as in
  // MPICH); the fences around MPI_Barrier give the same guarantee for every
  // segment at once.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  barrier_yielding(team.comm());
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void release_datatype_cache() {
  for (auto& [key, type] : type_cache()) MPI_Type_free(&type);
  type_cache().clear();
}

}  // namespace locus
