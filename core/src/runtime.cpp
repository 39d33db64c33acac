#include "locus/runtime.hpp"

#include <sched.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>

#include "build_info.hpp"
#include "locus/async.hpp"
#include "locus/io.hpp"
#include "locus/kokkos.hpp"
#include "locus/version.hpp"

namespace locus {

namespace {

// name and output.*
void add_output_keys(Schema& s, const std::string& app_name) {
  s.string("name", "", "run name for summaries (default: the deck's file name without .yaml)")
      .string("output.dir", "output", "directory for " + app_name + ".h5 and friends (created if missing)")
      .string("output.name", app_name, "output file stem: <output.dir>/<output.name>.h5")
      .boolean("output.overwrite", false, "replace an existing output file")
      .boolean("output.write_field", true, "write the final field(s) into the HDF5 file")
      .boolean("output.xdmf", true, "write an XDMF file next to grid fields (ParaView)");
}

// runtime.*: emulated nodes, progress processes and the progress thread
void add_runtime_keys(Schema& s) {
  s.integer("runtime.node_size", 0, 0, 1 << 20,
            "emulate nodes of N consecutive ranks (0: real nodes, or env LOCUS_NODE_SIZE)")
      .integer("runtime.progress.processes_per_node", 0, 0, 64,
               "progress processes per node: the last k ranks of every node serve the others' "
               "non-blocking transfers instead of running the app (0: none)")
      .integer("runtime.progress.threshold", 4096, 1, Schema::kNoMax,
               "non-blocking gets/puts of at least this many bytes go to the node's progress process")
      .integer("runtime.progress.staging", 4 << 20, 4096, 1L << 30,
               "bytes per unit of staging memory (shared, checked against the node's free memory) for "
               "origin buffers outside segments; larger transfers are sent in pieces")
      .choice("runtime.progress.idle", "sleep", {"spin", "yield", "sleep"},
              "what an idle progress process does: spin, yield the core, or sleep with back-off")
      .integer("runtime.progress.linger_us", 500, 0, 1000000,
               "idle sleep: how long an idle server keeps polling (yielding) before it sleeps")
      .integer("runtime.progress.max_sleep_us", 5000, 1, 1000000,
               "idle sleep: longest nap between looks at the rings (a new command wakes the server at once)")
      .choice("runtime.progress.bind", "auto", {"auto", "none"},
              "with progress processes: pin units and servers to CPUs so that no server shares a core with "
              "the units it serves (auto; skipped when the launcher bound the ranks) or leave them (none)")
      .boolean("runtime.progress.thread", false,
               "a progress thread per unit that keeps MPI progressing (needs MPI_THREAD_MULTIPLE)")
      .integer("runtime.progress.thread_interval_us", 20, 0, 1000000,
               "progress thread polling interval in microseconds (0: yield between polls)");
}

// comm.*: locality, windows, checks, atomics and their aggregation
void add_transfer_keys(Schema& s) {
  s.boolean("comm.locality", true, "same-node one-sided transfers by memcpy on shared memory")
      .choice("comm.window", "segment", {"segment", "dynamic"},
              "MPI window of the remote path: one per segment (MPI_Win_create at allocation) or the team's "
              "dynamic window with the segments attached (the DART design; MPICH serves it by active "
              "messages, 4-16x slower from 64 KiB)")
      .boolean("comm.check", false,
               "check every global pointer and collective call (always on in debug builds)")
      .choice("comm.atomics", "mpi", {"mpi", "aggregate"},
              "atomics on segments whose team spans nodes: mpi (MPI accumulates for every target, same-node "
              "ones too) or aggregate (CPU atomics on the node; updates and one-element gets to other nodes "
              "travel in per-destination batches that the target applies at its progress points). Teams on "
              "one node always use CPU atomics (comm.locality on)")
      .integer("comm.aggregate.records", 1024, 16, 1 << 20,
               "aggregate: records (32 B: one update or get) per batch; a full batch is sent at once")
      .integer("comm.aggregate.slots", 8, 1, 64,
               "aggregate: batches one unit may have in flight to another (transport put: mailbox slots "
               "per pair, units x slots x (16 + 32 x records) bytes per unit; message: 2 x slots receives "
               "and send buffers of 16 + 32 x records bytes)")
      .choice("comm.aggregate.transport", "message", {"message", "put"},
              "aggregate: how a batch travels: message (one MPI_Isend into receives the destination keeps "
              "posted) or put (one MPI_Put into the destination's mailbox, a flush, then its sequence number "
              "by MPI_Accumulate: the notified put)");
}

// comm.*: redirection (async, adapt), routes to other nodes (remote) and
// staging
void add_route_keys(Schema& s) {
  s.choice("comm.async", "off", {"off", "on", "user", "auto"},
           "target-side redirection (Casper): operations on units of other nodes and all atomics go to "
           "the target node's progress process, so they complete while the target computes. off; on; "
           "user: on in the phases named by comm.async_phases, off in the others; auto: switched by the "
           "measured communication ratio (comm.adapt.*). Needs runtime.progress.processes_per_node >= 1 "
           "(env LOCUS_ASYNC overrides)")
      .choice(
          "comm.async_ops", "all", {"all", "atomics"},
          "what redirection sends to the target's ghost: all (gets and puts to other nodes too, as Casper) "
          "or atomics only (accumulates, fetch-and-op, compare-and-swap, notify flags: what an MPI library "
          "applies in software at the target; gets and puts stay direct, better for put-heavy codes where "
          "the library moves them by RDMA or shared memory)")
      .string("comm.async_phases", "comp",
              "user: comma-separated phase names that run with redirection on (the app names its phases)")
      .real("comm.adapt.interval", 1.0, 0.0, 3600.0,
            "auto: seconds of communication profile before the mode may change (a minimum interval; 0: at "
            "every "
            "phase point)")
      .real("comm.adapt.low", 0.3, 0.0, 1.0,
            "auto: switch redirection on when the communication ratio Tcomm/(Tcomm+Tcomp) falls below this")
      .real("comm.adapt.high", 0.6, 0.0, 1.0,
            "auto: switch redirection off when the communication ratio rises above this (low < high)")
      .string("comm.adapt.thresholds", "",
              "auto: a thresholds file from ./locus bench calibrate (its low and high replace "
              "comm.adapt.low/high)")
      .choice("comm.remote", "auto", {"rma", "message", "auto"},
              "how halos and spmv's rma mode reach units of other nodes (transfer plans; same-node units are "
              "always shared memory): rma (one-sided gets/puts announced by flags), message (two-sided "
              "sends and receives both sides build from the plan) or auto (per pair by the bytes "
              "exchanged, from a calibration of this MPI library: comm.remote_calibration)")
      .string("comm.remote_calibration", "",
              "auto: the calibration file (written by ./locus bench exchange on nodes); empty: "
              "remote-<mpich|openmpi>.yaml shipped in inputs/calibration (no file: message)")
      .choice(
          "comm.staging", "auto", {"auto", "always"},
          "how halo faces and spmv's x entries leave the app's Kokkos memory space: auto (straight from the "
          "field or vector when the core can address that space, i.e. host memory; through host segments "
          "otherwise) or always (through host segments in every build: pack kernel into a buffer in the "
          "app's memory space, copy to a host segment, transfer, copy back, unpack; a host build then runs "
          "the device data path)");
}

}  // namespace

void add_common_keys(Schema& s, const std::string& app_name) {
  add_output_keys(s, app_name);
  add_runtime_keys(s);
  add_transfer_keys(s);
  add_route_keys(s);
}

int& CollectiveError::live() {
  static int count = 0;
  return count;
}

bool unwinding_collectively() {
  return std::uncaught_exceptions() > 0 && CollectiveError::alive() > 0;
}

bool collective_cleanup_allowed() {
  return std::uncaught_exceptions() == 0 || CollectiveError::alive() > 0;
}

void collective_require(MPI_Comm comm, bool ok, const std::string& msg) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int first_bad = ok ? INT32_MAX : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, comm);
  if (first_bad == INT32_MAX) return;
  int len = rank == first_bad ? static_cast<int>(msg.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first_bad, comm);
  std::string text = rank == first_bad ? msg : std::string(len, '\0');
  MPI_Bcast(text.data(), len, MPI_CHAR, first_bad, comm);
  throw CollectiveError(text);
}

