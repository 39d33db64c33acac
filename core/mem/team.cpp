#include "locus/team.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "comm/aggregate.hpp"
#include "locus/async.hpp"
#include "locus/collective.hpp"
#include "locus/mpi_env.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"
#include "progress/progress_engine.hpp"
#include "progress/progress_thread.hpp"
#include "runtime/runtime_state.hpp"

namespace locus {

namespace {
Runtime* g_runtime = nullptr;

std::vector<std::string> processor_names(MPI_Comm comm) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return out;
}

// Node index of every unit: real shared-memory nodes, each cut into groups
// of `emulated` consecutive ranks when emulated > 0.
std::vector<int> detect_nodes(MPI_Comm comm, int emulated) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm shared;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
  int local = 0;
  MPI_Comm_rank(shared, &local);
  int leader = rank;  // lowest world rank of my real node
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared);
  MPI_Comm_free(&shared);
  int key[2] = {leader, emulated > 0 ? local / emulated : 0};
  std::vector<int> all(2 * static_cast<std::size_t>(size));
  MPI_Allgather(key, 2, MPI_INT, all.data(), 2, MPI_INT, comm);
  // Number the distinct (leader, group) pairs in order of first appearance.
  std::vector<std::pair<int, int>> seen;
  std::vector<int> node_of(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    std::pair<int, int> k{all[2 * r], all[2 * r + 1]};
    auto it = std::find(seen.begin(), seen.end(), k);
    if (it == seen.end()) {
      seen.push_back(k);
      it = seen.end() - 1;
    }
    node_of[static_cast<std::size_t>(r)] = static_cast<int>(it - seen.begin());
  }
  return node_of;
}
}  // namespace

int NodeMap::nodes() const {
  return node_of.empty() ? 0 : *std::max_element(node_of.begin(), node_of.end()) + 1;
}

std::string NodeMap::describe() const {
  std::ostringstream os;
  for (int n = 0; n < nodes(); ++n) {
    os << "node " << n << ": units";
    for (std::size_t u = 0; u < node_of.size(); ++u)
      if (node_of[u] == n) os << ' ' << u;
    for (std::size_t u = 0; u < node_of.size(); ++u)
      if (node_of[u] == n) {
        os << " (" << hosts[u] << (emulated_size > 0 ? ", emulated" : "") << ")";
        break;
      }
    os << '\n';
  }
  return os.str();
}

// ---------------------------------------------------------------- Team

Team::Team(MPI_Comm comm, int id, int world_rank, const std::vector<int>& node_of_world,
           MPI_Win served_window, MPI_Comm shm_comm)
    : comm_(comm), id_(id) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  node_of_world_ = &node_of_world;
  world_unit_.resize(static_cast<std::size_t>(size_));
  MPI_Allgather(&world_rank, 1, MPI_INT, world_unit_.data(), 1, MPI_INT, comm_);
  int my_node = node_of_world[static_cast<std::size_t>(world_rank)];
  MPI_Comm_split(comm_, my_node, rank_, &node_comm_);
  // Rank in node_comm_ of every same-node unit: split keeps team order.
  node_rank_.assign(static_cast<std::size_t>(size_), -1);
  int next = 0;
  for (int u = 0; u < size_; ++u)
    if (node_of_world[static_cast<std::size_t>(world_unit_[static_cast<std::size_t>(u)])] == my_node)
      node_rank_[static_cast<std::size_t>(u)] = next++;
  shm_comm_ = shm_comm != MPI_COMM_NULL ? shm_comm : node_comm_;
  // Segments are attached to it as they are allocated. A served team uses
  // the progress engine's window (apps first, so team unit = window rank),
  // which the engine owns.
  if (served_window != MPI_WIN_NULL) {
    win_ = served_window;
  } else {
    MPI_Win_create_dynamic(MPI_INFO_NULL, comm_, &win_);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win_);
  }
}

