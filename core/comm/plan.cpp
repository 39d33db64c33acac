#include "locus/plan.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "comm/comm_state.hpp"
#include "locus/collective.hpp"
#include "locus/counts.hpp"
#include "locus/datatype.hpp"
#include "locus/error.hpp"
#include "locus/team.hpp"
#include "locus/wait.hpp"
#include "progress/progress_engine.hpp"
#include "xfer/transfer.hpp"

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
      for (std::size_t c = 0; c < l.count; ++c)
        r.emplace_back(s.offset + row * l.row_stride + c * l.stride, l.block);
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
  Datatype derived;  // over several runs; none: MPI_BYTE
  int count = 0;
  MPI_Aint first = 0;  // byte offset of the first run (the displacement base)
  MPI_Datatype type() const { return derived ? derived.get() : MPI_BYTE; }
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
  MPI_Datatype t;
  MPI_Type_create_hindexed(static_cast<int>(runs.size()), lengths.data(), displs.data(), MPI_BYTE, &t);
  w.derived = Datatype(t);
  w.count = 1;
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
    // Message route (comm.remote): matched by tag with the owner's Serve.
    bool message = false;
    int tag = 0;
  };
  // The other side of another unit's message entry: my part's runs that it
  // reads (a get plan: I send them) or writes (a put plan: I receive them).
  struct Serve {
    int unit = -1, tag = 0;
    WireType type;  // over my part of the segment (type.first: its byte offset)
  };
  std::vector<Serve> serves;
  std::vector<int> message_units;     // sorted: units I exchange messages with
  bool messages_only = false;         // every entry a message: start() only posts
  MPI_Comm comm = MPI_COMM_NULL;      // the plan's own (duplicated) communicator
  std::vector<MPI_Request> messages;  // posted by start(), completed by wait()
  // comm.remote_requests: how start() posts the messages (never
  // automatic); persistent: one set of requests per local buffer the plan
  // has started with (a halo alternates two fields), in the order start()
  // posts them
  RemoteRequests way = RemoteRequests::immediate;
  double largest = 0;  // bytes of my largest message pair (eager only up to kEagerMaxBytes)
  std::vector<std::pair<char*, std::vector<MPI_Request>>> persistent_sets;
  std::vector<MPI_Request>* started = nullptr;  // the set in flight
  std::vector<Entry> entries;
  int team = 0, segment = 0;
  const SegmentInfo* seg = nullptr;  // redirect, ghost and ghost_disp are read at each start
  std::vector<Handle> handles;       // offloaded entries in flight
  std::size_t esize = 1;
  bool get = true;
  std::set<std::pair<MPI_Win, int>> in_flight;  // awaiting a flush
  std::vector<MPI_Request> requests;            // contiguous entries
  // What one execution counts (counts.hpp), fixed when the plan is built:
  // the bytes of my entries by where their unit is (offloaded ones are
  // counted by the transfer they become), one RMA call per RMA entry, and
  // the sends this unit posts (my message entries in a put plan, the
  // serves in a get plan).
  struct Tally {
    std::uint64_t on_node = 0, off_node = 0, rma_ops = 0, messages = 0;
  } tally;

  ~PlanImpl() {
    // (the entries' and serves' datatypes free themselves)
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    free_persistent();
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  void free_persistent() {
    for (auto& set : persistent_sets)
      for (MPI_Request& r : set.second)
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    persistent_sets.clear();
  }
};

