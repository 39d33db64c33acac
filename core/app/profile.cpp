#include "locus/profile.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "locus/app.hpp"
#include "locus/error.hpp"
#include "locus/plan.hpp"
#include "locus/version.hpp"

namespace locus {

Timers::Timers(std::vector<std::string> names)
    : names_(std::move(names)), total_(names_.size(), 0.0), started_(names_.size(), -1.0) {}

std::size_t Timers::index(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) throw Error("internal: unknown timer " + name);
  return static_cast<std::size_t>(it - names_.begin());
}

// Every timer is also a Kokkos::Profiling region ("locus::NAME"), and a
// timer stops only after Kokkos::fence(), so that asynchronous kernels
// are counted where they ran.
void Timers::start(const std::string& name) {
  std::size_t i = index(name);
  if (Kokkos::is_initialized()) Kokkos::Profiling::pushRegion("locus::" + name);
  started_[i] = MPI_Wtime();
}

void Timers::stop(const std::string& name) {
  std::size_t i = index(name);
  if (started_[i] < 0) throw Error("internal: timer " + name + " stopped before it started");
  const bool kokkos = Kokkos::is_initialized();
  if (kokkos) Kokkos::fence();
  total_[i] += MPI_Wtime() - started_[i];
  started_[i] = -1.0;
  if (kokkos) Kokkos::Profiling::popRegion();
}

void Timers::add(const std::string& name, double seconds) {
  total_[index(name)] += seconds;
}

double Timers::seconds(const std::string& name) const {
  return total_[index(name)];
}

YAML::Node yaml_number(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return YAML::Node(std::string(buf, res.ptr));
}

double rate(double work, double seconds) {
  if (!(seconds > 0) || !std::isfinite(work)) return 0.0;
  const double v = work / seconds;
  if (v == 0 || !std::isfinite(v)) return v;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return std::strtod(buf, nullptr);
}

YAML::Node figure_of_merit(const std::string& name, double work, const std::string& unit, double seconds,
                           const std::string& divides_by) {
  YAML::Node f;
  f["name"] = name;
  f["value"] = yaml_number(rate(work, seconds));
  f["unit"] = unit;
  f["seconds"] = yaml_number(seconds);
  f["divides_by"] = divides_by;
  return f;
}

std::vector<TimerStats> reduce_timers(const Timers& t, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const auto& v = t.values();
  int n = static_cast<int>(v.size());
  std::vector<double> mn(v.size()), mx(v.size()), sum(v.size());
  MPI_Allreduce(v.data(), mn.data(), n, MPI_DOUBLE, MPI_MIN, comm);
  MPI_Allreduce(v.data(), mx.data(), n, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(v.data(), sum.data(), n, MPI_DOUBLE, MPI_SUM, comm);
  std::vector<TimerStats> out;
  for (std::size_t i = 0; i < v.size(); ++i) out.push_back({t.names()[i], mn[i], sum[i] / size, mx[i]});
  return out;
}

std::vector<double> gather_timers(const Timers& t, MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  const auto& v = t.values();
  std::vector<double> all(v.size() * static_cast<std::size_t>(size));
  MPI_Allgather(v.data(), static_cast<int>(v.size()), MPI_DOUBLE, all.data(), static_cast<int>(v.size()),
                MPI_DOUBLE, comm);
  return all;
}

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
  for (auto it = setup_.begin(); it != setup_.end(); ++it) t[it->first] = it->second;
  return t;
}

std::string Summary::yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "locus_summary" << YAML::Value << tree() << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

namespace {
std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      case '\t':
        o += "\\t";
        break;
      case '\r':
        o += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

// A YAML scalar as JSON: plain numbers and booleans as such, the rest as
// strings (yaml-cpp keeps no types for nodes built in code).
std::string json_scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return json_string(s);  // quoted in the source
  if (s == "true" || s == "false") return s;
  if (s == "~" || s == "null") return "null";
  if (!s.empty()) {
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    bool plain = end && *end == 0 && s.find_first_of("xXpP") == std::string::npos &&
                 (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.');
    if (plain && std::isfinite(v)) return s[0] == '.' ? "0" + s : s;
  }
  return json_string(s);
}

void to_json(const YAML::Node& n, std::string& o, int indent) {
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      if (n.size() == 0) {
        o += "{}";
        return;
      }
      o += "{\n";
      bool first = true;
      for (auto it = n.begin(); it != n.end(); ++it) {
        if (!first) o += ",\n";
        first = false;
        o += pad;
        o += json_string(it->first.as<std::string>());
        o += ": ";
        to_json(it->second, o, indent + 2);
      }
      o += '\n';
      o.append(static_cast<std::size_t>(indent), ' ');
      o += '}';
      return;
    }
    case YAML::NodeType::Sequence: {
      o += "[";
      for (std::size_t i = 0; i < n.size(); ++i) {
        if (i) o += ", ";
        to_json(n[i], o, indent + 2);
      }
      o += "]";
      return;
    }
    case YAML::NodeType::Scalar:
      o += json_scalar(n);
      return;
    default:
      o += "null";
  }
}
}  // namespace

std::string yaml_to_json(const YAML::Node& tree) {
  std::string o;
  to_json(tree, o, 0);
  return o + "\n";
}

std::string Summary::json() const {
  YAML::Node root;
  root["locus_summary"] = tree();
  return yaml_to_json(root);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace locus