void collectively(MPI_Comm comm, const std::function<void()>& fn) {
  std::string msg;
  bool ok = true;
  try {
    fn();
  } catch (const CollectiveError&) {
    throw;
  } catch (const Error& e) {
    ok = false;
    msg = e.what();
  }
  collective_require(comm, ok, msg);
}

namespace {

struct CommandLine {
  std::string deck;
  std::vector<std::string> overrides;
  bool quiet = false;
  bool help = false;
  bool version = false;
  bool print_config = false;
  bool print_schema = false;
  bool machine = false;
  bool summary_json = false;
  std::string error;
};

CommandLine parse_args(int argc, char** argv) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      cl.help = true;
    } else if (a == "--version") {
      cl.version = true;
    } else if (a == "-q" || a == "--quiet") {
      cl.quiet = true;
    } else if (a == "--print-config") {
      cl.print_config = true;
    } else if (a == "--print-schema") {
      cl.print_schema = true;
    } else if (a == "--machine") {
      cl.machine = true;
    } else if (a == "--summary" || a.rfind("--summary=", 0) == 0) {
      std::string v;
      if (a == "--summary") {
        if (i + 1 >= argc) {
          cl.error = "--summary needs yaml or json";
          return cl;
        }
        v = argv[++i];
      } else {
        v = a.substr(10);
      }
      if (v != "yaml" && v != "json") {
        cl.error = "--summary: yaml or json (got '" + v + "')";
        return cl;
      }
      cl.summary_json = v == "json";
    } else if (a == "--set" || a == "-s") {
      if (i + 1 >= argc) {
        cl.error = a + " needs key=value";
        return cl;
      }
      cl.overrides.push_back(argv[++i]);
    } else if (a.rfind("--set=", 0) == 0) {
      cl.overrides.push_back(a.substr(6));
    } else if (!a.empty() && a[0] == '-') {
      cl.error = "unknown option " + a;
      return cl;
    } else if (cl.deck.empty()) {
      cl.deck = a;
    } else {
      cl.error = "more than one deck given (" + cl.deck + ", " + a + ")";
      return cl;
    }
  }
  if (cl.deck.empty() && !cl.help && !cl.version && !cl.print_schema && !cl.machine)
    cl.error = "no deck given";
  return cl;
}

