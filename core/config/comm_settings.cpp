// The communication settings of a run (comm.*, runtime.progress.*), read
// and checked from the deck: redirection (comm.async, comm.adapt.*) and
// the routes to other nodes with their calibration (comm.remote).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include "build_info.hpp"
#include "locus/cpu.hpp"
#include "locus/settings.hpp"

namespace locus {

int effective_node_size(long from_deck) {
  if (from_deck > 0) return static_cast<int>(from_deck);
  const char* env = std::getenv("LOCUS_NODE_SIZE");
  if (!env || !*env) return 0;
  char* end = nullptr;
  long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 0 || v > 1000000)
    throw Error("LOCUS_NODE_SIZE: must be a non-negative integer (got '" + std::string(env) + "')");
  return static_cast<int>(v);
}

std::string idle_policy_name(IdlePolicy p) {
  switch (p) {
    case IdlePolicy::spin:
      return "spin";
    case IdlePolicy::yield:
      return "yield";
    case IdlePolicy::sleep:
      return "sleep";
  }
  return "?";
}

IdlePolicy parse_idle_policy(const std::string& s) {
  if (s == "spin") return IdlePolicy::spin;
  if (s == "yield") return IdlePolicy::yield;
  if (s == "sleep") return IdlePolicy::sleep;
  throw Error("idle policy must be spin, yield or sleep (got '" + s + "')");
}

std::string async_mode_name(AsyncMode m) {
  switch (m) {
    case AsyncMode::off:
      return "off";
    case AsyncMode::on:
      return "on";
    case AsyncMode::user:
      return "user";
    case AsyncMode::automatic:
      return "auto";
  }
  return "off";
}

std::optional<AsyncMode> async_mode_from_name(const std::string& name) {
  for (AsyncMode m : {AsyncMode::off, AsyncMode::on, AsyncMode::user, AsyncMode::automatic})
    if (async_mode_name(m) == name) return m;
  return std::nullopt;
}

namespace {
// A settings file (thresholds, calibration) read as YAML; every rank reads
// it, so the errors are collective and name WHERE (key and path). Stat
// first: opening a FIFO would block, a directory is no file.
YAML::Node load_settings_file(const std::string& path, const std::string& where, const std::string& what) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
    throw CollectiveError(where + ": not a regular file (" +
                          (std::filesystem::is_directory(st) ? "a directory" : "a FIFO, device or socket") +
                          "); give the " + what + " (a YAML file)");
  try {
    return YAML::LoadFile(path);
  } catch (const std::exception& e) {
    throw CollectiveError(where + ": cannot read the " + what + " (" + e.what() + ")");
  }
}

// comm.async and comm.adapt.*, checked (the same on every rank: the error
// is collective).
AsyncSettings async_settings(const Config& c, const CommSettings& cs) {
  AsyncSettings a;
  std::string mode = c.string("comm.async");
  std::string where = c.locate("comm.async");
  if (const char* env = std::getenv("LOCUS_ASYNC"); env && *env) {
    mode = env;
    where = "LOCUS_ASYNC=" + mode;
  }
  const std::optional<AsyncMode> parsed = async_mode_from_name(mode);
  if (!parsed) throw CollectiveError(where + ": must be one of off, on, user, auto");
  a.mode = *parsed;
  a.on_phases.clear();
  std::stringstream phases(c.string("comm.async_phases"));
  for (std::string p; std::getline(phases, p, ',');) {
    p.erase(0, p.find_first_not_of(' '));
    p.erase(p.find_last_not_of(' ') + 1);
    if (!p.empty()) a.on_phases.push_back(p);
  }
  a.data = c.string("comm.async_ops") == "all";
  a.interval = c.real("comm.adapt.interval");
  a.low = c.real("comm.adapt.low");
  a.high = c.real("comm.adapt.high");
  a.thresholds = c.string("comm.adapt.thresholds");
  if (!a.thresholds.empty()) {
    const std::string at = c.locate("comm.adapt.thresholds") + ": " + a.thresholds;
    const YAML::Node t = load_settings_file(a.thresholds, at, "thresholds file");
    try {
      a.low = t["low"].as<double>();
      a.high = t["high"].as<double>();
    } catch (const std::exception&) {
      throw CollectiveError(at + ": needs numbers low and high (write it with ./locus bench calibrate)");
    }
    if (!(a.low >= 0 && a.high <= 1)) throw CollectiveError(at + ": low and high must lie in [0, 1]");
  }
  if (!(a.low < a.high))
    throw CollectiveError(c.locate(a.thresholds.empty() ? "comm.adapt.low" : "comm.adapt.thresholds") +
                          ": low (" + std::to_string(a.low) + ") must be below high (" +
                          std::to_string(a.high) + "); equal values give no hysteresis");
  if (a.mode != AsyncMode::off && cs.progress.processes_per_node < 1)
    throw CollectiveError(where +
                          ": redirection needs progress processes "
                          "(set runtime.progress.processes_per_node: 1 or more)");
  if (a.mode != AsyncMode::off && cs.window != WindowKind::segment)
    throw CollectiveError(where + ": redirection needs comm.window: segment");
  return a;
}
}  // namespace