namespace {

// A stable fingerprint of what decides message routes, compared between
// the units of a collective plan (equal everywhere, or an error).
long long route_fingerprint(RemoteMode mode, const RemoteSettings& r) {
  unsigned long long h = 1469598103934665603ull;
  auto mix = [&](double v) {
    unsigned long long b = 0;
    std::memcpy(&b, &v, sizeof b);
    h = (h ^ b) * 1099511628211ull;
  };
  mix(static_cast<double>(mode));
  if (mode == RemoteMode::automatic)
    for (const auto& p : r.points) {
      mix(p.bytes);
      mix(p.message_us);
      mix(p.rma_us);
    }
  return static_cast<long long>(h >> 1);
}

// Bytes of a side's runs.
double bytes_of(const Runs& runs, std::size_t esize) {
  double bytes = 0;
  for (const auto& [off, len] : runs) bytes += static_cast<double>(len * esize);
  return bytes;
}

// The bytes my candidate entries (to other nodes) move, per unit: the pairs
// whose route is decided.
std::map<int, double> bytes_per_unit(const PlanImpl& p, const std::vector<bool>& candidate) {
  std::map<int, double> bytes;
  for (std::size_t i = 0; i < p.entries.size(); ++i)
    if (candidate[i] && !p.entries[i].remote.empty())
      bytes[p.entries[i].unit] += bytes_of(p.entries[i].remote, p.esize);
  return bytes;
}

// The route statistics (comm.remote in the summary): one pair more.
void count_pair(bool message, double bytes) {
  RemoteRoutes& routes = comm_state().routes;
  (message ? routes.message_pairs : routes.rma_pairs) += 1;
  double& mx = message ? routes.message_max_bytes : routes.rma_max_bytes;
  mx = std::max(mx, bytes);
}

// Every unit must route alike: an error on every unit otherwise.
void require_same_routes(MPI_Comm tc, RemoteMode mode, const RemoteSettings& rs) {
  long long mine[2] = {route_fingerprint(mode, rs), 0}, lo[2], hi[2];
  mine[1] = -mine[0];
  locus::yielding::allreduce(mine, lo, 2, MPI_LONG_LONG, MPI_MIN, tc);
  hi[0] = -lo[1];
  if (lo[0] != hi[0])
    throw Error(
        "transfer plan: the units build it with different routes to other nodes (comm.remote or its "
        "calibration differ between units; a collective plan needs the same everywhere)");
}

// Collective over the team: sends each owner the remote runs of my
// candidate entries to it; returns, per unit, the runs of its entries on my
// part, in its order.
std::vector<std::vector<Runs>> exchange_runs(const PlanImpl& p, MPI_Comm tc, int n,
                                             const std::vector<bool>& candidate) {
  std::vector<std::vector<unsigned long long>> out(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < p.entries.size(); ++i) {
    if (!candidate[i]) continue;
    const auto& e = p.entries[i];
    auto& o = out[static_cast<std::size_t>(e.unit)];
    o.push_back(e.remote.size());
    for (const auto& [off, len] : e.remote) {
      o.push_back(off);
      o.push_back(len);
    }
  }
  std::vector<int> scount(static_cast<std::size_t>(n)), rcount(static_cast<std::size_t>(n)),
      sdispl(static_cast<std::size_t>(n)), rdispl(static_cast<std::size_t>(n));
  std::vector<unsigned long long> sbuf;
  for (int u = 0; u < n; ++u) {
    sdispl[static_cast<std::size_t>(u)] = static_cast<int>(sbuf.size());
    scount[static_cast<std::size_t>(u)] = static_cast<int>(out[static_cast<std::size_t>(u)].size());
    sbuf.insert(sbuf.end(), out[static_cast<std::size_t>(u)].begin(), out[static_cast<std::size_t>(u)].end());
  }
  locus::yielding::alltoall(scount.data(), 1, MPI_INT, rcount.data(), 1, MPI_INT, tc);
  int total = 0;
  for (int u = 0; u < n; ++u) {
    rdispl[static_cast<std::size_t>(u)] = total;
    total += rcount[static_cast<std::size_t>(u)];
  }
  std::vector<unsigned long long> rbuf(static_cast<std::size_t>(total));
  // (in the SMPI build only to and from the units with runs: locus::alltoallv)
  locus::alltoallv(sbuf.data(), scount.data(), sdispl.data(), rbuf.data(), rcount.data(), rdispl.data(),
                   MPI_UNSIGNED_LONG_LONG, tc);
  std::vector<std::vector<Runs>> theirs(static_cast<std::size_t>(n));
  for (int u = 0; u < n; ++u) {
    const auto* q = rbuf.data() + rdispl[static_cast<std::size_t>(u)];
    const auto* end = q + rcount[static_cast<std::size_t>(u)];
    while (q < end) {
      Runs r(static_cast<std::size_t>(*q++));
      for (auto& [off, len] : r) {
        off = static_cast<std::size_t>(*q++);
        len = static_cast<std::size_t>(*q++);
      }
      theirs[static_cast<std::size_t>(u)].push_back(std::move(r));
    }
  }
  return theirs;
}

// Collective over the team: tells every unit which of its part the other
// units' candidate entries (to other nodes) touch, decides per pair whether
// they travel as messages (both sides decide from the same bytes), and sets
// up the message entries and the serves.
void setup_messages(PlanImpl& p, Team& team, RemoteMode mode, const std::vector<bool>& candidate) {
  const RemoteSettings& rs = (*detail::core().settings).remote;
  const int n = team.size();
  const MPI_Comm tc = team.comm();
  require_same_routes(tc, mode, rs);
  const std::map<int, double> bytes_to = bytes_per_unit(p, candidate);
  const std::vector<std::vector<Runs>> theirs = exchange_runs(p, tc, n, candidate);
  // One route per pair, both directions alike (users skip their flags per
  // unit), decided by the larger direction: both sides see the same bytes.
  std::vector<char> message(static_cast<std::size_t>(n), 0);
  double& largest = p.largest;
  for (int u = 0; u < n; ++u) {
    const std::size_t k = static_cast<std::size_t>(u);
    const auto to = bytes_to.find(u);
    double from = 0;
    for (const Runs& r : theirs[k]) from += bytes_of(r, p.esize);
    const double bytes = std::max(to == bytes_to.end() ? 0.0 : to->second, from);
    if (bytes == 0) continue;
    message[k] = message_route(team.id(), u, bytes, mode);
    count_pair(message[k], bytes);
    if (message[k]) {
      p.message_units.push_back(u);
      largest = std::max(largest, bytes);
    }
  }
  if (largest > 0) {
    p.way = rs.requests_for(largest);
    RemoteRoutes& r = comm_state().routes;
    ++(p.way == RemoteRequests::persistent ? r.persistent_plans
       : p.way == RemoteRequests::eager    ? r.eager_plans
                                           : r.immediate_plans);
  }
  // My entries: the k-th candidate to a unit has tag k.
  std::vector<int> next_tag(static_cast<std::size_t>(n), 0);
  for (std::size_t i = 0; i < p.entries.size(); ++i) {
    if (!candidate[i]) continue;
    auto& e = p.entries[i];
    e.tag = next_tag[static_cast<std::size_t>(e.unit)]++;
    if (!message[static_cast<std::size_t>(e.unit)]) continue;
    e.message = true;
    e.offload = false;
  }
  for (int u = 0; u < n; ++u)
    if (message[static_cast<std::size_t>(u)])
      for (std::size_t k = 0; k < theirs[static_cast<std::size_t>(u)].size(); ++k)
        if (!theirs[static_cast<std::size_t>(u)][k].empty())
          p.serves.push_back(PlanImpl::Serve{u, static_cast<int>(k),
                                             wire_type(theirs[static_cast<std::size_t>(u)][k], p.esize)});
  yielding::comm_dup(tc, &p.comm);
}

}  // namespace

