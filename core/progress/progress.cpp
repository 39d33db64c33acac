// Progress processes: the bootstrap memory, the client side of the command
// rings, and the server loop. Design: locus/progress.hpp.
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <set>

#include "locus/collective.hpp"
#include "locus/error.hpp"
#include "locus/team.hpp"
#include "locus/wait.hpp"
#include "mem/core_state.hpp"
#include "mem/node_memory.hpp"
#include "mem/shared_pages.hpp"
#include "progress/progress_engine.hpp"

namespace locus {

namespace detail {

namespace {

std::size_t round_up(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

// Futexes on the shared bootstrap memory (not FUTEX_PRIVATE: the waiter
// and the waker are different processes).
void futex_wait(std::atomic<std::uint32_t>* word, std::uint32_t expected, long timeout_us) {
  timespec ts{timeout_us / 1000000, (timeout_us % 1000000) * 1000};
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

}  // namespace

ProgressEngine* progress_engine() {
  CoreState* s = core_if_any();
  return s ? s->engine : nullptr;
}

ProgressLayout make_progress_layout(MPI_Comm comm, const std::vector<int>& node_of, int k) {
  ProgressLayout l;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const int nodes = *std::max_element(node_of.begin(), node_of.end()) + 1;
  std::vector<std::vector<int>> members(static_cast<std::size_t>(nodes));
  for (int r = 0; r < size; ++r)
    members[static_cast<std::size_t>(node_of[static_cast<std::size_t>(r)])].push_back(r);
  for (int n = 0; n < nodes; ++n) {
    const auto m = static_cast<int>(members[static_cast<std::size_t>(n)].size());
    if (m <= k) {
      std::string msg = "runtime.progress.processes_per_node: " + std::to_string(k) +
                        " would leave no application unit on node " + std::to_string(n) + ", which has " +
                        std::to_string(m) + " rank" + (m == 1 ? "" : "s") + "; every node needs at least " +
                        std::to_string(k + 1) + " (start more ranks, or change runtime.node_size)";
      throw CollectiveError(msg);
    }
  }
  std::vector<char> is_server(static_cast<std::size_t>(size), 0);
  for (const auto& m : members)
    for (std::size_t i = m.size() - static_cast<std::size_t>(k); i < m.size(); ++i)
      is_server[static_cast<std::size_t>(m[i])] = 1;
  for (int r = 0; r < size; ++r) {
    if (is_server[static_cast<std::size_t>(r)]) {
      l.server_ranks.push_back(r);
      l.server_node.push_back(node_of[static_cast<std::size_t>(r)]);
    } else {
      l.app_ranks.push_back(r);
      l.app_node.push_back(node_of[static_cast<std::size_t>(r)]);
    }
  }
  l.server = is_server[static_cast<std::size_t>(rank)] != 0;
  l.node = node_of[static_cast<std::size_t>(rank)];
  for (int n : l.app_node) l.node_apps += n == l.node ? 1 : 0;
  l.node_servers = k;
  MPI_Comm_split(comm, l.server ? 1 : 0, rank, &l.app_comm);
  const int key = l.server ? size + rank : rank;
  MPI_Comm_split(comm, 0, key, &l.full_comm);
  MPI_Comm_split(l.full_comm, l.node, key, &l.node_full);
  MPI_Comm_rank(l.node_full, &l.node_index);
  return l;
}

// ------------------------------------------------------------ set-up

ProgressEngine::ProgressEngine(const ProgressLayout& layout, const ProgressSettings& settings,
                               const ServiceFactory& service)
    : layout_(layout), settings_(settings) {
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  area_bytes_ = round_up(sizeof(UnitArea) + settings_.staging, page);
  const std::size_t mine = layout_.server ? round_up(sizeof(ServerArea), page) : area_bytes_;
  {
    // The staging areas live in shared memory: check the node can hold them
    // before mapping (an oversized runtime.progress.staging otherwise makes
    // MPICH loop in msync on a sparse /dev/shm file).
    double need = static_cast<double>(mine), node_need = 0.0;
    locus::yielding::allreduce(&need, &node_need, 1, MPI_DOUBLE, MPI_SUM, layout_.node_full);
    std::string what, msg;
    const double cap = layout_.node_index == 0 ? node_capacity(what) : -1.0;
    if (cap >= 0 && node_need > cap)
      msg = "runtime.progress.staging: " + std::to_string(settings_.staging) + " bytes per unit need " +
            gib(node_need) + " of shared memory on a node, but the node has " + what +
            " (use a smaller staging area; transfers larger than it are sent in pieces)";
    collective_require(layout_.full_comm, msg.empty(), msg);
  }
  void* base = nullptr;
  boot_ = allocate_shared_pages(mine, layout_.node_full, &base);
  // Fresh shared pages are zero; touch only the header (the staging area is
  // mapped page by page as transfers use it).
  std::memset(base, 0, layout_.server ? sizeof(ServerArea) : sizeof(UnitArea));
  if (layout_.server)
    new (base) ServerArea{};
  else
    new (base) UnitArea{};
  for (int r = 0; r < layout_.node_apps + layout_.node_servers; ++r) {
    void* p = shared_part(boot_, r, nullptr);
    if (r < layout_.node_apps)
      units_.push_back(static_cast<UnitArea*>(p));
    else
      servers_.push_back(static_cast<ServerArea*>(p));
  }
  for (std::size_t u = 0; u < layout_.app_node.size(); ++u)
    if (layout_.app_node[u] == layout_.node) node_units_.push_back(static_cast<int>(u));
  if (layout_.server) {
    node_server_ = layout_.node_index - layout_.node_apps;
    for (int a = 0; a < layout_.node_apps; ++a)
      if (server_in_node(a, layout_.node_servers) == node_server_) my_units_.push_back(a);
  } else {
    node_app_ = layout_.node_index;
    for (std::uint32_t s = kCompletion; s-- > 0;) free_slots_.push_back(s);
  }
  locus::yielding::barrier(layout_.node_full);  // every area initialised before anyone uses it

  MPI_Win_create_dynamic(MPI_INFO_NULL, layout_.full_comm, &win_);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  if (layout_.server) MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN);
  yielding::comm_dup(layout_.full_comm, &agg_comm_);
  if (layout_.server && service)
    applier_ = service(agg_comm_, [this](int segment, int unit, std::size_t* bytes) {
      auto it = segs_.find(segment);
      if (it == segs_.end() || unit < 0 || static_cast<std::size_t>(unit) >= it->second.peer.size())
        return static_cast<char*>(nullptr);
      *bytes = it->second.bytes[static_cast<std::size_t>(unit)];
      return it->second.peer[static_cast<std::size_t>(unit)];
    });
}

ProgressEngine::~ProgressEngine() {
  if (!collective_cleanup_allowed()) return;  // the job aborts next
  for (MPI_Comm* c : {&layout_.app_comm, &layout_.full_comm, &layout_.node_full, &agg_comm_})
    if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
}

int ProgressEngine::my_server_rank() const {
  if (layout_.server) return -1;
  // Units of a node are spread over its servers round-robin.
  int want = server_in_node(node_app_, layout_.node_servers);
  for (std::size_t i = 0; i < layout_.server_ranks.size(); ++i)
    if (layout_.server_node[i] == layout_.node && want-- == 0) return layout_.server_ranks[i];
  return -1;
}

int ProgressEngine::ghost_of(int unit) const {
  const int node = layout_.app_node[static_cast<std::size_t>(unit)];
  int index = 0;  // the unit's index among its node's units
  for (int v = 0; v < unit; ++v) index += layout_.app_node[static_cast<std::size_t>(v)] == node ? 1 : 0;
  int want = server_in_node(index, layout_.node_servers);
  const int apps = static_cast<int>(layout_.app_ranks.size());
  for (std::size_t i = 0; i < layout_.server_ranks.size(); ++i)
    if (layout_.server_node[i] == node && want-- == 0) return apps + static_cast<int>(i);
  return -1;
}

// ------------------------------------------------------------ application side

void ProgressEngine::notify_servers(Control kind, int team, int segment) {
  for (ServerArea* s : servers_) {
    if (node_app_ == 0) {
      // One mailbox: the server must have read the previous event before
      // this one overwrites it (an event without a collective with the
      // server, such as Control::async, could otherwise be lost).
      unsigned spins = 0;
      while (s->done.load(std::memory_order_acquire) != s->seq.load(std::memory_order_relaxed)) {
        poke();
        relax(spins);
      }
      s->kind = kind;
      s->team = team;
      s->segment = segment;
      s->seq.fetch_add(1, std::memory_order_release);
    }
    s->arrived.fetch_add(1, std::memory_order_release);
    wake(s);
  }
}

void ProgressEngine::push(const Command& c) {
  UnitArea* a = unit_area(node_app_);
  unsigned spins = 0;
  while (next_head_ - a->tail.load(std::memory_order_acquire) >= kRingSlots) {
    poke();
    relax(spins);
  }
  a->ring[next_head_ % kRingSlots] = c;
  a->head.store(++next_head_, std::memory_order_release);
  wake(servers_[static_cast<std::size_t>(server_in_node(node_app_, layout_.node_servers))]);
}

void ProgressEngine::wake(ServerArea* s) {
  // Pairs with the server's fence between setting `sleeping` and its last
  // look at the rings: either it sees our command or we see it asleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (s->sleeping.load(std::memory_order_relaxed)) {
    s->wake.fetch_add(1, std::memory_order_release);
    futex_wake(&s->wake);
  }
}

bool ProgressEngine::submit(CommandKind kind, void* origin, const Layout& local, int team, int segment,
                            int target, std::uint64_t target_offset, const Layout& remote, std::size_t esize,
                            bool same_node, Handle& h) {
  std::lock_guard<std::recursive_mutex> lock(app_mutex_);
  if (free_slots_.empty()) return false;
  const std::size_t bytes = local.elements() * esize;
  Command c{};
  c.kind = kind;
  c.target = target;
  c.team = team;
  c.segment = segment;
  c.target_offset = target_offset;
  c.same_node = same_node ? 1 : 0;
  c.esize = static_cast<std::uint32_t>(esize);
  c.remote = remote;
  c.local = local;
  const SegmentInfo* own = segment_containing(team, origin, local.extent() * esize);
  bool staged = own == nullptr;
  std::uint64_t off = 0;
  if (own) {
    c.origin_segment = own->id;
    c.origin_offset = static_cast<std::uint64_t>(static_cast<char*>(origin) - own->base);
  } else {
    if (staged_live_ == 0) staged_used_ = 0;
    const std::size_t need = round_up(bytes, 64);
    if (staged_used_ + need > settings_.staging) {
      if (staged_live_ > 0 || !contiguous(local) || !contiguous(remote)) return false;
      // Larger than the whole staging area: all pieces but the last one
      // go through it one after another; the last one stays in flight.
      const std::size_t piece = settings_.staging / 64 * 64;
      std::size_t done = 0;
      char* o = static_cast<char*>(origin);
      while (bytes - done > piece) {
        Layout l{piece, 1, 0, 1, 0};
        Handle part;
        if (!submit(kind, o + done, l, team, segment, target, target_offset + done, l, 1, same_node, part))
          return false;
        wait(part);
        done += piece;
      }
      Layout rest{bytes - done, 1, 0, 1, 0};
      return submit(kind, o + done, rest, team, segment, target, target_offset + done, rest, 1, same_node, h);
    }
    off = staged_used_;
    staged_used_ += need;
    ++staged_live_;
    c.origin_segment = -1;
    c.origin_offset = off;
    c.local = packed(local);
    if (kind == CommandKind::put)
      copy_strided(staging(unit_area(node_app_)) + off, c.local, static_cast<const char*>(origin), local,
                   esize);
  }
  const std::uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  unit_area(node_app_)->state[slot].store(slot_pending, std::memory_order_relaxed);
  c.slot = slot;
  push(c);
  HandleAccess::slot(h) = static_cast<std::int32_t>(slot);
  HandleAccess::set_state(h, HandleAccess::State::offload);
  if (staged) {
    HandleAccess::staged(h) = off;
    HandleAccess::staged_bytes(h) = bytes;
    HandleAccess::esize(h) = static_cast<std::uint32_t>(esize);
    if (kind == CommandKind::get) {
      HandleAccess::unpack(h) = origin;
      HandleAccess::unpack_layout(h) = local;
    }
  }
  return true;
}

void ProgressEngine::release(Handle& h) {
  const auto slot = static_cast<std::uint32_t>(HandleAccess::slot(h));
  unit_area(node_app_)->state[slot].store(slot_free, std::memory_order_relaxed);
  free_slots_.push_back(slot);
  if (HandleAccess::staged_bytes(h) > 0) --staged_live_;
  HandleAccess::slot(h) = -1;
  HandleAccess::set_state(h, HandleAccess::State::spent);
  HandleAccess::staged_bytes(h) = 0;
  HandleAccess::unpack(h) = nullptr;
}

bool ProgressEngine::finish(Handle& h) {
  std::lock_guard<std::recursive_mutex> lock(app_mutex_);
  UnitArea* a = unit_area(node_app_);
  const auto slot = static_cast<std::uint32_t>(HandleAccess::slot(h));
  const std::uint32_t st = a->state[slot].load(std::memory_order_acquire);
  if (st == slot_pending) return false;
  if (st == slot_error) {
    std::string msg(a->error, strnlen(a->error, sizeof a->error));
    release(h);
    throw Error("progress process (rank " + std::to_string(my_server_rank()) + "): " + msg);
  }
  if (void* dst = HandleAccess::unpack(h)) {
    const Layout& l = HandleAccess::unpack_layout(h);
    copy_strided(static_cast<char*>(dst), l, staging(a) + HandleAccess::staged(h), packed(l),
                 HandleAccess::esize(h));
  }
  release(h);
  return true;
}

bool ProgressEngine::test(Handle& h) {
  if (finish(h)) return true;
  poke();  // as MPI_Test does: a unit testing in a loop keeps MPI moving
  return false;
}

void ProgressEngine::poke() {
  // MPICH's RMA on dynamic windows runs on active messages: a target that
  // never enters MPI stalls the servers' transfers to it. Waiting units
  // therefore keep MPI progressing.
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, layout_.app_comm, &flag, MPI_STATUS_IGNORE);
}

void ProgressEngine::wait(Handle& h) {
  if (finish(h)) return;
  UnitArea* a = unit_area(node_app_);
  a->waiting.store(1, std::memory_order_relaxed);
  wake(servers_[static_cast<std::size_t>(server_in_node(node_app_, layout_.node_servers))]);
  unsigned spins = 0;
  try {
    while (!finish(h)) {
      poke();
      relax(spins);
    }
  } catch (...) {
    a->waiting.store(0, std::memory_order_relaxed);
    throw;
  }
  a->waiting.store(0, std::memory_order_relaxed);
}

void ProgressEngine::quiesce() {
  std::lock_guard<std::recursive_mutex> lock(app_mutex_);
  UnitArea* a = unit_area(node_app_);
  if (free_slots_.size() == kCompletion) return;
  a->waiting.store(1, std::memory_order_relaxed);
  unsigned spins = 0;
  for (std::uint32_t s = 0; s < kCompletion; ++s)
    while (a->state[s].load(std::memory_order_acquire) == slot_pending) {
      poke();
      relax(spins);
    }
  a->waiting.store(0, std::memory_order_relaxed);
}

void ProgressEngine::shutdown_app() {
  quiesce();
  notify_servers(Control::exit, 0, 0);
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
  MPI_Win_free(&boot_);
}

// ------------------------------------------------------------ server side

void ProgressEngine::fail(UnitArea* a, std::uint32_t slot, const std::string& what) {
  std::size_t n = std::min(what.size(), sizeof a->error - 1);
  std::memcpy(a->error, what.data(), n);
  a->error[n] = '\0';
  a->state[slot].store(slot_error, std::memory_order_release);
}

void ProgressEngine::execute(int node_app, const Command& c, std::vector<Pending>& pending) {
  UnitArea* a = unit_area(node_app);
  const char* what = c.kind == CommandKind::get ? "get" : "put";
  const std::size_t rbytes = c.remote.extent() * c.esize, lbytes = c.local.extent() * c.esize;
  auto it = segs_.find(c.segment);
  if (c.team != 0 || it == segs_.end())
    return fail(a, c.slot,
                std::string(what) + ": segment " + std::to_string(c.segment) + " of team " +
                    std::to_string(c.team) + " is not known to the progress process");
  ServerSegment& s = it->second;
  if (c.target < 0 || static_cast<std::size_t>(c.target) >= s.bytes.size())
    return fail(a, c.slot, std::string(what) + ": unit " + std::to_string(c.target) + " is not in team 0");
  if (std::string problem = bounds_problem(what, c.team, c.segment, c.target, c.target_offset, rbytes,
                                           s.bytes[static_cast<std::size_t>(c.target)]);
      !problem.empty())
    return fail(a, c.slot, problem);
  char* origin = nullptr;
  const int me = node_units_[static_cast<std::size_t>(node_app)];
  if (c.origin_segment < 0) {
    if (c.origin_offset + lbytes > settings_.staging)
      return fail(a, c.slot, std::string(what) + ": staged data outside the staging area");
    origin = staging(a) + c.origin_offset;
  } else {
    auto o = segs_.find(c.origin_segment);
    if (o == segs_.end() || !o->second.peer[static_cast<std::size_t>(me)] ||
        c.origin_offset + lbytes > o->second.bytes[static_cast<std::size_t>(me)])
      return fail(a, c.slot,
                  std::string(what) + ": origin buffer outside segment " + std::to_string(c.origin_segment));
    origin = o->second.peer[static_cast<std::size_t>(me)] + c.origin_offset;
  }
  // The same executor as the units' direct and shared paths.
  Endpoint e;
  if (c.same_node) {
    e.shared = s.peer[static_cast<std::size_t>(c.target)];
    if (!e.shared)
      return fail(a, c.slot, std::string(what) + ": unit " + std::to_string(c.target) + " is not on my node");
    e.shared += c.target_offset;
  } else {
    e.win = s.rma;
    e.rank = c.target;
    e.disp = s.disp[static_cast<std::size_t>(c.target)] + static_cast<MPI_Aint>(c.target_offset);
  }
  const bool get = c.kind == CommandKind::get;
  const Started st = start_transfer(get, origin, c.local, e, c.remote, c.esize);
  if (st.rc != MPI_SUCCESS)
    return fail(a, c.slot, std::string(get ? "MPI_Rget" : "MPI_Rput") + ": " + mpi_error_text(st.rc));
  if (st.complete()) {
    a->state[c.slot].store(slot_done, std::memory_order_release);
    return;
  }
  pending.push_back(Pending{a, c.slot, e.win, c.target, st.req, st.flush});
}

std::size_t ProgressEngine::drain(int node_app, std::vector<Pending>& pending) {
  UnitArea* a = unit_area(node_app);
  const std::uint64_t head = a->head.load(std::memory_order_acquire);
  std::uint64_t tail = a->tail.load(std::memory_order_relaxed);
  std::size_t n = 0;
  for (; tail < head && n < 64; ++tail, ++n) {
    const Command c = a->ring[tail % kRingSlots];
    execute(node_app, c, pending);
  }
  a->tail.store(tail, std::memory_order_release);
  return n;
}

bool ProgressEngine::progress(std::vector<Pending>& pending, bool force) {
  bool any = false;
  std::set<std::pair<MPI_Win, int>> targets;  // of puts (and request-less pieces) awaiting a flush
  for (auto it = pending.begin(); it != pending.end();) {
    if (it->req != MPI_REQUEST_NULL) {
      int flag = 0;
      const int rc = MPI_Test(&it->req, &flag, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        fail(it->unit, it->slot, "MPI_Test: " + mpi_error_text(rc));
        it = pending.erase(it);
        any = true;
        continue;
      }
      if (!flag) {
        ++it;
        continue;
      }
      any = true;
      if (!it->flush) {  // a get's request completes when the data is here
        it->unit->state[it->slot].store(slot_done, std::memory_order_release);
        it = pending.erase(it);
        continue;
      }
    }
    targets.insert({it->win, it->target});
    ++it;
  }
  if (targets.empty() || !force) return any;
  std::map<std::pair<MPI_Win, int>, int> result;
  for (const auto& t : targets) result[t] = MPI_Win_flush(t.second, t.first);
  for (auto it = pending.begin(); it != pending.end();) {
    if (it->req != MPI_REQUEST_NULL) {
      ++it;
      continue;
    }
    const int rc = result[{it->win, it->target}];
    if (rc == MPI_SUCCESS) {
      it->unit->state[it->slot].store(slot_done, std::memory_order_release);
    } else {
      fail(it->unit, it->slot, "MPI_Win_flush: " + mpi_error_text(rc));
    }
    it = pending.erase(it);
  }
  return true;
}

void ProgressEngine::flush_pending(std::vector<Pending>& pending) {
  unsigned spins = 0;
  while (!pending.empty())
    if (!progress(pending, true)) relax(spins);
}

bool ProgressEngine::has_work(ServerArea* me) const {
  for (int a : my_units_) {
    const UnitArea* u = unit_area(a);
    if (u->head.load(std::memory_order_relaxed) != u->tail.load(std::memory_order_relaxed)) return true;
  }
  return me->seq.load(std::memory_order_relaxed) != seen_seq_;
}

namespace {
double now_us() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}
}  // namespace