void print_usage(const AppInfo& app, bool full) {
  // the example override: the app's first integer key with its default
  std::string example = "name=run1";
  for (const KeySpec& k : app.schema.keys())
    if (k.kind == KeyKind::Integer) {
      // twice the default, kept inside the key's range (the example must run)
      long v = std::get<long>(k.fallback);
      long twice = v * 2;
      if (static_cast<double>(twice) <= k.max)
        v = twice;
      else if (static_cast<double>(v) + 1 <= k.max)
        v = v + 1;
      example = k.path + "=" + std::to_string(v);
      break;
    }
  std::printf(
      "usage: %s DECK.yaml [--set key=value]... [--quiet] [--print-config] [--summary yaml|json]\n"
      "       %s --help | --version | --print-schema | --machine\n\n"
      "%s\n\n"
      "  DECK.yaml          the run's configuration (see docs/config.md)\n"
      "  --set key=value    override one key, e.g. --set %s (repeatable)\n"
      "  --quiet, -q        no progress line\n"
      "  --summary FORMAT   the final summary as yaml (default) or json (for scripts)\n"
      "  --print-config     print the effective configuration and exit\n"
      "  --print-schema     print every deck key (type, default, help) as YAML and exit\n"
      "  --machine          print the machine descriptor (CPU, cores, memory, compiler and flags,\n"
      "                     MPI, Kokkos, HDF5, commit) and the STREAM triad bandwidth measured\n"
      "                     by every rank at once, then exit\n"
      "  --version          print the locus version and exit\n",
      app.name.c_str(), app.name.c_str(), app.description.c_str(), example.c_str());
  if (full) std::printf("\nkeys:\n%s", app.schema.help_text().c_str());
}

// Rank 0 reads the deck and broadcasts it; every rank then checks it the same
// way, so a bad deck is the same CollectiveError everywhere.
Config load_everywhere(MPI_Comm comm, const AppInfo& app, const CommandLine& cl) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string text, read_error;
  if (rank == 0) {
    try {
      text = read_deck(cl.deck);
    } catch (const Error& e) {
      read_error = e.what();
    }
  }
  collective_require(comm, read_error.empty(), read_error);
  long len = static_cast<long>(text.size());
  MPI_Bcast(&len, 1, MPI_LONG, 0, comm);
  text.resize(static_cast<std::size_t>(len));
  MPI_Bcast(text.data(), static_cast<int>(len), MPI_CHAR, 0, comm);
  try {
    return parse_config(app.schema, text, cl.deck, cl.overrides);
  } catch (const ConfigError& e) {
    throw CollectiveError(e.what());
  }
}

