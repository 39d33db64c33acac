// The communication settings of a run (comm.*, runtime.*) from the deck:
// every entry of the settings table (settings_table.cpp), then what the
// table leaves to code: env overrides (LOCUS_NODE_SIZE, LOCUS_ASYNC), the
// thresholds and calibration files, the comm.htm decision and the checks
// across keys.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>

#include "build_info.hpp"
#include "config/settings_table.hpp"
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

// comm.async and comm.adapt.* after the table (settings_table.cpp): the
// LOCUS_ASYNC override, the thresholds file and the checks (the same on
// every rank: the errors are collective).
void async_specials(const Config& c, CommSettings& s) {
  AsyncSettings& a = s.async;
  std::string where = c.locate("comm.async");
  if (const char* env = std::getenv("LOCUS_ASYNC"); env && *env) {
    where = "LOCUS_ASYNC=" + std::string(env);
    const std::optional<AsyncMode> parsed = async_mode_from_name(env);
    if (!parsed) throw CollectiveError(where + ": must be one of off, on, user, auto");
    a.mode = *parsed;
  }
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
    throw CollectiveError((a.thresholds.empty() ? c.locate_latest({"comm.adapt.low", "comm.adapt.high"})
                                                : c.locate("comm.adapt.thresholds")) +
                          ": low (" + std::to_string(a.low) + ") must be below high (" +
                          std::to_string(a.high) + "); equal values give no hysteresis");
  if (a.mode != AsyncMode::off && s.progress.processes_per_node < 1)
    throw CollectiveError(where +
                          ": redirection needs progress processes "
                          "(set runtime.progress.processes_per_node: 1 or more)");
  if (a.mode != AsyncMode::off && s.window != WindowKind::segment)
    throw CollectiveError(where + ": redirection needs comm.window: segment");
}
}  // namespace

namespace {
// The calibration file of comm.remote: auto: comm.remote_calibration, or
// the one shipped for this MPI library (after the table: r.mode is set).
// Errors name the key and the file (collective: every rank reads the same
// file).
void find_calibration(const Config& c, RemoteSettings& r) {
  if (r.mode != RemoteMode::automatic) {
    r.why = "comm.remote: " + c.string("comm.remote");
    return;
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
      return;
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
}
}  // namespace

namespace {
// A time of a calibration point (a member; an alias because nvcc writes a
// declared member pointer with parentheses g++ warns about).
using PointTime = double RemotePoint::*;

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
  PointTime best_us = &RemotePoint::message_us;
  if (measured(&RemotePoint::persistent_us) && !at_most(points, bytes, best_us, &RemotePoint::persistent_us))
    best = RemoteRequests::persistent, best_us = &RemotePoint::persistent_us;
  if (eager_fits && measured(&RemotePoint::eager_us) &&
      !at_most(points, bytes, best_us, &RemotePoint::eager_us))
    best = RemoteRequests::eager;
  return best;
}

namespace {
// comm.aggregate.applier: progress, checked against the keys it needs.
void check_applier(const Config& c, const CommSettings& s) {
  if (s.aggregate.applier != AggregateApplier::progress) return;
  const std::string at = c.locate("comm.aggregate.applier") + ": progress";
  if (s.progress.processes_per_node < 1)
    throw CollectiveError(at +
                          " needs progress processes (runtime.progress.processes_per_node >= 1): they "
                          "apply the batches");
  if (s.aggregate.transport != AggregateTransport::message)
    throw CollectiveError(at + " needs comm.aggregate.transport: message (got put)");
}

// comm.htm: auto takes hardware transactions where the CPU has RTM.
void decide_htm(const Config& c, CommSettings& s) {
  if (c.string("comm.htm") == "off") {
    s.htm = false;
    s.htm_why = "off (comm.htm)";
    return;
  }
  s.htm = cpu::features().rtm;
  const bool hidden = cpu::features().hidden.find("rtm") != std::string::npos;
  s.htm_why = s.htm    ? "on (auto: the CPU has RTM)"
              : hidden ? "off (auto: RTM hidden by LOCUS_CPU_HIDE)"
                       : "off (auto: the CPU has no RTM)";
}

// comm.fp_locks: auto takes stripe locks for same-node floating-point
// atomics where they are CPU atomics without transactions. Not with
// progress processes: they map the parts but not the lock words, and may
// apply batches themselves.
void decide_fp_locks(const Config& c, CommSettings& s) {
  if (c.string("comm.fp_locks") == "off") {
    s.fp_locks = false;
    s.fp_locks_why = "off (comm.fp_locks): a compare-and-swap loop per floating-point element";
    return;
  }
  s.fp_locks = false;
  if (!s.locality)
    s.fp_locks_why = "off (auto: comm.locality off, atomics are MPI's)";
  else if (s.htm)
    s.fp_locks_why = "off (auto: comm.htm applies runs in transactions)";
  else if (s.progress.processes_per_node > 0)
    s.fp_locks_why = "off (auto: progress processes do not map the lock words)";
  else {
    s.fp_locks = true;
    s.fp_locks_why = "on (auto: no transactions; floating-point runs under 4 KiB stripe locks)";
  }
}

#ifdef LOCUS_SMPI
// The SMPI build (SimGrid 3.32's MPI): MPI_Init_thread gives
// MPI_THREAD_SINGLE and MPI_Win_allocate_shared gives every rank of a
// communicator rank 0's memory. So every rank is its own node (node size 1,
// the default there) and what needs threads or shared memory between ranks
// is refused, naming the key.
void smpi_limits(const Config& c, CommSettings& s) {
  const std::string why = " (SimGrid's MPI: docs/building.md, The SMPI build)";
  if (s.node_size == 0) s.node_size = 1;
  if (s.node_size != 1)
    throw CollectiveError(c.locate("runtime.node_size") +
                          ": the SMPI build runs every rank as its own node " + "(1, got " +
                          std::to_string(s.node_size) + "): ranks of one node share no memory there" + why);
  if (s.progress.processes_per_node > 0)
    throw CollectiveError(c.locate("runtime.progress.processes_per_node") +
                          ": progress processes need ranks that share memory; the SMPI build has none" + why);
  if (s.progress.thread)
    throw CollectiveError(
        c.locate("runtime.progress.thread") +
        ": the progress thread needs MPI_THREAD_MULTIPLE; the SMPI build has MPI_THREAD_SINGLE" + why);
  if (s.async.mode != AsyncMode::off)
    throw CollectiveError(c.locate("comm.async") +
                          ": redirection needs progress processes and threads; not in the SMPI build" + why);
}
#endif
}  // namespace

CommSettings comm_settings(const Config& c) {
  CommSettings s;
  for (const Setting& e : settings_table())
    if (e.set) e.set(s, deck_value(c, e));
  // What the entries leave to code (their `special`), in this order: the
  // first error wins.
  s.node_size = effective_node_size(s.node_size);
  check_applier(c, s);
  async_specials(c, s);
  find_calibration(c, s.remote);
  decide_htm(c, s);
  decide_fp_locks(c, s);
#ifdef LOCUS_SMPI
  smpi_limits(c, s);
#endif
#ifndef NDEBUG
  s.check = true;
#endif
  return s;
}

}  // namespace locus
