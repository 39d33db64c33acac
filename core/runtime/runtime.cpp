// The Runtime (runtime.hpp): it builds the node map, the progress
// processes and thread and the world and node teams, owns the state of
// every layer (runtime_state.hpp) and attaches it for the layers below.
#include "locus/runtime.hpp"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "comm/aggregate.hpp"
#include "locus/async.hpp"
#include "locus/collective.hpp"
#include "locus/mpi_env.hpp"
#include "locus/wait.hpp"
#include "runtime/runtime_state.hpp"

namespace locus {

namespace {
// The runtime of this process (Runtime::current), while it lives.
Runtime* g_runtime = nullptr;
}  // namespace

Runtime::Runtime(MPI_Comm comm, const CommSettings& settings) : settings_(settings) {
  if (g_runtime) throw Error("internal: a locus runtime exists already");
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<int> node_of = detect_nodes(comm, settings.node_size);
  std::vector<std::string> hosts = processor_names(comm);
  nodes_.emulated_size = settings.node_size;
  state_ = std::make_unique<State>();
  detail::CoreState& core = state_->core;
  core.settings = &settings_;
  core.nodes = &nodes_;
  core.types = &state_->types;
  core.comm = &state_->comm;
  core.release_team = &detail::release_team;
  g_runtime = this;
  detail::attach_core(&core);
#ifdef NDEBUG
  const bool check = settings.check;
#else
  const bool check = true;
#endif
  core.segments.publish(settings.locality, check);
  detail::async_start(settings);
  if (settings.progress.processes_per_node > 0) {
    start_progress(comm, node_of, hosts);
    if (server_) return;
  } else {
    nodes_.node_of = node_of;
    nodes_.hosts = hosts;
    for (int r = 0; r < size; ++r) app_ranks_.push_back(r);
    app_comm_ = comm;
  }
  MPI_Comm dup;
  yielding::comm_dup(app_comm_, &dup);
  int unit = 0;
  MPI_Comm_rank(app_comm_, &unit);
  if (const detail::ProgressEngine* engine = state_->engine.get()) {
    world_.reset(new Team(dup, 0, unit, nodes_.node_of, engine->layout().node_full));
    core.windows[0] = engine->window();
  } else {
    world_.reset(new Team(dup, 0, unit, nodes_.node_of));
  }
  core.world = world_.get();
  node_ = world_->split(nodes_.node_of[static_cast<std::size_t>(unit)]);
  if (settings.progress.thread) {
    require_thread_level(MPI_THREAD_MULTIPLE, "runtime.progress.thread");
    state_->thread =
        std::make_unique<detail::ProgressThread>(settings.progress.thread_interval_us, world_->comm());
    core.thread = state_->thread.get();
  }
}

// Progress processes: the layout (the last k ranks of every node serve),
// binding, the engine (with the aggregate applier on servers when
// comm.aggregate.applier: progress), and who the application units are.
void Runtime::start_progress(MPI_Comm comm, const std::vector<int>& node_of,
                             const std::vector<std::string>& hosts) {
  int size = 0;
  MPI_Comm_size(comm, &size);
  detail::ProgressLayout layout;
  try {
    layout = detail::make_progress_layout(comm, node_of, settings_.progress.processes_per_node);
  } catch (...) {
    detail::attach_core(nullptr);
    g_runtime = nullptr;
    state_->core.segments.unpublish();
    throw;
  }
  if (settings_.progress.bind) {
    detail::Binding b = detail::bind_progress_layout(comm, layout);
    bound_cpus_ = std::move(b.cpu);
    binding_ = std::move(b.how);
  } else {
    bound_cpus_.assign(static_cast<std::size_t>(size), -1);
    binding_ = "not bound (runtime.progress.bind: none)";
  }
  detail::ServiceFactory applier;
  if (settings_.aggregate.applier == AggregateApplier::progress)
    applier = [this](MPI_Comm c,
                     detail::ServerService::Lookup lookup) -> std::unique_ptr<detail::ServerService> {
      return std::make_unique<detail::ServerApplier>(c, settings_.aggregate, std::move(lookup));
    };
  state_->engine = std::make_unique<detail::ProgressEngine>(layout, settings_.progress, applier);
  state_->engine->set_redirect(settings_.async.mode == AsyncMode::on);
  state_->core.engine = state_->engine.get();
  server_ = layout.server;
  app_ranks_ = layout.app_ranks;
  server_ranks_ = layout.server_ranks;
  for (int r : app_ranks_) {
    nodes_.node_of.push_back(node_of[static_cast<std::size_t>(r)]);
    nodes_.hosts.push_back(hosts[static_cast<std::size_t>(r)]);
  }
  if (!server_) app_comm_ = layout.app_comm;
}

Runtime::~Runtime() {
  if (!collective_cleanup_allowed()) {  // a local error: the job aborts next
    detail::attach_core(nullptr);
    g_runtime = nullptr;
    state_->core.segments.unpublish();
    (void)node_.release();
    (void)world_.release();
    (void)state_->engine.release();
    (void)state_->thread.release();
    (void)state_.release();
    return;
  }
  state_->thread.reset();
  state_->core.thread = nullptr;
  node_.reset();
  world_.reset();  // releases the world's segments
  state_->core.world = nullptr;
  if (state_->engine && !server_) state_->engine->shutdown_app();
  state_->engine.reset();
  state_->core.engine = nullptr;
  state_->types.types.clear();  // the cached MPI datatypes, before MPI_Finalize
  detail::async_stop();
  state_->core.segments.unpublish();
  detail::attach_core(nullptr);
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
  return detail::team(id);
}

}  // namespace locus