// SIGTERM / SIGINT (also forwarded by mpiexec): remove the unfinished
// output, say so once (rank 0), exit 128 + signal. Everything here is
// async-signal-safe.
char g_signal_msg[2][256];
int g_signal_rank = 0;

extern "C" void on_terminate(int sig) {
  detail::remove_unfinished_output();
  if (g_signal_rank == 0) {
    const char* m = g_signal_msg[sig == SIGINT ? 1 : 0];
    ssize_t ignored = ::write(2, m, std::strlen(m));
    (void)ignored;
  }
  ::_exit(128 + sig);
}

void install_signal_handlers(const std::string& app, int rank) {
  g_signal_rank = rank;
  std::snprintf(g_signal_msg[0], sizeof g_signal_msg[0],
                "%s: terminated (SIGTERM); the unfinished output was removed\n", app.c_str());
  std::snprintf(g_signal_msg[1], sizeof g_signal_msg[1],
                "%s: interrupted (SIGINT); the unfinished output was removed\n", app.c_str());
  struct sigaction sa {};
  sa.sa_handler = on_terminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

// output.dir and output.name name a file this run can create: checked on
// every rank alike (the config is the same everywhere), before any work.
void check_output_keys(MPI_Comm comm, const Config& c) {
  const std::string& name = c.string("output.name");
  const std::string& dir = c.string("output.dir");
  std::string problem;
  if (name.empty())
    problem = c.locate("output.name") + ": empty; give a file stem such as run1";
  else if (name.find('\0') != std::string::npos)
    problem = c.locate("output.name") + ": contains a NUL byte";
  else if (std::any_of(name.begin(), name.end(), [](unsigned char ch) { return ch < 0x20 || ch == 0x7f; }))
    problem = c.locate("output.name") + ": contains a control character (a line break, tab or escape)";
  else if (name.find('/') != std::string::npos)
    problem = c.locate("output.name") + ": a file stem, not a path (put directories in output.dir)";
  else if (name == "." || name == "..")
    problem = c.locate("output.name") + ": '" + name + "' is not a file name";
  else if (name.size() + 8 > 255)  // NAME.h5.lock must fit NAME_MAX
    problem = c.locate("output.name") + ": " + std::to_string(name.size()) +
              " characters; file names have at most 255 (247 for the stem)";
  else if (dir.empty())
    problem = c.locate("output.dir") + ": empty; use . for the working directory";
  else if (dir.find('\0') != std::string::npos)
    problem = c.locate("output.dir") + ": contains a NUL byte";
  else if (dir.size() + name.size() + 9 > 4095)
    problem = c.locate("output.dir") + ": the output path would be longer than 4095 characters";
  else {
    std::string part;
    std::stringstream ss(dir);
    while (std::getline(ss, part, '/'))
      if (part.size() > 255) {
        problem = c.locate("output.dir") + ": a directory name of " + std::to_string(part.size()) +
                  " characters; at most 255";
        break;
      }
  }
  collective_require(comm, problem.empty(), problem);
}

std::string stem_of(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

}  // namespace

int mpi_thread_level() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided;
}

std::string thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "thread level " + std::to_string(level);
}

void require_thread_level(int needed, const std::string& feature, int provided) {
  if (provided < needed)
    throw Error(feature + " needs " + thread_level_name(needed) + ", but the MPI library provides only " +
                thread_level_name(provided) + " (" + mpi_library() + ")");
}

namespace {
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
    YAML::Node t;
    try {
      t = YAML::LoadFile(a.thresholds);
    } catch (const std::exception& e) {
      throw CollectiveError(at + ": cannot read the thresholds file (" + e.what() + ")");
    }
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
  YAML::Node t;
  try {
    t = YAML::LoadFile(file);
  } catch (const std::exception& e) {
    throw CollectiveError(where + ": cannot read the calibration file (" + e.what() + ")");
  }
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
    } catch (const std::exception&) {
      throw CollectiveError(where + ": points[" + std::to_string(i) + "] (line " +
                            std::to_string(points[i].Mark().line + 1) +
                            ") needs numbers bytes, message_us, rma_us");
    }
    if (!(p.bytes > 0 && p.message_us > 0 && p.rma_us > 0))
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