void ProgressEngine::idle(unsigned& passes) {
  if (passes++ == 0) idle_since_ = now_us();
  if (redirect_ || applier_) {
    // Operations aimed at my units arrive at me (redirected, or aggregated
    // batches to apply): keep MPI progressing (an MPI library may apply
    // accumulates only when the target enters MPI), yielding the core
    // between polls. (Naps between polls were measured
    // worse: a woken process waits milliseconds for a busy core.)
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, layout_.full_comm, &flag, MPI_STATUS_IGNORE);
    if (settings_.idle != IdlePolicy::spin) sched_yield();
    return;
  }
  if (settings_.idle == IdlePolicy::spin || passes < 64) return;
  if (settings_.idle == IdlePolicy::yield || now_us() - idle_since_ < settings_.linger_us) {
    sched_yield();
    return;
  }
  // sleep: on a futex that every command, event and waiting unit bumps;
  // the timeout only bounds the cost of a lost race.
  ServerArea* me = servers_[static_cast<std::size_t>(node_server_)];
  const std::uint32_t w = me->wake.load(std::memory_order_acquire);
  me->sleeping.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!has_work(me)) futex_wait(&me->wake, w, settings_.max_sleep_us);
  me->sleeping.store(0, std::memory_order_relaxed);
}

void ProgressEngine::server_alloc(int segment) {
  ServerSegment s;
  void* base = nullptr;
  s.shm = allocate_shared_pages(0, layout_.node_full, &base);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, s.shm);
  const std::size_t apps = layout_.app_ranks.size();
  std::vector<Claim> all(apps);
  locus::yielding::bcast(all.data(), static_cast<int>(apps * sizeof(Claim)), MPI_BYTE, 0, layout_.node_full);
  s.peer.assign(apps, nullptr);
  s.disp.resize(apps);
  s.bytes.resize(apps);
  for (std::size_t u = 0; u < apps; ++u) {
    s.disp[u] = static_cast<MPI_Aint>(all[u].disp);
    s.bytes[u] = static_cast<std::size_t>(all[u].bytes);
  }
  for (std::size_t i = 0; i < node_units_.size(); ++i) {
    s.peer[static_cast<std::size_t>(node_units_[i])] = shared_part(s.shm, static_cast<int>(i), nullptr);
  }
  if ((*detail::core().settings).window == WindowKind::segment) {
    // Redirection (async.hpp): expose my node's parts, from the lowest to
    // the end of the highest, so that origins reach a unit's byte x at
    // its ghost_disp + x.
    char* lo = nullptr;
    char* hi = nullptr;
    for (std::size_t i = 0; i < node_units_.size(); ++i) {
      const auto u = static_cast<std::size_t>(node_units_[i]);
      if (s.bytes[u] == 0 || !s.peer[u]) continue;
      if (!lo || s.peer[u] < lo) lo = s.peer[u];
      if (!hi || s.peer[u] + s.bytes[u] > hi) hi = s.peer[u] + s.bytes[u];
    }
    s.own = create_segment_window(lo, lo ? static_cast<std::size_t>(hi - lo) : 0, layout_.full_comm);
    MPI_Win_set_errhandler(s.own, MPI_ERRORS_RETURN);
    s.rma = s.own;
  } else {
    s.rma = win_;
  }
  segs_[segment] = std::move(s);
}