namespace {
void tally(PlanImpl& p) {
  const Team& team = detail::team(p.team);
  PlanImpl::Tally& t = p.tally;
  for (const auto& e : p.entries) {
    if (e.offload) continue;
    const auto bytes = static_cast<std::uint64_t>(bytes_of(e.local, p.esize));
    (team.same_node(e.unit) ? t.on_node : t.off_node) += bytes;
    if (e.message)
      t.messages += p.get ? 0 : 1;
    else if (!e.shared)
      ++t.rma_ops;
  }
  if (p.get && !p.message_units.empty()) t.messages += p.serves.size();
}
}  // namespace

PlanImpl* make_plan(int team, int segment, std::vector<PlanEntry> entries, std::size_t esize, bool get,
                    Route route, RemoteMode remote) {
  const CoreState& rt = core();
  SegmentInfo& seg = detail::segment(team, segment);
  auto p = std::make_unique<PlanImpl>();
  p->esize = esize;
  p->get = get;
  p->team = team;
  p->segment = segment;
  p->seg = &seg;
  const ProgressEngine* engine = progress_engine();
  const bool may_offload = route == Route::automatic && engine && detail::team(team).served();
  if (remote == RemoteMode::deck) remote = (*rt.settings).remote.mode;
  std::vector<bool> candidate;  // entries to units of other nodes (comm.remote)
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const PlanEntry& pe = entries[i];
    const std::string where =
        "transfer plan entry " + std::to_string(i) + " (unit " + std::to_string(pe.unit) + ")";
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
      throw Error(where + ": the remote side reaches element " + std::to_string(end) +
                  ", past the end of the part (" + std::to_string(part / esize) + " elements)");
    // The route, as every other call takes it (rma.cpp: choose, endpoint).
    const Target target{&seg, &detail::team(team), pe.unit, 0};
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
    if (!e.local.empty()) {
      candidate.push_back(!e.shared && !detail::team(team).same_node(e.unit));
      p->entries.push_back(std::move(e));
    }
  }
  if (remote != RemoteMode::rma) {
    setup_messages(*p, detail::team(team), remote, candidate);
    p->messages_only =
        std::all_of(p->entries.begin(), p->entries.end(), [](const auto& e) { return e.message; });
    p->messages.reserve(p->entries.size() + p->serves.size());
  } else {
    // One-sided: my entries' units of other nodes are RMA pairs.
    for (const auto& [unit, bytes] : bytes_per_unit(*p, candidate)) count_pair(false, bytes);
  }
  tally(*p);
  return p.release();
}

