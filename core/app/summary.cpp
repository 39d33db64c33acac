// The run's summary (profile.hpp): what every app prints at the end and
// stores in its output.
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "locus/app.hpp"
#include "locus/machine.hpp"
#include "locus/plan.hpp"
#include "locus/profile.hpp"
#include "locus/version.hpp"

namespace locus {

namespace {
// Six significant digits: timers are not reproducible beyond that anyway.
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
}  // namespace

Summary::Summary(const Context& ctx, const std::vector<TimerStats>& timers) {
  head_["app"] = ctx.app().name;
  head_["name"] = ctx.run_name();
  head_["ranks"] = ctx.size();
  setup_["deck"] = ctx.config().source();
  {
    // where it ran from: the deck's absolute path and the working directory
    std::error_code ec, ec2;
    const auto cwd = std::filesystem::current_path(ec);
    setup_["working_directory"] = ec ? std::string("unknown") : cwd.string();
    const std::string src = ctx.config().source();
    if (!src.empty() && std::filesystem::exists(src, ec2))
      setup_["deck_path"] = std::filesystem::absolute(src, ec2).lexically_normal().string();
  }
  // Distinct nodes, in rank order.
  YAML::Node nodes(YAML::NodeType::Sequence);
  std::vector<std::string> seen;
  for (const auto& n : ctx.node_names())
    if (std::find(seen.begin(), seen.end(), n) == seen.end()) seen.push_back(n);
  for (const auto& n : seen) nodes.push_back(n);
  setup_["nodes"] = nodes;
  const NodeMap& nm = ctx.runtime().node_map();
  YAML::Node map;
  map["emulated_node_size"] = nm.emulated_size;
  map["node_of_unit"] = yaml_flow_list(nm.node_of);
  setup_["node_map"] = map;
  // Who served: progress processes (ranks in MPI_COMM_WORLD) and thread.
  const Runtime& rt = ctx.runtime();
  YAML::Node progress;
  progress["processes"] = yaml_flow_list(rt.server_ranks());
  progress["unit_ranks"] = yaml_flow_list(rt.app_ranks());
  progress["cpus"] = yaml_flow_list(rt.bound_cpus());
  progress["binding"] = rt.binding();
  progress["thread"] = rt.settings().progress.thread;
  progress["offloaded_unit0"] = rt.offloaded();
  setup_["progress"] = progress;
  // Routes to other nodes (comm.remote): the mode, where auto's calibration
  // came from, and what this unit's plans chose.
  {
    const RemoteSettings& rs = rt.settings().remote;
    YAML::Node remote;
    remote["mode"] = rs.mode == RemoteMode::rma ? "rma" : rs.mode == RemoteMode::message ? "message" : "auto";
    remote["why"] = rs.why;
    remote["faces"] = rs.faces == RemoteFaces::direct ? "direct" : "packed";
    if (!rs.calibration.empty()) remote["calibration"] = rs.calibration;
    const RemoteRoutes r = remote_routes();
    remote["message_pairs_unit0"] = r.message_pairs;
    remote["rma_pairs_unit0"] = r.rma_pairs;
    if (r.message_pairs) remote["message_max_bytes"] = r.message_max_bytes;
    if (r.rma_pairs) remote["rma_max_bytes"] = r.rma_max_bytes;
    remote["requests"] = rs.requests == RemoteRequests::immediate    ? "immediate"
                         : rs.requests == RemoteRequests::persistent ? "persistent"
                         : rs.requests == RemoteRequests::eager      ? "eager"
                                                                     : "auto";
    if (r.message_pairs) {
      remote["persistent_plans_unit0"] = r.persistent_plans;
      remote["immediate_plans_unit0"] = r.immediate_plans;
      remote["eager_plans_unit0"] = r.eager_plans;
    }
    setup_["remote"] = remote;
  }
  setup_["htm"] = rt.settings().htm_why;  // comm.htm: same-node accumulate runs as transactions
  YAML::Node machine;
  for (const auto& [k, v] : machine_description()) machine[k] = v;
  setup_["machine"] = machine;
  setup_["config"] = YAML::Load(ctx.config().yaml());
  for (const auto& s : timers) {
    YAML::Node t;
    t["min"] = short_number(s.min);
    t["avg"] = short_number(s.avg);
    t["max"] = short_number(s.max);
    timers_[s.name] = t;
  }
}

// Results first (what a reader looks for), then what produced them.
YAML::Node Summary::tree() const {
  YAML::Node t;
  for (auto it = head_.begin(); it != head_.end(); ++it) t[it->first] = it->second;
  t["timers_seconds"] = timers_;
  t["results"] = results;
  if (async.IsDefined() && !async.IsNull()) t["async"] = async;
  t["validation"] = validation;
  t["output"] = output;
  if (requirements.IsDefined() && !requirements.IsNull()) t["requirements"] = requirements;
  for (auto it = setup_.begin(); it != setup_.end(); ++it) t[it->first] = it->second;
  return t;
}

std::string Summary::yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "locus_summary" << YAML::Value << tree() << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

std::string Summary::json() const {
  YAML::Node root;
  root["locus_summary"] = tree();
  return yaml_to_json(root);
}

}  // namespace locus