bool RemoteSettings::message_for(double bytes) const {
  if (points.empty()) return true;
  if (bytes <= points.front().bytes) return points.front().message_us <= points.front().rma_us;
  if (bytes >= points.back().bytes) return points.back().message_us <= points.back().rma_us;
  std::size_t i = 1;
  while (points[i].bytes < bytes) ++i;
  const RemotePoint &a = points[i - 1], &b = points[i];
  const double w = std::log(bytes / a.bytes) / std::log(b.bytes / a.bytes);
  const double m = a.message_us + w * (b.message_us - a.message_us), q = a.rma_us + w * (b.rma_us - a.rma_us);
  return m <= q;
}

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
#ifndef NDEBUG
  s.check = true;
#endif
  return s;
}

// ---- Kokkos: the --kokkos-* options and the threads per rank.

// The --kokkos-* options of the command line (they go to Kokkos) and the
// rest (they go to locus's own parser).
struct SplitArgs {
  std::vector<std::string> kokkos;
  std::vector<char*> rest;
};

SplitArgs split_kokkos_args(int argc, char** argv) {
  SplitArgs a;
  for (int i = 0; i < argc; ++i) {
    const bool value_of_set =
        i > 0 && (std::strcmp(argv[i - 1], "--set") == 0 || std::strcmp(argv[i - 1], "-s") == 0);
    if (i > 0 && !value_of_set && std::strncmp(argv[i], "--kokkos-", 9) == 0)
      a.kokkos.emplace_back(argv[i]);
    else
      a.rest.push_back(argv[i]);
  }
  a.rest.push_back(nullptr);
  return a;
}

bool has_option(const std::vector<std::string>& args, const std::string& name) {
  for (const auto& a : args)
    if (a == name || a.rfind(name + "=", 0) == 0) return true;
  return false;
}

struct KokkosStart {
  std::string error;  // an option Kokkos did not take
  bool help = false;
};

// Collective. Starts Kokkos with the user's --kokkos-* options and
// KOKKOS_* variables (Kokkos reads them itself), adding when the user
// gave none: threads per rank = the CPUs this rank may run on / the ranks
// on its node (a rank per core gets one thread), and on every rank but the
// first --kokkos-disable-warnings (Kokkos' start-up warnings once per job,
// not once per rank).
KokkosStart start_kokkos(const std::string& app_name, std::vector<std::string> args, int rank) {
  KokkosStart ks;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int ranks_on_node = 1;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_free(&node);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  int cpus = 1;
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) cpus = std::max(1, CPU_COUNT(&mask));
  const long online = sysconf(_SC_NPROCESSORS_ONLN);

#if KOKKOS_VERSION >= 30700
  const std::string threads_opt = "--kokkos-num-threads";
#else
  const std::string threads_opt = "--kokkos-threads";
#endif
  std::string source;
  int threads = std::max(1, cpus / std::max(1, ranks_on_node));
  if (has_option(args, "--kokkos-threads") || has_option(args, "--kokkos-num-threads")) {
    source = "command line";
  } else if (std::getenv("KOKKOS_NUM_THREADS")) {
    source = "KOKKOS_NUM_THREADS";
  } else if (std::getenv("OMP_NUM_THREADS")) {
    source = "OMP_NUM_THREADS";
  } else {
    source = "cpus / ranks per node (" + std::to_string(cpus) + " / " + std::to_string(ranks_on_node) + ")";
    args.push_back(threads_opt + "=" + std::to_string(threads));
  }
  std::string binding = "n/a (one thread per rank)";
#ifdef KOKKOS_ENABLE_OPENMP
  // Threads bind inside the CPUs a launcher gave the rank; when every rank
  // may run anywhere, binding them would stack every rank's first thread
  // on the same CPU, so they are left unbound.
  if (!std::getenv("OMP_PROC_BIND")) {
    const bool own_cpus = cpus < online || ranks_on_node == 1;
    setenv("OMP_PROC_BIND", own_cpus ? "spread" : "false", 0);
    if (own_cpus) setenv("OMP_PLACES", "threads", 0);
  }
  binding = std::string("OMP_PROC_BIND=") + std::getenv("OMP_PROC_BIND");