namespace {
// Copies between the runs of two sides (same element count).
void copy_runs(char* dst_base, const Runs& dst, const char* src_base, const Runs& src, std::size_t esize) {
  std::size_t di = 0, si = 0, doff = 0, soff = 0;
  while (di < dst.size() && si < src.size()) {
    const std::size_t n = std::min(dst[di].second - doff, src[si].second - soff);
    std::memcpy(dst_base + (dst[di].first + doff) * esize, src_base + (src[si].first + soff) * esize,
                n * esize);
    doff += n;
    soff += n;
    if (doff == dst[di].second) ++di, doff = 0;
    if (soff == src[si].second) ++si, soff = 0;
  }
}
}  // namespace

namespace {

// The plan's messages: my message entries (over LOCAL; a get plan's
// receives, a put plan's sends) and serves (over my part; the other way).
// The sends go first, so that they leave as early as they can (worth up to
// a fifth of an 8-byte exchange on Open MPI), then the receives, into REQS:
// started at once, or (persistent) only initialised. Eager: the receives
// first, then each send by a blocking MPI_Send (no request), so that every
// receive is posted before this unit can wait in a send.
void post_messages(PlanImpl& p, char* local, std::vector<MPI_Request>& reqs, RemoteRequests way) {
  char* part = p.seg->base;
  const bool init = way == RemoteRequests::persistent;
  auto post = [&](bool send, char* base, const WireType& w, int unit, int tag) {
    MPI_Request r;
    void* buf = base + w.first;
    int rc;
    if (send && way == RemoteRequests::eager) {
      if (MPI_Send(buf, w.count, w.type(), unit, tag, p.comm) != MPI_SUCCESS)
        throw Error("transfer plan: MPI_Send failed");
      return;
    }
    if (send)
      rc = init ? MPI_Send_init(buf, w.count, w.type(), unit, tag, p.comm, &r)
                : MPI_Isend(buf, w.count, w.type(), unit, tag, p.comm, &r);
    else
      rc = init ? MPI_Recv_init(buf, w.count, w.type(), unit, tag, p.comm, &r)
                : MPI_Irecv(buf, w.count, w.type(), unit, tag, p.comm, &r);
    if (rc != MPI_SUCCESS) throw Error("transfer plan: posting a message failed");
    reqs.push_back(r);
  };
  // entries send in a put plan, serves in a get plan
  auto post_all = [&](bool send) {
    if (send != p.get)
      for (const auto& e : p.entries) {
        if (e.message) post(send, local, e.ltype, e.unit, e.tag);
      }
    else
      for (const auto& sv : p.serves) post(send, part, sv.type, sv.unit, sv.tag);
  };
  const bool sends_first = way != RemoteRequests::eager;
  post_all(sends_first);
  post_all(!sends_first);
}

// Persistent requests: the set for LOCAL (made on its first use), started.
void start_persistent(PlanImpl& p, char* local) {
  auto set = std::find_if(p.persistent_sets.begin(), p.persistent_sets.end(),
                          [&](const auto& s) { return s.first == local; });
  if (set == p.persistent_sets.end()) {
    // a few buffers at most (a halo alternates two fields); a caller that
    // starts from ever new buffers recycles the oldest set (inactive here)
    constexpr std::size_t kSets = 4;
    if (p.persistent_sets.size() == kSets) {
      for (MPI_Request& r : p.persistent_sets.front().second) MPI_Request_free(&r);
      p.persistent_sets.erase(p.persistent_sets.begin());
    }
    p.persistent_sets.emplace_back(local, std::vector<MPI_Request>{});
    set = std::prev(p.persistent_sets.end());
    post_messages(p, local, set->second, RemoteRequests::persistent);
  }
  if (!set->second.empty() &&
      MPI_Startall(static_cast<int>(set->second.size()), set->second.data()) != MPI_SUCCESS)
    throw Error("transfer plan: MPI_Startall failed");
  p.started = &set->second;
}

}  // namespace

void plan_set_requests(PlanImpl& p, RemoteRequests way) {
  if (p.started || !p.messages.empty())
    throw Error("transfer plan: the way of posting messages switched between start() and wait()");
  if (way == RemoteRequests::automatic) way = (*detail::core().settings).remote.requests_for(p.largest);
  if (way == RemoteRequests::eager && p.largest > kEagerMaxBytes) way = RemoteRequests::immediate;
  if (way != RemoteRequests::persistent) p.free_persistent();
  p.way = way;
}