Team::~Team() {
  if (!collective_cleanup_allowed()) return;  // a local error: the job aborts next
  // Segments still allocated on this team go with it (collectively: a team
  // is destroyed by all its units together).
  // Aggregated batches still in flight land in this team's segments.
  if (agg_) agg_->shutdown();
  if (Runtime::exists()) Runtime::current().release_segments(id_);
  if (agg_ && Runtime::exists()) Runtime::current().state().segments.set_aggregator(id_, nullptr);
  agg_.reset();
  if (win_ != MPI_WIN_NULL && !served()) {
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }
  if (node_comm_ != MPI_COMM_NULL) MPI_Comm_free(&node_comm_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  if (Runtime::exists() && id_ != 0) Runtime::current().remove_team(id_);
}

std::unique_ptr<Team> Team::split(int color) const {
  Runtime& rt = Runtime::current();
  int id = rt.max_team_id() + 1;
  // Every member of this team agrees on the new id; disjoint new teams may
  // share it, which is fine: a unit belongs to only one of them.
  MPI_Allreduce(MPI_IN_PLACE, &id, 1, MPI_INT, MPI_MAX, comm_);
  MPI_Comm sub;
  MPI_Comm_split(comm_, color, rank_, &sub);
  std::unique_ptr<Team> t(new Team(sub, id, rt.world().rank(), *node_of_world_));
  rt.add_team(t.get());
  return t;
}

void Team::set_aggregator(std::unique_ptr<detail::Aggregator> a) {
  agg_ = std::move(a);
  Runtime::current().state().segments.set_aggregator(id_, agg_.get());
}

int next_segment_id(Team& t) {
  return t.next_segment_++;
}

// ---------------------------------------------------------------- Runtime

Runtime::Runtime(MPI_Comm comm, const CommSettings& settings) : settings_(settings) {
  if (g_runtime) throw Error("internal: a locus runtime exists already");
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> node_of = detect_nodes(comm, settings.node_size);
  std::vector<std::string> hosts = processor_names(comm);
  nodes_.emulated_size = settings.node_size;
  const int k = settings.progress.processes_per_node;
  state_ = std::make_unique<detail::RuntimeState>();
  g_runtime = this;
#ifdef NDEBUG
  const bool check = settings.check;
#else
  const bool check = true;
#endif
  state_->segments.publish(settings.locality, check);
  detail::async_start(settings);
  if (k > 0) {
    detail::ProgressLayout layout;
    try {
      layout = detail::make_progress_layout(comm, node_of, k);
    } catch (...) {
      g_runtime = nullptr;
      state_->segments.unpublish();
      throw;
    }
    if (settings.progress.bind) {
      detail::Binding b = detail::bind_progress_layout(comm, layout);
      bound_cpus_ = std::move(b.cpu);
      binding_ = std::move(b.how);
    } else {
      bound_cpus_.assign(static_cast<std::size_t>(size), -1);
      binding_ = "not bound (runtime.progress.bind: none)";
    }
    state_->engine = std::make_unique<detail::ProgressEngine>(
        layout, settings.progress,
        settings.aggregate.applier == AggregateApplier::progress ? &settings.aggregate : nullptr);
    state_->engine->set_redirect(settings.async.mode == AsyncMode::on);
    server_ = layout.server;
    app_ranks_ = layout.app_ranks;
    server_ranks_ = layout.server_ranks;
    for (int r : app_ranks_) {
      nodes_.node_of.push_back(node_of[static_cast<std::size_t>(r)]);
      nodes_.hosts.push_back(hosts[static_cast<std::size_t>(r)]);
    }
    if (server_) return;
    app_comm_ = layout.app_comm;
  } else {
    nodes_.node_of = node_of;
    nodes_.hosts = hosts;
    for (int r = 0; r < size; ++r) app_ranks_.push_back(r);
    app_comm_ = comm;
  }
  MPI_Comm dup;
  MPI_Comm_dup(app_comm_, &dup);
  int unit = 0;
  MPI_Comm_rank(app_comm_, &unit);
  if (const detail::ProgressEngine* engine = state_->engine.get())
    world_.reset(new Team(dup, 0, unit, nodes_.node_of, engine->window(), engine->layout().node_full));
  else
    world_.reset(new Team(dup, 0, unit, nodes_.node_of));
  add_team(world_.get());
  node_ = world_->split(nodes_.node_of[static_cast<std::size_t>(unit)]);
  if (settings.progress.thread) {
    require_thread_level(MPI_THREAD_MULTIPLE, "runtime.progress.thread");
    state_->thread =
        std::make_unique<detail::ProgressThread>(settings.progress.thread_interval_us, world_->comm());
  }
}

Runtime::~Runtime() {
  if (!collective_cleanup_allowed()) {  // a local error: the job aborts next
    g_runtime = nullptr;
    state_->segments.unpublish();
    (void)node_.release();
    (void)world_.release();
    (void)state_->engine.release();
    (void)state_->thread.release();
    (void)state_.release();
    return;
  }
  state_->thread.reset();
  node_.reset();
  world_.reset();  // releases the world's segments
  if (state_->engine && !server_) state_->engine->shutdown_app();
  state_->engine.reset();
  state_->types.types.clear();  // the cached MPI datatypes, before MPI_Finalize
  detail::async_stop();
  state_->segments.unpublish();
  g_runtime = nullptr;
  state_.reset();
}

int Runtime::serve() {
  if (!server_) throw Error("internal: serve() called on an application unit");
  return state_->engine->serve();
}

std::uint64_t Runtime::thread_completions() const {
  return state_->thread ? state_->thread->completed_by_thread() : 0;
}

void Runtime::pause_progress_thread(bool pause) {
  if (state_->thread) state_->thread->pause(pause);
}

std::uint64_t Runtime::offloaded() const {
  return state_->engine && !server_ ? state_->engine->submitted() : 0;
}

std::string Runtime::progress_description() const {
  std::ostringstream os;
  const auto& p = settings_.progress;
  if (server_ranks_.empty()) {
    os << "progress processes: none";
  } else {
    os << "progress processes: rank" << (server_ranks_.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < server_ranks_.size(); ++i) os << (i ? ", " : "") << server_ranks_[i];
    os << " (" << p.processes_per_node << " per node; threshold " << p.threshold << " B, staging "
       << p.staging << " B, idle " << idle_policy_name(p.idle) << "; CPUs ";
    if (binding_ == "auto") {
      for (std::size_t i = 0; i < bound_cpus_.size(); ++i) os << (i ? "," : "") << bound_cpus_[i];
      os << " by rank";
    } else {
      os << binding_;
    }
    os << ")";
    if (settings_.aggregate.applier == AggregateApplier::progress)
      os << "; they apply the world team's aggregated batches (comm.aggregate.applier: progress)";
  }
  os << "; progress thread: ";
  if (p.thread)
    os << "on (every " << p.thread_interval_us << " us)";
  else
    os << "off";
  return os.str();
}

Runtime& Runtime::current() {
  if (!g_runtime) throw Error("internal: no locus runtime (create one with locus::run or locus::Runtime)");
  return *g_runtime;
}

bool Runtime::exists() {
  return g_runtime != nullptr;
}

Team& Runtime::team(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= teams_.size() || !teams_[static_cast<std::size_t>(id)])
    throw Error("team " + std::to_string(id) + " does not exist (freed?)");
  return *teams_[static_cast<std::size_t>(id)];
}

