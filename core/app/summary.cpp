// The run's summary (app/summary.hpp): what every app prints at the end and
// stores in its output.
#include "app/summary.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "app/settings_summary.hpp"
#include "config/settings_table.hpp"
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
// A setting's value as YAML: numbers by their shortest text, lists inline.
YAML::Node yaml_printed(const Printed& p) {
  if (const double* d = std::get_if<double>(&p)) return yaml_number(*d);
  if (const auto* names = std::get_if<std::vector<std::string>>(&p)) return yaml_flow_list(*names);
  return std::visit([](const auto& v) { return YAML::Node(v); }, p);
}
}  // namespace

YAML::Node settings_summary(const CommSettings& settings) {
  YAML::Node tree(YAML::NodeType::Map);
  for (const Setting& e : settings_table()) {
    const std::optional<Printed> p = e.print(settings);
    if (!p) continue;
    const std::size_t dot = e.summary.find('.');
    if (dot == std::string::npos)
      tree[e.summary] = yaml_printed(*p);
    else
      tree[e.summary.substr(0, dot)][e.summary.substr(dot + 1)] = yaml_printed(*p);
  }
  return tree;
}

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
  // The core's settings at the places their table names (node_map,
  // progress, remote, htm; async only with redirection on, where
  // finish_output adds the decisions), then what the run made of them.
  const Runtime& rt = ctx.runtime();
  for (const auto& section : settings_summary(rt.settings())) {
    const std::string name = section.first.as<std::string>();
    if (name == "async")
      async = section.second;
    else
      setup_[name] = section.second;
  }
  setup_["node_map"]["node_of_unit"] = yaml_flow_list(rt.node_map().node_of);
  // Who served: progress processes (ranks in MPI_COMM_WORLD).
  YAML::Node progress = setup_["progress"];
  progress["processes"] = yaml_flow_list(rt.server_ranks());
  progress["unit_ranks"] = yaml_flow_list(rt.app_ranks());
  progress["cpus"] = yaml_flow_list(rt.bound_cpus());
  progress["binding"] = rt.binding();
  progress["offloaded_unit0"] = rt.offloaded();
  // Routes to other nodes (comm.remote): how auto's calibration was found,
  // and what this unit's plans chose.
  {
    YAML::Node remote = setup_["remote"];
    remote["why"] = rt.settings().remote.why;
    const RemoteRoutes r = remote_routes();
    remote["message_pairs_unit0"] = r.message_pairs;
    remote["rma_pairs_unit0"] = r.rma_pairs;
    if (r.message_pairs) remote["message_max_bytes"] = r.message_max_bytes;
    if (r.rma_pairs) remote["rma_max_bytes"] = r.rma_max_bytes;
    if (r.message_pairs) {
      remote["persistent_plans_unit0"] = r.persistent_plans;
      remote["immediate_plans_unit0"] = r.immediate_plans;
      remote["eager_plans_unit0"] = r.eager_plans;
    }
  }
  YAML::Node machine;
  for (const auto& [k, v] : machine_description()) machine[k] = v;
  setup_["machine"] = machine;
  setup_["config"] = YAML::Load(ctx.config().yaml());
  for (const auto& s : timers) {
    YAML::Node t;
    t["min"] = short_number(s.min);
    t["avg"] = short_number(s.avg);
    t["max"] = short_number(s.max);
    // the timer(s) around it: its time is part of theirs
    if (s.within.size() == 1) t["within"] = s.within[0];
    if (s.within.size() > 1) t["within"] = yaml_flow_list(s.within);
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
  if (validity.IsDefined() && !validity.IsNull()) t["validity"] = validity;
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
