#pragma once
// Internal: the progress-process engine shared by application units (the
// client side: rings, completion slots, staging) and servers (the loop).
// See locus/progress.hpp for the design.
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "locus/handle.hpp"
#include "progress/progress_layout.hpp"
#include "xfer/transfer.hpp"

namespace locus {
namespace detail {

constexpr std::uint32_t kRingSlots = 512;    // commands in flight per unit before the producer waits
constexpr std::uint32_t kCompletion = 4096;  // outstanding offloaded handles per unit

// One command: the paper's Table I packet plus a completion slot and the
// two layouts of a strided transfer.
struct alignas(64) Command {
  CommandKind kind;
  std::int32_t target;          // dest: target unit (world team)
  std::int32_t team;            // index: the team (0, the world team)
  std::int32_t segment;         // segid: target segment
  std::uint64_t target_offset;  // bytes into the target unit's part
  std::uint64_t origin_offset;  // bytes into the origin's part of origin_segment, or into staging
  std::int32_t origin_segment;  // -1: the origin's staging area
  std::int32_t same_node;       // is_shmem: move by memcpy on shared memory
  std::uint32_t slot;           // completion slot the origin polls
  std::uint32_t esize;          // element size of the layouts
  Layout local, remote;         // data_size = local.elements() * esize
};

enum SlotState : std::uint32_t { slot_free = 0, slot_pending = 1, slot_done = 2, slot_error = 3 };

// Per application unit, in the node's bootstrap shared memory.
struct UnitArea {
  alignas(64) std::atomic<std::uint64_t> head;     // written by the unit
  alignas(64) std::atomic<std::uint64_t> tail;     // written by its server
  alignas(64) std::atomic<std::uint32_t> waiting;  // the unit waits: flush now
  alignas(64) char error[512];                     // text of the last failed command
  std::atomic<std::uint32_t> state[kCompletion];
  Command ring[kRingSlots];
  // the staging area follows
};

// async: redirection switched (segment field: 1 on, 0 off); the server
// keeps MPI progressing while it is on instead of sleeping.
enum class Control : std::uint32_t { none = 0, alloc = 1, free = 2, exit = 3, async = 4 };

// Per server: its mailbox for collective events.
struct ServerArea {
  alignas(64) std::atomic<std::uint64_t> seq;       // events posted by the node's first unit
  alignas(64) std::atomic<std::uint64_t> arrived;   // units that reached an event (all events)
  alignas(64) std::atomic<std::uint64_t> done;      // the last event the server has read
  alignas(64) std::atomic<std::uint32_t> sleeping;  // idle policy sleep: the server waits on `wake`
  std::atomic<std::uint32_t> wake;                  // futex word: bumped to wake the server
  alignas(64) Control kind;
  std::int32_t team, segment;
};

// What every unit says about a segment allocation (gathered; servers get
// it by broadcast on the node).
struct Claim {
  long long disp;
  long long bytes;
  long long node_offset;  // of the part from the lowest part of its node (served teams)
  int segment;
  int elem_size;
};

}  // namespace detail
// Private access to Handle for the engines.
struct HandleAccess {
  using State = Handle::State;
  // A direct-path operation in flight: a request and/or a flush of (target, win).
  static Handle make(MPI_Request req, MPI_Win win, int target, bool flush) {
    Handle h;
    h.o_.state = State::mpi;
    h.o_.req = req;
    static_assert(sizeof(MPI_Win) <= sizeof(h.o_.win), "a window fits the handle's field");
    std::memcpy(&h.o_.win, &win, sizeof(MPI_Win));
    h.o_.target = target;
    h.o_.flush = flush;
    return h;
  }
  // An operation that completed when it was issued.
  static Handle ready() {
    Handle h;
    h.o_.state = State::ready;
    return h;
  }
  static State state(const Handle& h) { return h.o_.state; }
  static void set_state(Handle& h, State s) { h.o_.state = s; }
  static MPI_Request& req(Handle& h) { return h.o_.req; }
  static bool flush(const Handle& h) { return h.o_.flush; }
  static MPI_Win win(const Handle& h) {
    MPI_Win w;
    std::memcpy(&w, &h.o_.win, sizeof(MPI_Win));
    return w;
  }
  static int target(const Handle& h) { return h.o_.target; }
  static std::int32_t& slot(Handle& h) { return h.o_.slot; }
  static std::int32_t& reg(Handle& h) { return h.o_.reg; }
  static std::uint64_t& staged(Handle& h) { return h.o_.staged; }
  static std::uint64_t& staged_bytes(Handle& h) { return h.o_.staged_bytes; }
  static std::uint32_t& esize(Handle& h) { return h.o_.esize; }
  static void*& unpack(Handle& h) { return h.o_.unpack; }
  static Layout& unpack_layout(Handle& h) { return h.o_.unpack_layout; }
};
namespace detail {

// Work a higher layer adds to the server loop (comm's aggregate applier,
// comm.aggregate.applier: progress): polled with the rings, stopped when
// the applications have finished.
class ServerService {
 public:
  // A unit's part of a world-team segment on this node and its size in
  // bytes; null when it is not on this node.
  using Lookup = std::function<char*(int segment, int unit, std::size_t* bytes)>;
  virtual ~ServerService() = default;
  // Does what has arrived; how many items.
  virtual std::size_t poll() = 0;
  // At the end (every origin has flushed).
  virtual void stop() = 0;
};
// Makes a server's service on the engine's communicator of all ranks
// (aggregate_comm) with the engine's segment lookup.
using ServiceFactory =
    std::function<std::unique_ptr<ServerService>(MPI_Comm comm, ServerService::Lookup lookup)>;

class ProgressEngine {
 public:
  // Collective over all ranks of the layout (apps and servers): maps the
  // node's bootstrap memory and creates the world team's dynamic window
  // over full_comm (opened with lock_all).
  // `service`: what servers run besides the rings (null: nothing).
  ProgressEngine(const ProgressLayout& layout, const ProgressSettings& settings,
                 const ServiceFactory& service = nullptr);
  ~ProgressEngine();

