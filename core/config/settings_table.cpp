// The core's settings, one entry each (settings_table.hpp), and the names
// of their choices.
#include "config/settings_table.hpp"

#include <iterator>
#include <sstream>
#include <utility>

namespace locus {

namespace {

// A choice's name in a deck and the value it stands for in CommSettings.
template <class T>
struct Name {
  const char* name;
  T value;
};

constexpr Name<IdlePolicy> kIdlePolicies[] = {
    {"spin", IdlePolicy::spin}, {"yield", IdlePolicy::yield}, {"sleep", IdlePolicy::sleep}};
constexpr Name<bool> kBindings[] = {{"auto", true}, {"none", false}};
constexpr Name<WindowKind> kWindows[] = {{"segment", WindowKind::segment}, {"dynamic", WindowKind::dynamic}};
constexpr Name<AtomicMode> kAtomics[] = {{"mpi", AtomicMode::mpi}, {"aggregate", AtomicMode::aggregate}};
constexpr Name<AggregateTransport> kTransports[] = {{"message", AggregateTransport::message},
                                                    {"put", AggregateTransport::put}};
constexpr Name<AggregateApplier> kAppliers[] = {{"owner", AggregateApplier::owner},
                                                {"progress", AggregateApplier::progress}};
constexpr Name<AsyncMode> kAsyncModes[] = {{"off", AsyncMode::off},
                                           {"on", AsyncMode::on},
                                           {"user", AsyncMode::user},
                                           {"auto", AsyncMode::automatic}};
constexpr Name<bool> kAsyncOps[] = {{"all", true}, {"atomics", false}};
constexpr Name<RemoteMode> kRemoteModes[] = {
    {"rma", RemoteMode::rma}, {"message", RemoteMode::message}, {"auto", RemoteMode::automatic}};
constexpr Name<RemoteFaces> kRemoteFaces[] = {{"direct", RemoteFaces::direct},
                                              {"packed", RemoteFaces::packed}};
constexpr Name<RemoteRequests> kRemoteRequests[] = {{"auto", RemoteRequests::automatic},
                                                    {"immediate", RemoteRequests::immediate},
                                                    {"persistent", RemoteRequests::persistent},
                                                    {"eager", RemoteRequests::eager}};
constexpr Name<Staging> kStagings[] = {{"auto", Staging::automatic}, {"always", Staging::always}};

template <class Names, class T>
const char* name_of(const Names& names, T value) {
  for (const auto& n : names)
    if (n.value == value) return n.name;
  return "?";
}

// Where a setting lands: a member of CommSettings, or a member of one of
// its parts (progress, async, aggregate, remote).
template <class T>
struct Field {
  std::function<T&(CommSettings&)> ref;
  std::function<const T&(const CommSettings&)> read;
};
template <class T>
Field<T> member(T CommSettings::*m) {
  return {[m](CommSettings& s) -> T& { return s.*m; },
          [m](const CommSettings& s) -> const T& { return s.*m; }};
}
template <class Part, class T>
Field<T> member(Part CommSettings::*part, T Part::*m) {
  return {[=](CommSettings& s) -> T& { return (s.*part).*m; },
          [=](const CommSettings& s) -> const T& { return (s.*part).*m; }};
}

// The entries by kind: key, default (range, choices), field, help.
Setting entry(const char* key, SettingKind kind, Value fallback, const char* help) {
  Setting e;
  e.key = key;
  e.kind = kind;
  e.fallback = std::move(fallback);
  e.help = help;
  return e;
}

Setting boolean(const char* key, bool fallback, Field<bool> f, const char* help) {
  Setting e = entry(key, SettingKind::boolean, fallback, help);
  e.set = [f](CommSettings& s, const Value& v) { f.ref(s) = std::get<bool>(v); };
  e.get = [f](const CommSettings& s) -> Value { return f.read(s); };
  return e;
}

template <class T>
Setting integer(const char* key, long fallback, long min, long max, Field<T> f, const char* help) {
  Setting e = entry(key, SettingKind::integer, fallback, help);
  e.min = min;
  e.max = max;
  e.set = [f](CommSettings& s, const Value& v) { f.ref(s) = static_cast<T>(std::get<long>(v)); };
  e.get = [f](const CommSettings& s) -> Value { return static_cast<long>(f.read(s)); };
  return e;
}

Setting number(const char* key, double fallback, double min, double max, Field<double> f, const char* help) {
  Setting e = entry(key, SettingKind::number, fallback, help);
  e.min = min;
  e.max = max;
  e.set = [f](CommSettings& s, const Value& v) { f.ref(s) = std::get<double>(v); };
  e.get = [f](const CommSettings& s) -> Value { return f.read(s); };
  return e;
}

Setting string(const char* key, const char* fallback, Field<std::string> f, const char* help) {
  Setting e = entry(key, SettingKind::string, std::string(fallback), help);
  e.set = [f](CommSettings& s, const Value& v) { f.ref(s) = std::get<std::string>(v); };
  e.get = [f](const CommSettings& s) -> Value { return f.read(s); };
  return e;
}

// A string of comma-separated names (blanks around each dropped).
Setting name_list(const char* key, const char* fallback, Field<std::vector<std::string>> f,
                  const char* help) {
  Setting e = entry(key, SettingKind::string, std::string(fallback), help);
  e.set = [f](CommSettings& s, const Value& v) {
    std::vector<std::string>& names = f.ref(s);
    names.clear();
    std::stringstream text(std::get<std::string>(v));
    for (std::string p; std::getline(text, p, ',');) {
      p.erase(0, p.find_first_not_of(' '));
      p.erase(p.find_last_not_of(' ') + 1);
      if (!p.empty()) names.push_back(p);
    }
  };
  e.get = [f](const CommSettings& s) -> Value {
    std::string text;
    for (const std::string& n : f.read(s)) text += (text.empty() ? "" : ",") + n;
    return text;
  };
  return e;
}

template <class T, std::size_t N>
Setting choice(const char* key, const char* fallback, const Name<T> (&names)[N], Field<T> f,
               const char* help) {
  Setting e = entry(key, SettingKind::choice, std::string(fallback), help);
  const std::vector<Name<T>> list(std::begin(names), std::end(names));
  for (const Name<T>& n : list) e.choices.emplace_back(n.name);
  e.set = [f, list](CommSettings& s, const Value& v) {
    for (const Name<T>& n : list)
      if (std::get<std::string>(v) == n.name) f.ref(s) = n.value;
  };
  e.get = [f, list](const CommSettings& s) -> Value { return std::string(name_of(list, f.read(s))); };
  return e;
}

// A key that only code beside the table reads (comm_settings.cpp).
Setting read_by_code(const char* key, SettingKind kind, const char* fallback,
                     std::vector<std::string> choices, const char* help) {
  Setting e = entry(key, kind, std::string(fallback), help);
  e.choices = std::move(choices);
  return e;
}

// Why most settings have no line of their own in the summary.
const char* const kAsGiven = "used as the deck gives it; the summary's config shows it";

bool redirecting(const CommSettings& s) {
  return s.async.mode != AsyncMode::off;
}
bool adapting(const CommSettings& s) {
  return s.async.mode == AsyncMode::automatic;
}

// runtime.*: emulated nodes, progress processes and the progress thread
std::vector<Setting> runtime_settings() {
  using P = ProgressSettings;
  const auto progress = &CommSettings::progress;
  return {
      integer("runtime.node_size", 0, 0, 1 << 20, member(&CommSettings::node_size),
              "emulate nodes of N consecutive ranks (0: real nodes, or env LOCUS_NODE_SIZE)")
          .then("0: env LOCUS_NODE_SIZE, else real nodes (effective_node_size)")
          .printed("node_map.emulated_node_size"),
      integer("runtime.progress.processes_per_node", 0, 0, 64, member(progress, &P::processes_per_node),
              "progress processes per node: the last k ranks of every node serve the others' "
              "non-blocking transfers instead of running the app (0: none)")
          .unprinted("the summary names the servers (progress.processes, progress.unit_ranks)"),
      integer("runtime.progress.threshold", 4096, 1, Schema::kNoMax, member(progress, &P::threshold),
              "non-blocking gets/puts of at least this many bytes go to the node's progress process")
          .unprinted(kAsGiven),
      integer("runtime.progress.staging", 4 << 20, 4096, 1L << 30, member(progress, &P::staging),
              "bytes per unit of staging memory (shared, checked against the node's free memory) for "
              "origin buffers outside segments; larger transfers are sent in pieces")
          .unprinted(kAsGiven),
      choice("runtime.progress.idle", "sleep", kIdlePolicies, member(progress, &P::idle),
             "what an idle progress process does: spin, yield the core, or sleep with back-off")
          .unprinted(kAsGiven),
      integer("runtime.progress.linger_us", 500, 0, 1000000, member(progress, &P::linger_us),
              "idle sleep: how long an idle server keeps polling (yielding) before it sleeps")
          .unprinted(kAsGiven),
      integer("runtime.progress.max_sleep_us", 5000, 1, 1000000, member(progress, &P::max_sleep_us),
              "idle sleep: longest nap between looks at the rings (a new command wakes the server at once)")
          .unprinted(kAsGiven),
      choice("runtime.progress.bind", "auto", kBindings, member(progress, &P::bind),
             "with progress processes: pin units and servers to CPUs so that no server shares a core with "
             "the units it serves (auto; skipped when the launcher bound the ranks) or leave them (none)")
          .unprinted("the summary shows what binding did (progress.binding, progress.cpus)"),
      boolean("runtime.progress.thread", false, member(progress, &P::thread),
              "a progress thread per unit that keeps MPI progressing (needs MPI_THREAD_MULTIPLE)")
          .printed("progress.thread"),
      integer("runtime.progress.thread_interval_us", 20, 0, 1000000, member(progress, &P::thread_interval_us),
              "progress thread polling interval in microseconds (0: yield between polls)")
          .unprinted(kAsGiven),
  };
}

// comm.*: locality, windows, checks, atomics
std::vector<Setting> transfer_settings() {
  return {
      boolean("comm.locality", true, member(&CommSettings::locality),
              "same-node one-sided transfers by memcpy on shared memory")
          .unprinted(kAsGiven),
      choice("comm.window", "segment", kWindows, member(&CommSettings::window),
             "MPI window of the remote path: one per segment (MPI_Win_create at allocation) or the team's "
             "dynamic window with the segments attached (the DART design; MPICH serves it by active "
             "messages, 4-16x slower from 64 KiB)")
          .unprinted(kAsGiven),
      boolean("comm.check", false, member(&CommSettings::check),
              "check every global pointer and collective call (always on in debug builds)")
          .then("on in debug builds whatever the deck says")
          .unprinted("the deck's value, except in debug builds (machine.build_type says which ran)"),
      choice("comm.atomics", "mpi", kAtomics, member(&CommSettings::atomics),
             "atomics on segments whose team spans nodes: mpi (MPI accumulates for every target, same-node "
             "ones too) or aggregate (CPU atomics on the node; updates and one-element gets to other nodes "
             "travel in per-destination batches that the target applies at its progress points). Teams on "
             "one node always use CPU atomics (comm.locality on)")
          .unprinted(kAsGiven),
      read_by_code("comm.htm", SettingKind::choice, "auto", {"auto", "off"},
                   "same-node accumulates of contiguous runs (accumulate and accumulate_async of 4 elements "
                   "and more, on CPU atomics): auto applies them in hardware transactions of 512 bytes where "
                   "the CPU has Intel RTM (atomic per element as before, chunks that abort take the CPU "
                   "atomics), and update_nbi's same-node elements in transactions of 16; off: one CPU atomic "
                   "per element")
          .then("auto: on where the CPU has RTM (decide_htm); htm_why says what was decided and why")
          .printed("htm", {}, [](const CommSettings& s) -> Printed { return s.htm_why; }),
      read_by_code("comm.fp_locks", SettingKind::choice, "auto", {"auto", "off"},
                   "same-node floating-point atomics (sum, min, max, replace, their fetching forms) where "
                   "comm.htm takes no transactions: auto applies runs of them as plain operations under "
                   "4 KiB stripe locks in the segment's shared memory (one lock per stripe, atomic per "
                   "element as before; compare-and-swap takes the lock too, integer atomics do not); off: "
                   "one compare-and-swap loop per element")
          .then("auto: on where comm.locality is on, comm.htm is off or the CPU has no RTM, and there are "
                "no progress processes (decide_fp_locks); fp_locks_why says what was decided and why")
          .printed("fp_locks", {}, [](const CommSettings& s) -> Printed { return s.fp_locks_why; }),
  };
}

// comm.aggregate.*: batches of fine-grained traffic to other nodes
std::vector<Setting> aggregate_settings() {
  using A = AggregateSettings;
  const auto aggregate = &CommSettings::aggregate;
  return {
      integer("comm.aggregate.records", 1024, 16, 1 << 20, member(aggregate, &A::records),
              "aggregate: records (one update, get or reply: 8-24 B) per batch; a full batch is sent at "
              "once")
          .unprinted(kAsGiven),
      integer("comm.aggregate.slots", 8, 1, 64, member(aggregate, &A::slots),
              "aggregate: transport put: batches one unit may have in flight to another (mailbox slots per "
              "pair, units x slots x (16 + 40 x records) bytes per unit); message: 2 x slots receives and 2 "
              "x slots send buffers of 16 + 40 x records bytes, shared by all destinations (a full batch "
              "waits for a free send buffer)")
          .unprinted(kAsGiven),
      choice("comm.aggregate.transport", "message", kTransports, member(aggregate, &A::transport),
             "aggregate: how a batch travels: message (one MPI_Isend into receives the destination keeps "
             "posted) or put (one MPI_Put into the destination's mailbox, a flush, then its sequence number "
             "by MPI_Accumulate: the notified put)")
          .unprinted(kAsGiven),
      choice("comm.aggregate.applier", "owner", kAppliers, member(aggregate, &A::applier),
             "aggregate: who applies the batches sent to a unit: owner (the unit itself, at its progress "
             "points) or progress (its node's progress process, with CPU atomics on the node's shared "
             "memory: a unit computing outside locus does not hold up those aggregating to it; needs "
             "runtime.progress.processes_per_node >= 1 and transport message; the world team's segments)")
          .then("progress: needs progress processes and transport message (check_applier)")
          .unprinted(kAsGiven),
  };
}

// comm.async*, comm.adapt.*: redirection
std::vector<Setting> redirection_settings() {
  using A = AsyncSettings;
  const auto async = &CommSettings::async;
  return {
      choice("comm.async", "off", kAsyncModes, member(async, &A::mode),
             "target-side redirection (Casper): operations on units of other nodes and all atomics go to "
             "the target node's progress process, so they complete while the target computes. off; on; "
             "user: on in the phases named by comm.async_phases, off in the others; auto: switched by the "
             "measured communication ratio (comm.adapt.*). Needs runtime.progress.processes_per_node >= 1 "
             "(env LOCUS_ASYNC overrides)")
          .then("env LOCUS_ASYNC overrides; not off: needs progress processes and comm.window: segment "
                "(async_specials)")
          .printed("async.mode", redirecting),
      choice("comm.async_ops", "all", kAsyncOps, member(async, &A::data),
             "what redirection sends to the target's ghost: all (gets and puts to other nodes too, as "
             "Casper) or atomics only (accumulates, fetch-and-op, compare-and-swap, notify flags: what an "
             "MPI library applies in software at the target; gets and puts stay direct, better for "
             "put-heavy codes where the library moves them by RDMA or shared memory)")
          .unprinted(kAsGiven),
      name_list("comm.async_phases", "comp", member(async, &A::on_phases),
                "user: comma-separated phase names that run with redirection on (the app names its phases)")
          .printed(
              "async.on_phases", [](const CommSettings& s) { return s.async.mode == AsyncMode::user; },
              [](const CommSettings& s) -> Printed { return s.async.on_phases; }),
      number("comm.adapt.interval", 1.0, 0.0, 3600.0, member(async, &A::interval),
             "auto: seconds of communication profile before the mode may change (a minimum interval; 0: at "
             "every phase point)")
          .printed("async.interval", adapting),
      number("comm.adapt.low", 0.3, 0.0, 1.0, member(async, &A::low),
             "auto: switch redirection on when the communication ratio Tcomm/(Tcomm+Tcomp) falls below this")
          .then("a thresholds file replaces it; below high (async_specials)")
          .printed("async.low", adapting),
      number("comm.adapt.high", 0.6, 0.0, 1.0, member(async, &A::high),
             "auto: switch redirection off when the communication ratio rises above this (low < high)")
          .then("a thresholds file replaces it (async_specials)")
          .printed("async.high", adapting),
      string("comm.adapt.thresholds", "", member(async, &A::thresholds),
             "auto: a thresholds file from ./locus bench calibrate (its low and high replace "
             "comm.adapt.low/high)")
          .then("the file's low and high replace comm.adapt.low/high (async_specials)")
          .printed("async.thresholds",
                   [](const CommSettings& s) { return adapting(s) && !s.async.thresholds.empty(); }),
  };
}

// comm.remote*, comm.staging: routes to other nodes and staging
std::vector<Setting> route_settings() {
  using R = RemoteSettings;
  const auto remote = &CommSettings::remote;
  return {
      choice("comm.remote", "auto", kRemoteModes, member(remote, &R::mode),
             "how halos and spmv's rma mode reach units of other nodes (transfer plans; same-node units are "
             "always shared memory): rma (one-sided gets/puts announced by flags), message (two-sided "
             "sends and receives both sides build from the plan) or auto (per pair by the bytes "
             "exchanged, from a calibration of this MPI library: comm.remote_calibration)")
          .then("auto: reads the calibration (find_calibration); remote.why says how it was found")
          .printed("remote.mode"),
      choice("comm.remote_faces", "direct", kRemoteFaces, member(remote, &R::faces),
             "how a halo face of several rows travels between nodes when its pair routes as messages: "
             "direct (an MPI datatype over its rows, straight between the fields, as p2p sends it; rows "
             "under 64 bytes are packed) or packed (a kernel packs it, one contiguous message, a kernel "
             "unpacks; faster where the MPI library's datatype path is slow); a face of one row always "
             "goes direct")
          .printed("remote.faces"),
      choice("comm.remote_requests", "auto", kRemoteRequests, member(remote, &R::requests),
             "how a transfer plan posts its messages to other nodes: immediate (MPI_Isend/MPI_Irecv at "
             "every execution), persistent (MPI_Send_init/MPI_Recv_init once, MPI_Startall at every "
             "execution), eager (MPI_Irecv, then a blocking MPI_Send that returns at once below the "
             "library's eager limit; plans of at most 4096 bytes per pair, larger ones immediate) or auto "
             "(the fastest of the three at the plan's size by the calibration's message_us, persistent_us "
             "and eager_us; immediate without those figures, e.g. with comm.remote: message)")
          .printed("remote.requests"),
      read_by_code("comm.remote_calibration", SettingKind::string, "", {},
                   "auto: the calibration file (written by ./locus bench exchange on nodes); empty: "
                   "remote-<mpich|openmpi>.yaml shipped in inputs/calibration (no file: message)")
          .then("comm.remote: auto reads it, or the file shipped for this MPI library (find_calibration)")
          .printed(
              "remote.calibration", [](const CommSettings& s) { return !s.remote.calibration.empty(); },
              [](const CommSettings& s) -> Printed { return s.remote.calibration; }),
      choice("comm.staging", "auto", kStagings, member(&CommSettings::staging),
             "how halo faces and spmv's x entries leave the app's Kokkos memory space: auto (straight from "
             "the field or vector when the core can address that space, i.e. host memory; through host "
             "segments otherwise) or always (through host segments in every build: pack kernel into a "
             "buffer in the app's memory space, copy to a host segment, transfer, copy back, unpack; "
             "fields and x then live outside segments; a host build then runs the device data path)")
          .unprinted(kAsGiven),
  };
}

}  // namespace

const std::vector<Setting>& settings_table() {
  static const std::vector<Setting> table = [] {
    std::vector<Setting> t;
    for (auto part :
         {runtime_settings, transfer_settings, aggregate_settings, redirection_settings, route_settings})
      for (Setting& e : part()) t.push_back(std::move(e));
    return t;
  }();
  return table;
}

const Setting* find_setting(const std::string& key) {
  for (const Setting& e : settings_table())
    if (e.key == key) return &e;
  return nullptr;
}

Value deck_value(const Config& config, const Setting& setting) {
  switch (setting.kind) {
    case SettingKind::boolean:
      return config.boolean(setting.key);
    case SettingKind::integer:
      return config.integer(setting.key);
    case SettingKind::number:
      return config.real(setting.key);
    case SettingKind::choice:
    case SettingKind::string:
      break;
  }
  return config.string(setting.key);
}

std::optional<Printed> Setting::print(const CommSettings& s) const {
  if (summary.empty() || (when && !when(s))) return std::nullopt;
  if (value) return value(s);
  const Value v = get(s);
  if (const bool* b = std::get_if<bool>(&v)) return *b;
  if (const long* l = std::get_if<long>(&v)) return *l;
  if (const double* d = std::get_if<double>(&v)) return *d;
  return std::get<std::string>(v);
}

Setting& Setting::printed(std::string path, std::function<bool(const CommSettings&)> only_when,
                          std::function<Printed(const CommSettings&)> shown) {
  summary = std::move(path);
  when = std::move(only_when);
  value = std::move(shown);
  return *this;
}

Setting& Setting::unprinted(std::string why) {
  not_printed = std::move(why);
  return *this;
}

Setting& Setting::then(std::string what) {
  special = std::move(what);
  return *this;
}

std::string idle_policy_name(IdlePolicy p) {
  return name_of(kIdlePolicies, p);
}

std::string async_mode_name(AsyncMode m) {
  return name_of(kAsyncModes, m);
}

std::optional<AsyncMode> async_mode_from_name(const std::string& name) {
  for (const auto& n : kAsyncModes)
    if (name == n.name) return n.value;
  return std::nullopt;
}

}  // namespace locus
