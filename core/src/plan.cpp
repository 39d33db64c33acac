#include "locus/plan.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "locus/error.hpp"
#include "locus/team.hpp"
#include "locus/wait.hpp"
#include "progress_engine.hpp"
#include "transfer.hpp"

namespace locus::detail {

namespace {

// A side as runs of contiguous elements (offset, length), in order.
using Runs = std::vector<std::pair<std::size_t, std::size_t>>;

Runs runs_of(const Side& s) {
  Runs r;
  if (!s.index.empty()) {
    for (std::size_t i : s.index) r.emplace_back(s.offset + i, s.index_block);
  } else {
    const Layout& l = s.layout;
    for (std::size_t row = 0; row < l.rows; ++row)
      for (std::size_t c = 0; c < l.count; ++c) r.emplace_back(s.offset + row * l.row_stride + c * l.stride, l.block);
  }
  // Merge neighbours: fewer, longer copies.
  Runs merged;
  for (const auto& [off, len] : r) {
    if (len == 0) continue;
    if (!merged.empty() && merged.back().first + merged.back().second == off)
      merged.back().second += len;
    else
      merged.emplace_back(off, len);
  }
  return merged;
}

// An MPI datatype over the runs (bytes), or MPI_BYTE with a count for one run.
struct WireType {
  MPI_Datatype type = MPI_BYTE;
  int count = 0;
  MPI_Aint first = 0;  // byte offset of the first run (the displacement base)
  bool owned = false;
};

WireType wire_type(const Runs& runs, std::size_t esize) {
  WireType w;
  if (runs.empty()) return w;
  w.first = static_cast<MPI_Aint>(runs.front().first * esize);
  if (runs.size() == 1) {
    if (runs.front().second * esize > kChunk) throw Error("transfer plan: an entry of more than 1 GiB");
    w.count = static_cast<int>(runs.front().second * esize);
    return w;
  }
  std::vector<int> lengths;
  std::vector<MPI_Aint> displs;
  for (const auto& [off, len] : runs) {
    lengths.push_back(static_cast<int>(len * esize));
    displs.push_back(static_cast<MPI_Aint>(off * esize) - w.first);
  }
  MPI_Type_create_hindexed(static_cast<int>(runs.size()), lengths.data(), displs.data(), MPI_BYTE, &w.type);
  MPI_Type_commit(&w.type);
  w.count = 1;
  w.owned = true;
  return w;
}

}  // namespace

class PlanImpl {
 public:
  struct Entry {
    int unit = -1;
    Runs local, remote;
    char* shared = nullptr;  // the unit's part, when on my node (route: shared memory)
    WireType ltype, rtype;
    // Offloaded entries (layouts on both sides): what get_strided_async needs.
    bool offload = false;
    std::size_t local_offset = 0, remote_offset = 0;
    Layout local_layout{}, remote_layout{};
  };
  std::vector<Entry> entries;
  int team = 0, segment = 0;
  const SegmentInfo* seg = nullptr;  // redirect, ghost and ghost_disp are read at each start
  std::vector<Handle> handles;  // offloaded entries in flight
  std::size_t esize = 1;
  bool get = true;
  std::set<std::pair<MPI_Win, int>> in_flight;  // awaiting a flush
  std::vector<MPI_Request> requests;            // contiguous entries

  ~PlanImpl() {
    for (auto& e : entries)
      for (WireType* w : {&e.ltype, &e.rtype})
        if (w->owned) MPI_Type_free(&w->type);
  }
};

PlanImpl* make_plan(int team, int segment, std::vector<PlanEntry> entries, std::size_t esize, bool get,
                    Route route) {
  Runtime& rt = Runtime::current();
  SegmentInfo& seg = rt.segment(team, segment);
  auto p = std::make_unique<PlanImpl>();
  p->esize = esize;
  p->get = get;
  p->team = team;
  p->segment = segment;
  p->seg = &seg;
  const ProgressEngine* engine = progress_engine();
  const bool may_offload = route == Route::automatic && engine && rt.team(team).served();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const PlanEntry& pe = entries[i];
    const std::string where = "transfer plan entry " + std::to_string(i) + " (unit " + std::to_string(pe.unit) + ")";
    if (pe.unit < 0 || static_cast<std::size_t>(pe.unit) >= seg.bytes.size())
      throw Error(where + ": the unit is not in team " + std::to_string(team));
    if (pe.local.elements() != pe.remote.elements())
      throw Error(where + ": " + std::to_string(pe.local.elements()) + " local elements but " +
                  std::to_string(pe.remote.elements()) + " remote");
    PlanImpl::Entry e;
    e.unit = pe.unit;
    e.local = runs_of(pe.local);
    e.remote = runs_of(pe.remote);
    std::size_t end = 0;
    for (const auto& [off, len] : e.remote) end = std::max(end, off + len);
    const std::size_t part = seg.bytes[static_cast<std::size_t>(pe.unit)];
    if (!bounds_problem("", team, segment, pe.unit, 0, end * esize, part).empty())
      throw Error(where + ": the remote side reaches element " + std::to_string(end) + ", past the end of the part (" +
                  std::to_string(part / esize) + " elements)");
    // The route, as every other call takes it (rma.cpp: choose, endpoint).
    const Target target{&seg, &rt.team(team), pe.unit, 0};
    if (choose(target, route == Route::mpi ? Route::mpi : Route::local, 0, false) == Path::shared)
      e.shared = endpoint(target, Path::shared).shared;
    e.offload = may_offload && pe.local.index.empty() && pe.remote.index.empty() &&
                pe.local.elements() * esize >= engine->settings().threshold;
    if (e.offload) {
      e.local_offset = pe.local.offset;
      e.remote_offset = pe.remote.offset;
      e.local_layout = pe.local.layout;
      e.remote_layout = pe.remote.layout;
      if (e.local_layout.block != e.remote_layout.block || e.local_layout.count != e.remote_layout.count ||
          e.local_layout.rows != e.remote_layout.rows)
        e.offload = false;  // shapes differ: the copy/MPI routes handle it
    }
    if (!e.shared) {
      e.ltype = wire_type(e.local, esize);
      e.rtype = wire_type(e.remote, esize);
    }
    if (!e.local.empty()) p->entries.push_back(std::move(e));
  }
  return p.release();
}

