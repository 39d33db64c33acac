// The executors (transfer.hpp): a resolved target, a strided layout's MPI
// datatype, and one transfer started by memcpy or MPI RMA at an endpoint.
// The application units and the progress servers run the same code.
#include <mpi.h>

#include <cstring>
#include <mutex>
#include <string>

#include "locus/datatype.hpp"
#include "locus/handle.hpp"
#include "mem/core_state.hpp"
#include "xfer/transfer.hpp"

namespace locus {

std::size_t Layout::extent() const {
  if (elements() == 0) return 0;
  return (rows - 1) * row_stride + (count - 1) * stride + block;
}

bool Layout::operator<(const Layout& o) const {
  return std::tie(block, count, stride, rows, row_stride) <
         std::tie(o.block, o.count, o.stride, o.rows, o.row_stride);
}

// ------------------------------------------------------------ executors

namespace detail {

MPI_Datatype layout_type(const Layout& l, std::size_t esize, MPI_Datatype base) {
  TypeCache& cache = *core().types;
  std::lock_guard<std::mutex> lock(cache.m);
  const TypeCache::Key key{l, esize, base};
  if (auto it = cache.types.find(key); it != cache.types.end()) return it->second.get();
  MPI_Datatype block, row, all;
  const std::size_t per = base == MPI_BYTE ? esize : 1;  // base elements per element
  MPI_Type_contiguous(static_cast<int>(l.block * per), base, &block);
  MPI_Type_create_hvector(static_cast<int>(l.count), 1, static_cast<MPI_Aint>(l.stride * esize), block, &row);
  MPI_Type_create_hvector(static_cast<int>(l.rows), 1, static_cast<MPI_Aint>(l.row_stride * esize), row,
                          &all);
  MPI_Type_free(&block);  // the outer type keeps what it needs of them
  MPI_Type_free(&row);
  return cache.types.emplace(key, Datatype(all)).first->second.get();
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

Layout packed(const Layout& l) {
  Layout p = l;
  p.stride = l.block;
  p.row_stride = l.block * l.count;
  return p;
}

bool contiguous(const Layout& l) {
  return (l.count == 1 || l.stride == l.block) && (l.rows == 1 || l.row_stride == l.block * l.count);
}

void copy_strided(char* dst, const Layout& dl, const char* src, const Layout& sl, std::size_t esize) {
  if (contiguous(dl) && contiguous(sl)) {
    std::memcpy(dst, src, dl.elements() * esize);
    return;
  }
  const std::size_t len = dl.block * esize;
  for (std::size_t r = 0; r < dl.rows; ++r)
    for (std::size_t c = 0; c < dl.count; ++c)
      std::memcpy(dst + (r * dl.row_stride + c * dl.stride) * esize,
                  src + (r * sl.row_stride + c * sl.stride) * esize, len);
}

Started start_transfer(bool get, char* origin, const Layout& local, const Endpoint& e, const Layout& remote,
                       std::size_t esize) {
  Started s;
  if (e.shared) {
    if (get) {
      std::atomic_thread_fence(std::memory_order_acquire);
      copy_strided(origin, local, e.shared, remote, esize);
    } else {
      copy_strided(e.shared, remote, origin, local, esize);
      std::atomic_thread_fence(std::memory_order_release);
    }
    return s;
  }
  const bool dense = contiguous(local) && contiguous(remote);
  const std::size_t bytes = local.elements() * esize;
  if (dense && bytes > kChunk) {
    // Beyond an int count: pieces without requests, completed by a flush.
    for (std::size_t done = 0; done < bytes && s.rc == MPI_SUCCESS; done += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, bytes - done));
      const MPI_Aint d = e.disp + static_cast<MPI_Aint>(done);
      s.rc = get ? MPI_Get(origin + done, n, MPI_BYTE, e.rank, d, n, MPI_BYTE, e.win)
                 : MPI_Put(origin + done, n, MPI_BYTE, e.rank, d, n, MPI_BYTE, e.win);
    }
    e.issued();
    s.flush = true;
    return s;
  }
  if (!dense) {
    // Derived datatypes without a request, completed by a flush: MPICH
    // 4.0 (ch4:ucx) completes an MPI_Rget with a derived target datatype
    // on an MPI_Win_create window before the data has arrived (measured).
    const MPI_Datatype lt = layout_type(local, esize), rt = layout_type(remote, esize);
    s.rc = get ? MPI_Get(origin, 1, lt, e.rank, e.disp, 1, rt, e.win)
               : MPI_Put(origin, 1, lt, e.rank, e.disp, 1, rt, e.win);
    e.issued();
    s.flush = true;
    return s;
  }
  // Request-based, so that waits can yield instead of blocking in a flush.
  const int n = static_cast<int>(bytes);
  s.rc = get ? MPI_Rget(origin, n, MPI_BYTE, e.rank, e.disp, n, MPI_BYTE, e.win, &s.req)
             : MPI_Rput(origin, n, MPI_BYTE, e.rank, e.disp, n, MPI_BYTE, e.win, &s.req);
  e.issued();
  s.flush = !get;
  return s;
}

Target resolve(int team, int segment, int unit, std::uint64_t offset, std::size_t bytes, const char* what) {
  const CoreState& rt = core();
  SegmentInfo& seg = detail::segment(team, segment);
  if (unit < 0 || static_cast<std::size_t>(unit) >= seg.bytes.size())
    throw Error(std::string(what) + ": unit " + std::to_string(unit) + " is not in team " +
                std::to_string(team) + " (" + std::to_string(seg.bytes.size()) + " units)");
#ifdef NDEBUG
  const bool check = (*rt.settings).check;
#else
  const bool check = true;
#endif
  if (check) {
    const std::string problem =
        bounds_problem(what, team, segment, unit, offset, bytes, seg.bytes[static_cast<std::size_t>(unit)]);
    if (!problem.empty()) throw Error(problem);
  }
  return Target{&seg, &detail::team(team), unit, offset};
}

// The inline templates' entries (rma.hpp): resolve, then the same call.

std::string bounds_problem(const char* what, int team, int segment, int unit, std::uint64_t offset,
                           std::size_t bytes, std::size_t part) {
  if (offset <= part && bytes <= part - offset) return "";
  return std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
         " of segment " + std::to_string(segment) + " (team " + std::to_string(team) +
         ") run past the end of unit " + std::to_string(unit) + "'s part (" + std::to_string(part) +
         " bytes)";
}

}  // namespace detail

}  // namespace locus
