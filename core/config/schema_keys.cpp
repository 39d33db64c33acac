// The keys every app's deck has (name, output.*, runtime.*, comm.*),
// beside the app's own.
#include "locus/settings.hpp"

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
      .choice("comm.htm", "auto", {"auto", "off"},
              "same-node accumulates of contiguous runs (accumulate and accumulate_async of 4 elements and "
              "more, on CPU atomics): auto applies them in hardware transactions of 512 bytes where the CPU "
              "has Intel RTM (atomic per element as before, chunks that abort take the CPU atomics), and "
              "update_nbi's same-node elements in transactions of 16; off: one CPU atomic per element")
      .integer("comm.aggregate.records", 1024, 16, 1 << 20,
               "aggregate: records (one update, get or reply: 8-24 B) per batch; a full batch is sent at "
               "once")
      .integer(
          "comm.aggregate.slots", 8, 1, 64,
          "aggregate: transport put: batches one unit may have in flight to another (mailbox slots per "
          "pair, units x slots x (16 + 40 x records) bytes per unit); message: 2 x slots receives and 2 x "
          "slots send buffers of 16 + 40 x records bytes, shared by all destinations (a full batch waits "
          "for a free send buffer)")
      .choice("comm.aggregate.transport", "message", {"message", "put"},
              "aggregate: how a batch travels: message (one MPI_Isend into receives the destination keeps "
              "posted) or put (one MPI_Put into the destination's mailbox, a flush, then its sequence number "
              "by MPI_Accumulate: the notified put)")
      .choice("comm.aggregate.applier", "owner", {"owner", "progress"},
              "aggregate: who applies the batches sent to a unit: owner (the unit itself, at its progress "
              "points) or progress (its node's progress process, with CPU atomics on the node's shared "
              "memory: a unit computing outside locus does not hold up those aggregating to it; needs "
              "runtime.progress.processes_per_node >= 1 and transport message; the world team's segments)");
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
      .choice("comm.remote_faces", "direct", {"direct", "packed"},
              "how a halo face of several rows travels between nodes when its pair routes as messages: "
              "direct (an MPI datatype over its rows, straight between the fields, as p2p sends it; rows "
              "under 64 bytes are packed) or packed (a kernel packs it, one contiguous message, a kernel "
              "unpacks; faster where the MPI library's datatype path is slow); a face of one row always "
              "goes direct")
      .choice("comm.remote_requests", "auto", {"auto", "immediate", "persistent", "eager"},
              "how a transfer plan posts its messages to other nodes: immediate (MPI_Isend/MPI_Irecv at "
              "every execution), persistent (MPI_Send_init/MPI_Recv_init once, MPI_Startall at every "
              "execution), eager (MPI_Irecv, then a blocking MPI_Send that returns at once below the "
              "library's eager limit; plans of at most 4096 bytes per pair, larger ones immediate) or auto "
              "(the fastest of the three at the plan's size by the calibration's message_us, persistent_us "
              "and eager_us; immediate without those figures, e.g. with comm.remote: message)")
      .string("comm.remote_calibration", "",
              "auto: the calibration file (written by ./locus bench exchange on nodes); empty: "
              "remote-<mpich|openmpi>.yaml shipped in inputs/calibration (no file: message)")
      .choice(
          "comm.staging", "auto", {"auto", "always"},
          "how halo faces and spmv's x entries leave the app's Kokkos memory space: auto (straight from the "
          "field or vector when the core can address that space, i.e. host memory; through host segments "
          "otherwise) or always (through host segments in every build: pack kernel into a buffer in the "
          "app's memory space, copy to a host segment, transfer, copy back, unpack; fields and x then live "
          "outside segments; a host build then runs "
          "the device data path)");
}

}  // namespace

void add_common_keys(Schema& s, const std::string& app_name) {
  add_output_keys(s, app_name);
  add_runtime_keys(s);
  add_transfer_keys(s);
  add_route_keys(s);
}

}  // namespace locus