RemoteRequests plan_requests(const PlanImpl& p) {
  return p.message_units.empty() ? RemoteRequests::immediate : p.way;
}

void plan_start(PlanImpl& p, void* local_base) {
  if (p.entries.empty() && p.serves.empty()) return;  // nothing of mine moves (a halo's idle plan)
  CommScope timed;
  locus::count(Count::bytes_on_node, p.tally.on_node, Count::bytes_off_node, p.tally.off_node);
  locus::count(Count::rma_ops, p.tally.rma_ops, Count::messages, p.tally.messages);
  char* local = static_cast<char*>(local_base);
  if (p.get) std::atomic_thread_fence(std::memory_order_acquire);
  if (!p.message_units.empty()) {
    // Non-blocking sends and receives, posted afresh each start, or the
    // plan's persistent requests started (comm.remote_requests: which is
    // faster depends on the library and the size; see setup_messages).
    if (!p.get) std::atomic_thread_fence(std::memory_order_release);
    if (p.way == RemoteRequests::persistent)
      start_persistent(p, local);
    else
      post_messages(p, local, p.messages, p.way);
    if (p.messages_only) return;  // (a put's release fence came before the sends)
  }
  // Redirection (async.hpp) is switched only at collective points with
  // nothing in flight: the MPI path (direct or through the ghost) is read
  // at each start.
  Team& team = detail::team(p.team);
  for (auto& e : p.entries) {
    if (e.message) continue;
    if (e.offload) {
      const Target t = resolve(p.team, p.segment, e.unit, e.remote_offset * p.esize,
                               e.remote_layout.extent() * p.esize, "transfer plan");
      char* origin = local + e.local_offset * p.esize;
      p.handles.push_back(
          p.get ? get_strided_async(origin, e.local_layout, t, e.remote_layout, p.esize, Route::automatic)
                : put_strided_async(t, e.remote_layout, origin, e.local_layout, p.esize, Route::automatic));
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
    if (!e.ltype.derived && !e.rtype.derived) {
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
      rc = p.get ? MPI_Get(origin, e.ltype.count, e.ltype.type(), rank, disp, e.rtype.count, e.rtype.type(),
                           win)
                 : MPI_Put(origin, e.ltype.count, e.ltype.type(), rank, disp, e.rtype.count, e.rtype.type(),
                           win);
      p.in_flight.insert({win, rank});
    }
    ep.issued();
    if (rc != MPI_SUCCESS) throw Error("transfer plan: MPI_Get/MPI_Put failed");
  }
  if (!p.get) std::atomic_thread_fence(std::memory_order_release);
}

void plan_wait(PlanImpl& p) {
  if (p.entries.empty() && p.serves.empty()) return;
  CommScope timed;
  if (!p.handles.empty()) wait_all(p.handles);
  p.handles.clear();
  if (!p.requests.empty()) wait_all_yielding(p.requests);
  p.requests.clear();
  // (sends first: wait_each_yielding)
  if (!p.messages.empty()) wait_each_yielding(p.messages);
  p.messages.clear();
  if (p.started && !p.started->empty()) wait_each_yielding(*p.started);  // (they stay, inactive)
  p.started = nullptr;
  for (const auto& [win, unit] : p.in_flight) MPI_Win_flush(unit, win);
  p.in_flight.clear();
}

std::size_t plan_remote_entries(const PlanImpl& p) {
  return static_cast<std::size_t>(std::count_if(p.entries.begin(), p.entries.end(),
                                                [](const auto& e) { return !e.shared && !e.offload; }));
}

}  // namespace locus::detail

namespace locus {
bool message_route(int team, int unit, double bytes, RemoteMode mode) {
  const RemoteSettings& rs = (*detail::core().settings).remote;
  if (mode == RemoteMode::deck) mode = rs.mode;
  if (mode == RemoteMode::rma || detail::team(team).same_node(unit)) return false;
  return mode == RemoteMode::message || rs.message_for(bytes);
}

RemoteRoutes remote_routes() {
  const detail::CommState* s = detail::comm_state_if_any();
  return s ? s->routes : RemoteRoutes{};
}
}  // namespace locus

namespace locus::detail {

bool plan_message(const PlanImpl& p, int unit) {
  return std::binary_search(p.message_units.begin(), p.message_units.end(), unit);
}

void destroy_plan(PlanImpl* p) {
  delete p;
}

}  // namespace locus::detail