#endif
  (void)online;
  ks.help = has_option(args, "--kokkos-help");
  if (rank != 0) {
    if (!has_option(args, "--kokkos-disable-warnings")) args.push_back("--kokkos-disable-warnings");
    // the help once per job
    args.erase(std::remove(args.begin(), args.end(), std::string("--kokkos-help")), args.end());
  }
  std::string shown;
  for (const auto& a : args) shown += (shown.empty() ? "" : " ") + a;
  set_kokkos_launch(shown, source, binding);

  std::vector<std::string> store = args;
  std::vector<char*> argv;
  std::string prog = app_name;
  argv.push_back(prog.data());
  for (auto& a : store) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(argv.size()) - 1;
  Kokkos::initialize(argc, argv.data());
  // Kokkos removes the options it took; what is left it does not know.
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[static_cast<std::size_t>(i)], "--kokkos-", 9) == 0 &&
        std::strcmp(argv[static_cast<std::size_t>(i)], "--kokkos-help") != 0) {
      ks.error = std::string("unknown Kokkos option ") + argv[static_cast<std::size_t>(i)];
      break;
    }
  if (ks.error.empty() && rank == 0 && ExecSpace().concurrency() > 1 &&
      long(ExecSpace().concurrency()) * ranks_on_node > online)
    std::fprintf(stderr,
                 "%s: warning: %d threads per rank x %d ranks on this node > %ld CPUs (over-subscribed: "
                 "set --kokkos-num-threads or OMP_NUM_THREADS)\n",
                 app_name.c_str(), int(ExecSpace().concurrency()), ranks_on_node, online);
  return ks;
}

// --machine: the machine descriptor (rank 0's) and STREAM triad bandwidth
// measured by every rank at once (32 MiB per array: out of cache), as YAML.
void print_machine(const AppInfo& app, int rank, int size) {
  MPI_Barrier(MPI_COMM_WORLD);
  double mine = stream_triad_gbs(4L << 20, 5);
  std::vector<double> all(static_cast<std::size_t>(size));
  MPI_Gather(&mine, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  YAML::Emitter out;
  out << YAML::BeginMap << YAML::Key << "locus_machine" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "app" << YAML::Value << app.name;
  for (const auto& [k, v] : machine_description()) out << YAML::Key << k << YAML::Value << v;
  out << YAML::Key << "date" << YAML::Value << iso_date_now();
  out << YAML::Key << "ranks" << YAML::Value << size;
  double total = 0;
  out << YAML::Key << "stream_triad_gbs_per_rank" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double g : all) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", g);
    out << buf;
    total += g;
  }
  out << YAML::EndSeq;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", total);
  out << YAML::Key << "stream_triad_gbs_total" << YAML::Value << buf;
  out << YAML::EndMap << YAML::EndMap;
  std::printf("%s\n", out.c_str());
}

void prepare_mpi_environment() {
#ifdef OPEN_MPI
  setenv("OMPI_MCA_osc", "sm,ucx", 0);
#endif
}

namespace {

// --help, --version, --print-schema, or an error on the command line:
// rank 0 answers; returns the exit status.
int answer_without_deck(const AppInfo& app, const CommandLine& cl, int rank) {
  int status = 0;
  if (rank == 0) {
    if (!cl.error.empty()) {
      std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), cl.error.c_str());
      std::fprintf(stderr, "try '%s --help'\n", app.name.c_str());
    } else if (cl.version) {
      std::printf("%s (locus %s, %s)\n", app.name.c_str(), version(), git_commit());
    } else if (cl.print_schema && !cl.help) {
      YAML::Emitter head;
      head << YAML::BeginMap << YAML::Key << "app" << YAML::Value << app.name << YAML::Key << "description"
           << YAML::Value << app.description << YAML::EndMap;
      std::printf("%s\nkeys:\n%s\n", head.c_str(), app.schema.yaml_text().c_str());
    } else {
      print_usage(app, true);
    }
  }
  if (!cl.error.empty()) status = 2;
  return status;
}