void Runtime::add_team(Team* t) {
  if (teams_.size() <= static_cast<std::size_t>(t->id()))
    teams_.resize(static_cast<std::size_t>(t->id()) + 1);
  teams_[static_cast<std::size_t>(t->id())] = t;
  max_team_id_ = std::max(max_team_id_, t->id());
}

void Runtime::remove_team(int id) {
  if (id >= 0 && static_cast<std::size_t>(id) < teams_.size()) teams_[static_cast<std::size_t>(id)] = nullptr;
}

void Runtime::release_segments(int team) {
  std::vector<int> ids;
  state_->segments.for_each(team, [&](const SegmentInfo& seg) { ids.push_back(seg.id); });
  for (int id : ids) detail::free_segment(team, id);
}

namespace detail {

Direct g_direct;
constinit thread_local Lookahead t_lookahead;

RuntimeState& state() {
  return Runtime::current().state();
}

RuntimeState* state_if_any() noexcept {
  return g_runtime ? &g_runtime->state() : nullptr;
}

SegmentInfo& segment(int team, int id) {
  SegmentInfo* s = state().segments.find(team, id);
  if (!s)
    throw Error("segment " + std::to_string(id) + " of team " + std::to_string(team) +
                " is not allocated (freed, or a stale global pointer)");
  return *s;
}

const SegmentInfo* segment_containing(int team, const void* p, std::size_t bytes) {
  const char* c = static_cast<const char*>(p);
  const SegmentInfo* found = nullptr;
  const auto me = static_cast<std::size_t>(Runtime::current().world().rank());
  state().segments.for_each(team, [&](const SegmentInfo& seg) {
    if (found || !seg.base) return;
    if (c >= seg.base && c + bytes <= seg.base + seg.bytes[me]) found = &seg;
  });
  return found;
}

MPI_Win team_window(const Team& team) {
  return team.win_;
}

// ------------------------------------------------------- SegmentTable

void SegmentTable::add(std::unique_ptr<SegmentInfo> s) {
  const auto t = static_cast<std::size_t>(s->team), i = static_cast<std::size_t>(s->id);
  if (rows_.size() <= t) {
    rows_.resize(t + 1);
    direct_.resize(t + 1);
  }
  if (rows_[t].size() <= i) {
    rows_[t].resize(i + 1);
    direct_[t].resize(i + 1);
  }
  if (rows_[t][i]) (void)take(s->team, s->id);
  rows_[t][i] = s.get();
  mirror(*s);
  owned_.push_back(std::move(s));
  reindex();
}

std::unique_ptr<SegmentInfo> SegmentTable::take(int team, int id) {
  SegmentInfo* p = find(team, id);
  if (!p) return nullptr;
  const auto t = static_cast<std::size_t>(team), i = static_cast<std::size_t>(id);
  rows_[t][i] = nullptr;
  direct_[t][i] = DirectSegment{};
  std::unique_ptr<SegmentInfo> s;
  for (auto it = owned_.begin(); it != owned_.end(); ++it)
    if (it->get() == p) {
      s = std::move(*it);
      owned_.erase(it);
      break;
    }
  return s;
}

void SegmentTable::refresh(int team) {
  for_each(team, [this](const SegmentInfo& s) { mirror(s); });
}

// The inline path's entry of one segment, from its record.
void SegmentTable::mirror(const SegmentInfo& s) {
  DirectSegment& d = direct_[static_cast<std::size_t>(s.team)][static_cast<std::size_t>(s.id)];
  d.peer = s.peer.data();
  d.bytes = s.bytes.data();
  d.units = static_cast<std::uint32_t>(s.peer.size());
  d.cpu_atomics = s.cpu_atomics && !s.redirect;
  d.aggregate = s.aggregate && s.cpu_atomics && !s.redirect;
}

// Points the index at the rows (a row's storage moves when it grows) and,
// when published, hands it to the inline path.
void SegmentTable::reindex() {
  index_.resize(direct_.size());
  for (std::size_t t = 0; t < direct_.size(); ++t)
    index_[t] = DirectRow{direct_[t].data(), static_cast<std::uint32_t>(direct_[t].size()),
                          t < aggregators_.size() ? aggregators_[t] : nullptr};
  if (published_) {
    g_direct.rows = index_.data();
    g_direct.nrows = static_cast<std::uint32_t>(index_.size());
  }
}

void SegmentTable::set_aggregator(int team, Aggregator* a) {
  const auto t = static_cast<std::size_t>(team);
  if (aggregators_.size() <= t) aggregators_.resize(t + 1, nullptr);
  aggregators_[t] = a;
  reindex();
}

void SegmentTable::publish(bool locality, bool check) {
  published_ = true;
  g_direct = Direct{locality, check, nullptr, 0};
  reindex();
}

void SegmentTable::unpublish() {
  if (published_) g_direct = Direct{};
  published_ = false;
}

}  // namespace detail

}  // namespace locus
