#pragma once
// The core's settings (the runtime.* and comm.* keys of every deck) as the
// layers use them. Each is declared once, with its key, default, range,
// help and summary line, in the settings table (config/settings_table.cpp);
// the defaults below are what a CommSettings holds without a deck (tests
// check that they are the table's).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "locus/config.hpp"

namespace locus {

// runtime.progress.*: progress processes and the progress thread
// (locus/progress.hpp).
enum class IdlePolicy { spin, yield, sleep };

struct ProgressSettings {
  int processes_per_node = 0;           // k: servers per node (0: none)
  std::size_t threshold = 4096;         // offload non-blocking transfers of >= this many bytes
  std::size_t staging = 4u << 20;       // per-unit staging area for buffers outside segments
  IdlePolicy idle = IdlePolicy::sleep;  // what an idle server does
  int linger_us = 500;                  // sleep policy: keep polling this long after the last command
  int max_sleep_us = 5000;              // sleep policy: longest nap (commands wake it at once)
  bool bind = true;                     // pin units and servers to CPUs (when the launcher did not)
  bool thread = false;                  // progress thread per unit
  int thread_interval_us = 20;          // the thread's polling interval
};

// "spin", "yield", "sleep" (the names of runtime.progress.idle).
std::string idle_policy_name(IdlePolicy p);

// Which MPI window the remote path uses: one window per segment, created
// over the segment's memory at allocation (MPI_Win_create: registered, the
// fast RMA path of MPI libraries), or the team's dynamic window with every
// segment attached (the DART design; MPICH serves it by active messages).
enum class WindowKind { segment, dynamic };

// Target-side redirection (Casper's asynchronous progress; locus/async.hpp):
// off, always on, on/off per named phase (user), or by the measured
// communication ratio (automatic).
enum class AsyncMode { off, on, user, automatic };

// A segment's redirection hint, given at allocation (collective: the same
// on every unit): follow the team's state (set_async / comm.async), or
// never redirect this segment (e.g. buffers only its owner's node touches,
// or put-only halos that the MPI library moves without the target).
enum class AsyncHint { follow, never };

struct AsyncSettings {
  AsyncMode mode = AsyncMode::off;             // comm.async (env LOCUS_ASYNC overrides)
  std::vector<std::string> on_phases{"comp"};  // user: phases that run with redirection on
  double interval = 1.0;   // auto: seconds of profile before a decision may change the mode
  double low = 0.3;        // auto: switch on when the communication ratio falls below this
  double high = 0.6;       // auto: switch off when it rises above this
  std::string thresholds;  // auto: the file low and high came from ("" for the deck's)
  // comm.async_ops: all (gets and puts too, Casper's choice) or atomics
  // (accumulates, fetch-and-op, compare-and-swap, notify flags) only.
  bool data = true;
};
// "off", "on", "user", "auto".
std::string async_mode_name(AsyncMode m);
// The mode a name stands for (the inverse of async_mode_name); nullopt for
// any other text. The one parser of comm.async, LOCUS_ASYNC and the tests'
// --async.
std::optional<AsyncMode> async_mode_from_name(const std::string& name);

// How the atomics of a segment that spans nodes reach other nodes (a
// segment whose team is on one node always uses CPU atomics on the shared
// memory, comm.locality on):
//   mpi        MPI accumulate operations on the segment's window, for every
//              target (same-node ones too), so that all are atomic together
//   aggregate  CPU atomics on the target's node: same-node targets directly,
//              other nodes' through per-destination batches that the target
//              applies (aggregate.hpp)
// automatic (allocation only): the deck's comm.atomics.
enum class AtomicMode { automatic, mpi, aggregate };

// comm.aggregate: the batches of fine-grained traffic to other nodes.
//   message  a batch is one MPI_Isend, matched by receives the destination
//            keeps posted; no credits (a pool of 2 x slots send buffers
//            bounds what is in flight); applied counts go back as small
//            messages when a flush's batches ask for them
//   put      a batch is one MPI_Put into the destination's mailbox, a flush,
//            then its sequence number by MPI_Accumulate (the notified put);
//            applied counts go back by MPI_Accumulate
// Both need the destination at a progress point to apply a batch. message
// is the default: on MPICH 4.0 ch4:ucx within a host every put's flush
// waited for the target (docs/results.md).
enum class AggregateTransport { message, put };

// comm.staging: how halo faces and spmv's x entries leave an app's memory
// space (locus/staging.hpp). automatic: straight from the field or vector
// when the core can address that space (host memory), through host
// segments otherwise; always: through host segments in every build (pack
// kernel into a buffer in the app's space, copy to a host segment,
// transfer, copy back, unpack), so a host build tests the device path.
enum class Staging { automatic, always };
// comm.aggregate.applier: who applies the batches sent to a unit
//   owner     the unit itself, at its progress points (every locus call
//             that waits, progress(team)): a unit computing outside locus
//             delays those that aggregate to it
//   progress  its node's progress process (the one that serves it), with
//             CPU atomics on the node's shared memory: truly one-sided.
//             Needs progress processes and the message transport; applies
//             to the world team's segments (other teams': the owner)
enum class AggregateApplier { owner, progress };
struct AggregateSettings {
  std::size_t records = 1024;  // records (one update or get each) per batch
  int slots = 8;               // put: mailbox slots per pair; message: 2 x slots buffers each way
  AggregateTransport transport = AggregateTransport::message;
  AggregateApplier applier = AggregateApplier::owner;
};

// comm.remote: how a transfer plan's entries to units of other nodes travel
// (same-node entries are always shared memory, comm.locality on):
//   rma        one-sided: MPI_Get/MPI_Put (or MPI_Rget/MPI_Rput) on the
//              segment's window, synchronised by the plan's user (flags)
//   message    two-sided: MPI_Isend/MPI_Irecv of datatypes that both sides
//              build once from the plan (the data is its own notification)
//   automatic  per pair of units by the bytes they exchange in the plan, from
//              a calibration of this MPI library (comm.remote_calibration)
// A plan asks for `deck` to follow comm.remote (plan.hpp).
enum class RemoteMode { rma, message, automatic, deck };

// comm.remote_faces: how a halo face of several runs (rows with gaps
// between them) travels when its pair routes as messages: packed by a
// kernel into one contiguous message, or as an MPI datatype over its rows
// straight between the fields. Faces of one run always go direct.
enum class RemoteFaces { packed, direct };

// comm.remote_requests: how a plan's message pairs are posted: immediate
// (MPI_Isend/MPI_Irecv at every start), persistent (MPI_Send_init/
// MPI_Recv_init once per local buffer, MPI_Startall at every start), eager
// (MPI_Irecv of every receive, then each send by a blocking MPI_Send:
// below the library's eager limit it returns at once and needs no request;
// only for plans whose message pairs move at most kEagerMaxBytes, larger
// ones post immediate requests), or automatic (the fastest of the three at
// the plan's size by the calibration's message_us, persistent_us and
// eager_us; immediate without those figures).
enum class RemoteRequests { immediate, persistent, eager, automatic };

// The largest message pair (bytes per execution) a plan sends by blocking
// MPI_Send: under the smallest eager limit of the libraries locus runs on
// (Open MPI's shared-memory transport: 4 KiB), so that the send completes
// without the receiver.
constexpr double kEagerMaxBytes = 4096;

// comm.remote: auto takes RMA for a pair only where the calibration's
// rma_us is this fraction below message_us. Nearer, the two are level
// within the calibration's run-to-run noise (5 %: one route won 32 KiB
// and 128 KiB in one run and lost them in the next), and messages are the
// safe side: a notified get also waits for the owner's flag.
constexpr double kRmaMargin = 0.05;

// One calibrated message size: time per exchange by each route (and by
// the message route with persistent requests and with eager sends; 0 when
// not measured).
struct RemotePoint {
  double bytes = 0, message_us = 0, rma_us = 0, persistent_us = 0, eager_us = 0;
};
struct RemoteSettings {
  RemoteMode mode = RemoteMode::automatic;
  std::string calibration;                  // the file the points came from ("" when none was found)
  std::string calibrated_library;           // the MPI library the file was measured with
  std::vector<RemotePoint> points;          // by growing size
  std::string why;                          // how the calibration was found, or why there is none
  RemoteFaces faces = RemoteFaces::direct;  // comm.remote_faces
  RemoteRequests requests = RemoteRequests::automatic;  // comm.remote_requests
  // The route of a pair exchanging `bytes` in one plan execution (mode
  // automatic): by the nearest calibrated sizes (log-linear interpolation;
  // the end points beyond the range), RMA only where it beats messages by
  // more than kRmaMargin, else message (also without a calibration).
  bool message_for(double bytes) const;
  // How a plan whose message pairs exchange up to `bytes` posts them
  // (comm.remote_requests; automatic: the least of the calibration's
  // message_us, persistent_us and eager_us, interpolated as above, eager
  // only up to kEagerMaxBytes). Never automatic.
  RemoteRequests requests_for(double bytes) const;
};

struct CommSettings {
  int node_size = 0;                        // 0: real nodes; N: N consecutive ranks form a node
  bool locality = true;                     // same-node transfers by memcpy on shared memory
  WindowKind window = WindowKind::segment;  // comm.window
  bool check = false;                       // bounds/collective checks on every call
  AtomicMode atomics = AtomicMode::mpi;     // comm.atomics: segments that span nodes
  ProgressSettings progress;                // progress processes and thread (progress.hpp)
  AsyncSettings async;                      // target-side redirection (async.hpp)
  AggregateSettings aggregate;              // comm.aggregate: batching of fine-grained traffic to other nodes
  RemoteSettings remote;                    // comm.remote: plans' route to other nodes
  Staging staging = Staging::automatic;     // comm.staging
  bool htm = false;     // comm.htm: same-node accumulate runs as RTM transactions (htm.hpp)
  std::string htm_why;  // what comm.htm decided and why (the summary)
  // comm.fp_locks: same-node floating-point atomics under stripe locks
  // (mem/stripe_locks.hpp) instead of a compare-and-swap per element
  bool fp_locks = false;
  std::string fp_locks_why;  // what comm.fp_locks decided and why (the summary)
};

// The node size to use: the deck's value when > 0, else LOCUS_NODE_SIZE,
// else 0 (real nodes). Throws Error for a malformed LOCUS_NODE_SIZE.
int effective_node_size(long from_deck);

// The keys every app's deck has: name, output.* (config/schema_keys.cpp)
// and the core's settings, runtime.* and comm.* (config/settings_table.cpp).
void add_common_keys(Schema& schema, const std::string& app_name);

// The core's settings from a checked deck: every entry of the settings
// table, then env LOCUS_NODE_SIZE (runtime.node_size 0) and LOCUS_ASYNC
// (overrides comm.async), the thresholds and calibration files, comm.htm's
// decision and the checks across keys. Throws CollectiveError naming the
// key's place for values the schema lets through but the core cannot run
// (Error for a malformed LOCUS_NODE_SIZE).
CommSettings comm_settings(const Config& config);

}  // namespace locus