  const ProgressLayout& layout() const { return layout_; }
  const ProgressSettings& settings() const { return settings_; }
  MPI_Win window() const { return win_; }
  // All ranks, apps first in unit order, then the servers: aggregated
  // batches for the servers to apply, their replies and acknowledgements.
  MPI_Comm aggregate_comm() const { return agg_comm_; }

  // ---- application side
  // Sends a control event to every server of my node (my node's first unit only).
  void notify_servers(Control kind, int team, int segment);
  // Submits an offloaded transfer; false when it cannot be offloaded (no
  // free completion slot, staging full): the caller takes the direct path.
  // `origin` is the origin buffer, `local` its layout.
  bool submit(CommandKind kind, void* origin, const Layout& local, int team, int segment, int target,
              std::uint64_t target_offset, const Layout& remote, std::size_t esize, bool same_node,
              Handle& h);
  bool test(Handle& h);
  void wait(Handle& h);
  // Waits until every command this unit submitted has been executed.
  void quiesce();
  // After the world team released its segments: tells the servers to stop
  // and frees the window and the bootstrap memory (collective).
  void shutdown_app();
  // Commands this unit has handed to its server.
  std::uint64_t submitted() const { return next_head_; }
  // The rank in full_comm (= in a served segment's own window) of the main
  // progress process of world-team unit `unit` (round-robin on its node).
  int ghost_of(int unit) const;
  // World ranks (in the original communicator) of the servers.
  const std::vector<int>& server_ranks() const { return layout_.server_ranks; }
  // Which server (rank in the original communicator) serves me.
  int my_server_rank() const;

  // ---- server side
  // Redirection on at the start (comm.async not off); later changes come
  // as Control::async events.
  void set_redirect(bool on) { redirect_ = on; }
  // Runs until the application shuts down; returns 0.
  int serve();

 private:
  struct ServerSegment {
    MPI_Win shm = MPI_WIN_NULL;
    MPI_Win own = MPI_WIN_NULL;  // the segment's own window (comm.window: segment)
    MPI_Win rma = MPI_WIN_NULL;  // own, or the dynamic window
    std::vector<char*> peer;     // app unit -> address if on my node
    std::vector<MPI_Aint> disp;  // app unit -> displacement in rma
    std::vector<std::size_t> bytes;
  };
  // A transfer the server started: gets complete with their request,
  // puts (and requestless pieces) by a flush of their target.
  struct Pending {
    UnitArea* unit;
    std::uint32_t slot;
    MPI_Win win;
    int target;
    MPI_Request req;  // MPI_REQUEST_NULL: waits for a flush
    bool flush;       // needs a flush once its request is done
  };

  UnitArea* unit_area(int node_app) const { return units_[static_cast<std::size_t>(node_app)]; }
  char* staging(UnitArea* a) const { return reinterpret_cast<char*>(a) + sizeof(UnitArea); }
  void push(const Command& c);
  void release(Handle& h);
  bool finish(Handle& h);  // true when done (copies staged data out)
  void poke();             // drives MPI progress while waiting

  // server
  void control(bool& running);
  std::size_t drain(int node_app, std::vector<Pending>& pending);
  void execute(int node_app, const Command& c, std::vector<Pending>& pending);
  void fail(UnitArea* a, std::uint32_t slot, const std::string& what);
  // Tests the requests; flushes the targets of finished puts when `force`
  // (idle, an origin waits, or a full batch). Returns true if any finished.
  bool progress(std::vector<Pending>& pending, bool force);
  void flush_pending(std::vector<Pending>& pending);  // completes everything
  void idle(unsigned& idle_passes);
  bool has_work(ServerArea* me) const;
  void wake(ServerArea* s);
  void server_alloc(int segment);
  void server_free(int segment);

  ProgressLayout layout_;
  ProgressSettings settings_;
  MPI_Win boot_ = MPI_WIN_NULL;        // bootstrap shared memory on node_full
  MPI_Win win_ = MPI_WIN_NULL;         // the world team's dynamic window (full_comm)
  MPI_Comm agg_comm_ = MPI_COMM_NULL;  // a dup of full_comm (aggregate_comm)
  std::vector<UnitArea*> units_;       // node app index -> area
  std::vector<ServerArea*> servers_;   // node server index -> mailbox
  std::size_t area_bytes_ = 0;

  // application side; app_mutex_ makes submit/test/wait/quiesce safe for
  // several threads of the unit (the ring has one producer: the unit).
  std::recursive_mutex app_mutex_;
  int node_app_ = -1;  // my index among my node's apps
  std::vector<std::uint32_t> free_slots_;
  std::size_t staged_used_ = 0;
  int staged_live_ = 0;
  std::uint64_t next_head_ = 0;

  // server side
  int node_server_ = -1;
  std::vector<int> my_units_;    // node app indices I serve
  std::vector<int> node_units_;  // node app index -> world-team unit
  double idle_since_ = 0.0;
  std::uint64_t seen_seq_ = 0;
  std::map<int, ServerSegment> segs_;       // world-team segment id -> table
  bool redirect_ = false;                   // redirection on: poll MPI when idle
  std::unique_ptr<ServerService> applier_;  // comm.aggregate.applier: progress
};

}  // namespace detail
}  // namespace locus