namespace {
// The calibration file of comm.remote: auto: the deck's, or the one shipped
// for this MPI library. Errors name the key and the file (collective: every
// rank reads the same file).
RemoteSettings remote_settings(const Config& c) {
  RemoteSettings r;
  r.faces = c.string("comm.remote_faces") == "packed" ? RemoteFaces::packed : RemoteFaces::direct;
  const std::string requests = c.string("comm.remote_requests");
  r.requests = requests == "immediate"    ? RemoteRequests::immediate
               : requests == "persistent" ? RemoteRequests::persistent
               : requests == "eager"      ? RemoteRequests::eager
                                          : RemoteRequests::automatic;
  const std::string mode = c.string("comm.remote");
  r.mode = mode == "rma" ? RemoteMode::rma : mode == "message" ? RemoteMode::message : RemoteMode::automatic;
  if (r.mode != RemoteMode::automatic) {
    r.why = "comm.remote: " + mode;
    return r;
  }
  std::string file = c.string("comm.remote_calibration");
  std::string at = c.locate("comm.remote_calibration");
  if (file.empty()) {
    const std::string name = std::string("remote-") + LOCUS_MPI_FLAVOUR + ".yaml";
    std::stringstream dirs(LOCUS_CALIBRATION_DIRS);
    for (std::string d; std::getline(dirs, d, ':');) {
      std::error_code ec;
      if (!d.empty() && std::filesystem::is_regular_file(d + "/" + name, ec)) {
        file = d + "/" + name;
        break;
      }
    }
    if (file.empty()) {
      r.why = "no calibration for this MPI library (" + name + "): message to other nodes";
      return r;
    }
    at = "calibration shipped for " + std::string(LOCUS_MPI_FLAVOUR);
  }
  const std::string where = at + ": " + file;
  const YAML::Node t = load_settings_file(file, where, "calibration file");
  const YAML::Node points = t["points"];
  if (!points.IsSequence() || points.size() == 0)
    throw CollectiveError(where +
                          ": needs a list 'points' of {bytes, message_us, rma_us} "
                          "(write it with ./locus bench exchange)");
  for (std::size_t i = 0; i < points.size(); ++i) {
    RemotePoint p;
    try {
      p.bytes = points[i]["bytes"].as<double>();
      p.message_us = points[i]["message_us"].as<double>();
      p.rma_us = points[i]["rma_us"].as<double>();
      if (points[i]["persistent_us"]) p.persistent_us = points[i]["persistent_us"].as<double>();
      if (points[i]["eager_us"]) p.eager_us = points[i]["eager_us"].as<double>();
    } catch (const std::exception&) {
      throw CollectiveError(
          where + ": points[" + std::to_string(i) + "] (line " + std::to_string(points[i].Mark().line + 1) +
          ") needs numbers bytes, message_us, rma_us (and persistent_us, eager_us if given)");
    }
    if (!(p.bytes > 0 && p.message_us > 0 && p.rma_us > 0 &&
          (p.persistent_us > 0 || !points[i]["persistent_us"]) && (p.eager_us > 0 || !points[i]["eager_us"])))
      throw CollectiveError(where + ": points[" + std::to_string(i) + "] (line " +
                            std::to_string(points[i].Mark().line + 1) +
                            "): bytes and times must be positive");
    if (!r.points.empty() && !(p.bytes > r.points.back().bytes))
      throw CollectiveError(where + ": points[" + std::to_string(i) + "] (line " +
                            std::to_string(points[i].Mark().line + 1) + "): sizes must grow");
    r.points.push_back(p);
  }
  r.calibration = std::filesystem::absolute(file).lexically_normal().string();
  if (t["library"]) r.calibrated_library = t["library"].as<std::string>("");
  r.why = "calibrated" + (r.calibrated_library.empty() ? std::string() : " with " + r.calibrated_library);
  return r;
}
}  // namespace

namespace {
// Whether time X, times `scale`, is at most time Y at `bytes`: the nearest
// calibrated sizes, log-linear in between, the end points beyond the range.
bool at_most(const std::vector<RemotePoint>& points, double bytes, double RemotePoint::*x,
             double RemotePoint::*y, double scale = 1.0) {
  if (bytes <= points.front().bytes) return scale * points.front().*x <= points.front().*y;
  if (bytes >= points.back().bytes) return scale * points.back().*x <= points.back().*y;
  std::size_t i = 1;
  while (points[i].bytes < bytes) ++i;
  const RemotePoint &a = points[i - 1], &b = points[i];
  const double w = std::log(bytes / a.bytes) / std::log(b.bytes / a.bytes);
  return scale * (a.*x + w * (b.*x - a.*x)) <= a.*y + w * (b.*y - a.*y);
}
}  // namespace