namespace {
// Copies between the runs of two sides (same element count).
void copy_runs(char* dst_base, const Runs& dst, const char* src_base, const Runs& src, std::size_t esize) {
  std::size_t di = 0, si = 0, doff = 0, soff = 0;
  while (di < dst.size() && si < src.size()) {
    const std::size_t n = std::min(dst[di].second - doff, src[si].second - soff);
    std::memcpy(dst_base + (dst[di].first + doff) * esize, src_base + (src[si].first + soff) * esize, n * esize);
    doff += n;
    soff += n;
    if (doff == dst[di].second) ++di, doff = 0;
    if (soff == src[si].second) ++si, soff = 0;
  }
}
}  // namespace

void plan_start(PlanImpl& p, void* local_base) {
  CommScope timed;
  char* local = static_cast<char*>(local_base);
  // Redirection (async.hpp) is switched only at collective points with
  // nothing in flight: the MPI path (direct or through the ghost) is read
  // at each start.
  Team& team = Runtime::current().team(p.team);
  if (p.get) std::atomic_thread_fence(std::memory_order_acquire);
  for (auto& e : p.entries) {
    if (e.offload) {
      const Target t = resolve(p.team, p.segment, e.unit, e.remote_offset * p.esize,
                               e.remote_layout.extent() * p.esize, "transfer plan");
      char* origin = local + e.local_offset * p.esize;
      p.handles.push_back(p.get ? get_strided_async(origin, e.local_layout, t, e.remote_layout, p.esize,
                                                    Route::automatic)
                                : put_strided_async(t, e.remote_layout, origin, e.local_layout, p.esize,
                                                    Route::automatic));
      continue;
    }
    if (e.shared) {
      if (p.get)
        copy_runs(local, e.local, e.shared, e.remote, p.esize);
      else
        copy_runs(e.shared, e.remote, local, e.local, p.esize);
      continue;
    }
    char* origin = local + e.ltype.first;
    const Target t{const_cast<SegmentInfo*>(p.seg), &team, e.unit, static_cast<std::uint64_t>(e.rtype.first)};
    const Path path = choose(t, Route::local, 0, false) == Path::redirect ? Path::redirect : Path::direct;
    const Endpoint ep = endpoint(t, path);
    const int rank = ep.rank;
    const MPI_Aint disp = ep.disp;
    MPI_Win win = ep.win;
    int rc = MPI_SUCCESS;
    if (!e.ltype.owned && !e.rtype.owned) {
      // Contiguous on both sides: request-based, so that wait() yields; a
      // get is complete with its request, a put also needs the flush.
      MPI_Request req;
      rc = p.get ? MPI_Rget(origin, e.ltype.count, MPI_BYTE, rank, disp, e.rtype.count, MPI_BYTE, win, &req)
                 : MPI_Rput(origin, e.ltype.count, MPI_BYTE, rank, disp, e.rtype.count, MPI_BYTE, win, &req);
      p.requests.push_back(req);
      if (!p.get) p.in_flight.insert({win, rank});
    } else {
      // Derived datatypes without requests, completed by one flush per
      // target in wait(): MPICH 4.0 completes request-based gets with
      // derived target types early.
      rc = p.get ? MPI_Get(origin, e.ltype.count, e.ltype.type, rank, disp, e.rtype.count, e.rtype.type, win)
                 : MPI_Put(origin, e.ltype.count, e.ltype.type, rank, disp, e.rtype.count, e.rtype.type, win);
      p.in_flight.insert({win, rank});
    }
    if (rc != MPI_SUCCESS) throw Error("transfer plan: MPI_Get/MPI_Put failed");
  }
  if (!p.get) std::atomic_thread_fence(std::memory_order_release);
}

void plan_wait(PlanImpl& p) {
  CommScope timed;
  if (!p.handles.empty()) wait_all(p.handles);
  p.handles.clear();
  if (!p.requests.empty()) wait_all_yielding(p.requests);
  p.requests.clear();
  for (const auto& [win, unit] : p.in_flight) MPI_Win_flush(unit, win);
  p.in_flight.clear();
}

std::size_t plan_remote_entries(const PlanImpl& p) {
  return static_cast<std::size_t>(
      std::count_if(p.entries.begin(), p.entries.end(), [](const auto& e) { return !e.shared && !e.offload; }));
}

void destroy_plan(PlanImpl* p) {
  delete p;
}

}  // namespace locus::detail