// Starts Kokkos. A --kokkos-* option Kokkos does not take, --kokkos-help
// and --machine end the process here: then Kokkos and MPI are finalized
// and the exit status returned.
std::optional<int> start_kokkos_or_finish(const AppInfo& app, const std::vector<std::string>& kokkos_args,
                                          bool machine, int rank, int size) {
  const KokkosStart ks = start_kokkos(app.name, kokkos_args, rank);
  if (ks.error.empty() && !ks.help && !machine) return std::nullopt;
  if (!ks.error.empty() && rank == 0) {
    std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), ks.error.c_str());
    std::fprintf(stderr, "try '%s --kokkos-help'\n", app.name.c_str());
  }
  if (ks.error.empty() && !ks.help) print_machine(app, rank, size);
  Kokkos::finalize();
  MPI_Finalize();
  return ks.error.empty() ? 0 : 2;
}

// Kokkos, then MPI, end; returns STATUS.
int finish(int status) {
  Kokkos::finalize();
  if (detail::output_abandoned()) {
    // An output whose write failed could not be closed (HDF5 would hang in
    // mismatched collectives); HDF5's MPI_Finalize hook would try again and
    // hang. Every rank knows (the failure was collective): end here.
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(status == 0 ? 1 : status);
  }
  MPI_Finalize();
  return status;
}

}  // namespace

int run(int argc, char** argv, const AppInfo& app, const std::function<int(Context&)>& main) {
  // The output watcher rank 0 starts (io.cpp): no MPI, no deck.
  if (argc == 4 && std::strcmp(argv[1], "--locus-reap-output") == 0)
    return detail::reap_output(argv[2], argv[3]);
  detail::g_reaper_capable = true;
  int provided = 0;
  prepare_mpi_environment();
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  install_signal_handlers(app.name, rank);

  SplitArgs split = split_kokkos_args(argc, argv);
  CommandLine cl = parse_args(static_cast<int>(split.rest.size()) - 1, split.rest.data());
  const bool kokkos_help = has_option(split.kokkos, "--kokkos-help");
  if (kokkos_help && cl.error == "no deck given") cl.error.clear();
  if (cl.help || cl.version || cl.print_schema || !cl.error.empty()) {
    const int status = answer_without_deck(app, cl, rank);
    MPI_Finalize();
    return status;
  }
  if (const std::optional<int> status = start_kokkos_or_finish(app, split.kokkos, cl.machine, rank, size))
    return *status;
  int status = 1;
  {
    Context ctx;
    ctx.app_ = &app;
    ctx.quiet_ = cl.quiet;
    ctx.summary_json_ = cl.summary_json;
    MPI_Comm_dup(MPI_COMM_WORLD, &ctx.comm_);
    ctx.rank_ = rank;
    ctx.size_ = size;
    for (int i = 0; i < argc; ++i) {
      if (i) ctx.command_line_ += ' ';
      ctx.command_line_ += argv[i];
    }
    try {
      ctx.config_ = load_everywhere(ctx.comm_, app, cl);
      check_output_keys(ctx.comm_, ctx.config_);
      ctx.run_name_ = ctx.config_.string("name").empty() ? stem_of(cl.deck) : ctx.config_.string("name");
      if (cl.print_config) {
        if (rank == 0) std::fputs(ctx.config_.yaml().c_str(), stdout);
        status = 0;
      } else {
        CommSettings settings;
        collectively(ctx.comm_, [&] { settings = comm_settings(ctx.config_); });
        Runtime runtime(ctx.comm_, settings);
        if (runtime.is_server()) {
          status = runtime.serve();
        } else {
          // The app sees the application units only.
          MPI_Comm all = ctx.comm_;
          ctx.comm_ = runtime.app_comm();
          MPI_Comm_rank(ctx.comm_, &ctx.rank_);
          MPI_Comm_size(ctx.comm_, &ctx.size_);
          ctx.runtime_ = &runtime;
          try {
            status = main(ctx);
          } catch (...) {
            ctx.runtime_ = nullptr;
            ctx.comm_ = all;
            throw;
          }
          ctx.runtime_ = nullptr;
          ctx.comm_ = all;
        }
      }
    } catch (const CollectiveError& e) {
      // Errors the runtime raises about a deck key get the key's place.
      std::string msg = e.what();
      const std::string key = "runtime.progress.processes_per_node";
      if (msg.rfind(key + ": ", 0) == 0) msg = ctx.config_.locate(key) + msg.substr(key.size());
      if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", app.name.c_str(), msg.c_str());
      status = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: error on rank %d: %s\n", app.name.c_str(), rank, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_free(&ctx.comm_);
  }
  return finish(status);
}

}  // namespace locus