bool RemoteSettings::message_for(double bytes) const {
  if (points.empty()) return true;
  return at_most(points, bytes, &RemotePoint::message_us, &RemotePoint::rma_us, 1.0 - kRmaMargin);
}

RemoteRequests RemoteSettings::requests_for(double bytes) const {
  const bool eager_fits = bytes <= kEagerMaxBytes;
  if (requests == RemoteRequests::eager)
    return eager_fits ? RemoteRequests::eager : RemoteRequests::immediate;
  if (requests != RemoteRequests::automatic) return requests;
  // A way counts only when the calibration measured it at every size.
  auto measured = [&](double RemotePoint::*t) {
    return !points.empty() &&
           std::all_of(points.begin(), points.end(), [t](const RemotePoint& p) { return p.*t > 0; });
  };
  RemoteRequests best = RemoteRequests::immediate;
  double RemotePoint::*best_us = &RemotePoint::message_us;
  if (measured(&RemotePoint::persistent_us) && !at_most(points, bytes, best_us, &RemotePoint::persistent_us))
    best = RemoteRequests::persistent, best_us = &RemotePoint::persistent_us;
  if (eager_fits && measured(&RemotePoint::eager_us) &&
      !at_most(points, bytes, best_us, &RemotePoint::eager_us))
    best = RemoteRequests::eager;
  return best;
}

namespace {
// comm.aggregate.applier, checked against the keys it needs.
AggregateApplier aggregate_applier(const Config& c, const CommSettings& s) {
  if (c.string("comm.aggregate.applier") != "progress") return AggregateApplier::owner;
  const std::string at = c.locate("comm.aggregate.applier") + ": progress";
  if (s.progress.processes_per_node < 1)
    throw CollectiveError(at +
                          " needs progress processes (runtime.progress.processes_per_node >= 1): they "
                          "apply the batches");
  if (s.aggregate.transport != AggregateTransport::message)
    throw CollectiveError(at + " needs comm.aggregate.transport: message (got put)");
  return AggregateApplier::progress;
}
}  // namespace

CommSettings comm_settings(const Config& c) {
  CommSettings s;
  s.node_size = effective_node_size(c.integer("runtime.node_size"));
  s.locality = c.boolean("comm.locality");
  s.window = c.string("comm.window") == "dynamic" ? WindowKind::dynamic : WindowKind::segment;
  s.check = c.boolean("comm.check");
  s.atomics = c.string("comm.atomics") == "aggregate" ? AtomicMode::aggregate : AtomicMode::mpi;
  s.aggregate.records = static_cast<std::size_t>(c.integer("comm.aggregate.records"));
  s.aggregate.slots = static_cast<int>(c.integer("comm.aggregate.slots"));
  s.aggregate.transport =
      c.string("comm.aggregate.transport") == "put" ? AggregateTransport::put : AggregateTransport::message;
  s.progress.processes_per_node = static_cast<int>(c.integer("runtime.progress.processes_per_node"));
  s.aggregate.applier = aggregate_applier(c, s);
  s.progress.threshold = static_cast<std::size_t>(c.integer("runtime.progress.threshold"));
  s.progress.staging = static_cast<std::size_t>(c.integer("runtime.progress.staging"));
  s.progress.idle = parse_idle_policy(c.string("runtime.progress.idle"));
  s.progress.max_sleep_us = static_cast<int>(c.integer("runtime.progress.max_sleep_us"));
  s.progress.linger_us = static_cast<int>(c.integer("runtime.progress.linger_us"));
  s.progress.bind = c.string("runtime.progress.bind") == "auto";
  s.progress.thread = c.boolean("runtime.progress.thread");
  s.progress.thread_interval_us = static_cast<int>(c.integer("runtime.progress.thread_interval_us"));
  s.async = async_settings(c, s);
  s.remote = remote_settings(c);
  s.staging = c.string("comm.staging") == "always" ? Staging::always : Staging::automatic;
  if (c.string("comm.htm") == "off") {
    s.htm_why = "off (comm.htm)";
  } else {
    s.htm = cpu::features().rtm;
    const bool hidden = cpu::features().hidden.find("rtm") != std::string::npos;
    s.htm_why = s.htm    ? "on (auto: the CPU has RTM)"
                : hidden ? "off (auto: RTM hidden by LOCUS_CPU_HIDE)"
                         : "off (auto: the CPU has no RTM)";
  }
#ifndef NDEBUG
  s.check = true;
#endif
  return s;
}

}  // namespace locus