void ProgressEngine::server_free(int segment) {
  auto it = segs_.find(segment);
  if (it == segs_.end()) return;
  if (it->second.own != MPI_WIN_NULL) free_segment_window(it->second.own);
  MPI_Win_unlock_all(it->second.shm);
  MPI_Win_free(&it->second.shm);
  segs_.erase(it);
}

int ProgressEngine::serve() {
  ServerArea* me = servers_[static_cast<std::size_t>(node_server_)];
  std::vector<Pending> pending;
  unsigned idle_passes = 0;
  bool running = true;
  while (running) {
    std::size_t work = 0;
    bool waiting = false;
    for (int a : my_units_) {
      work += drain(a, pending);
      waiting = waiting || unit_area(a)->waiting.load(std::memory_order_relaxed) != 0;
    }
    if (applier_) work += applier_->poll();
    bool moved = false;
    if (!pending.empty()) moved = progress(pending, work == 0 || waiting || pending.size() >= 64);
    // A collective event starts once every unit of the node has arrived at
    // it: until then the rings are served (a unit may still wait for us).
    const std::uint64_t seq = me->seq.load(std::memory_order_acquire);
    if (seq != seen_seq_ &&
        me->arrived.load(std::memory_order_acquire) >= seq * static_cast<std::uint64_t>(layout_.node_apps)) {
      seen_seq_ = seq;
      flush_pending(pending);
      // Read the event before its collective: once that completes, the
      // node's first unit may post the next one.
      const Control kind = me->kind;
      const int segment = me->segment;
      me->done.store(seq, std::memory_order_release);
      switch (kind) {
        case Control::alloc:
          server_alloc(segment);
          break;
        case Control::free:
          server_free(segment);
          break;
        case Control::exit:
          running = false;
          break;
        case Control::async:
          redirect_ = segment != 0;
          break;
        case Control::none:
          break;
      }
      ++work;
    }
    if (work == 0 && pending.empty()) {
      idle(idle_passes);
    } else {
      idle_passes = 0;
      // Transfers in flight that did not move: let the target (maybe on
      // this core) run, unless told to spin.
      if (work == 0 && !moved && settings_.idle != IdlePolicy::spin) sched_yield();
    }
  }
  // The application freed every segment before it sent exit (and flushed
  // every aggregated batch before that).
  if (applier_) applier_->stop();
  MPI_Win_unlock_all(win_);
  MPI_Win_free(&win_);
  MPI_Win_free(&boot_);
  return 0;
}

}  // namespace detail
}  // namespace locus
