#pragma once
// Internal: aggregation of fine-grained operations to other nodes.
//
// The design follows Bale's conveyors and HPCC MPIRandomAccess's buckets,
// one-sided: a unit keeps one buffer of records per destination unit on
// another node; a full buffer (or a flush) travels as one MPI_Put into the
// destination's mailbox, followed by its sequence number (an MPI
// accumulate, after a flush, so the number never arrives before the
// records). The destination applies the records at its progress points
// (every locus call that waits, and progress(team)) with CPU atomics on
// its node's shared memory -- the mechanism same-node origins use
// directly -- so every atomic on the segment is atomic with the others.
// It then writes the count of batches it applied back into the origin's
// acknowledgement word, which frees the slot (credits: comm.aggregate.slots
// batches in flight per pair).
//
// With comm.aggregate.transport: message (the default) a batch is one
// MPI_Isend instead, matched by receives the destination keeps posted on
// the aggregator's own communicator (processed in posting order, so each
// stream stays in order). No credits: a send buffer of the pool is reused
// once its send completed, so MPI's own flow control bounds what is in
// flight, as HPCC MPIRandomAccess reuses its buckets. Only a flush needs to
// know what was applied: its batches (an empty one if everything left
// before) ask for an acknowledgement, which goes back as a 16-byte message
// (Ack: the stream's unit, the count of its batches applied).
//
// comm.aggregate.applier: progress (message transport, a team served by
// progress processes): a batch for unit u goes to u's progress process
// instead (ServerApplier, on a communicator of all ranks that the engine
// makes at start), which applies it with CPU atomics on the node's shared
// memory and sends the replies and acknowledgements back, so that u
// itself never has to enter locus. A batch's header names the unit it is
// for (and a reply batch the unit it answers for), so the origin keeps
// one stream per destination unit either way.
//
// A batch is a header and runs. A run is `count` records of one kind on
// one segment (updates and fetches: of one element type and op; gets: of
// one size) after a 16-byte RunHeader; a record carries only what differs
// between them, 8-byte fields: update and fetch {offset, operand},
// compare-and-swap {offset, compare, new}, get {offset}, reply {value}. So
// GUPS's updates travel as 16 bytes each, index-gather's requests and
// replies as 8 (HPCC's buckets and an alltoallv carry 8). Records are
// written straight into the batch that will be sent (a message batch is
// handed to MPI_Isend as it is, no copy). Replies come back in the order
// the requests were made (each origin-destination stream is applied in
// order), so an origin matches them with a FIFO of destinations.
//
// Mailbox segment, unit X's part: acks[P] (acks[d]: X's batches unit d has
// applied), then for each source s, `slots` slots of {seq, count, runs
// (room for `records` records)}.
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "locus/rma.hpp"
#include "locus/settings.hpp"
#include "locus/team.hpp"
#include "locus/wait.hpp"
#include "mem/segment_table.hpp"
#include "progress/progress_engine.hpp"
#include "xfer/transfer.hpp"

namespace locus::detail {

enum class RecordKind : std::uint8_t { update = 1, fetch = 2, cas = 3, get = 4, reply = 5 };

// A run's header; its first 8 bytes are the key that a record must match
// to join the run.
struct RunHeader {
  std::uint8_t kind = 0, type = 0, op = 0, size = 0;
  std::int32_t segment = 0;
  std::uint32_t count = 0, reserved = 0;
};
static_assert(sizeof(RunHeader) == 16);

// Bytes of one record of `kind` after its run header (0: not a kind).
constexpr std::size_t record_bytes(std::uint8_t kind) {
  switch (static_cast<RecordKind>(kind)) {
    case RecordKind::update:
    case RecordKind::fetch:
      return 16;
    case RecordKind::cas:
      return 24;
    case RecordKind::get:
    case RecordKind::reply:
      return 8;
  }
  return 0;
}
// The most a record can take in a batch (a run of its own).
constexpr std::size_t kMaxRecordBytes = sizeof(RunHeader) + 24;

// A message batch's header: its records, the stream's unit (the
// destination of requests; for replies from a progress process, the unit
// they answer for), whether the receiver should acknowledge.
struct BatchHeader {
  std::uint32_t count = 0;
  std::int32_t unit = 0;
  std::uint64_t ask = 0;
};
static_assert(sizeof(BatchHeader) == 16);

// An acknowledgement: the stream's unit and the batches applied on it.
struct Ack {
  std::uint64_t unit = 0, applied = 0;
};

// The progress process's side of comm.aggregate.applier: progress: keeps
// receives posted on `comm` (every rank: the apps first, in unit order,
// then the servers), applies each batch in arrival order, answers.
class ServerApplier : public ServerService {
 public:
  ServerApplier(MPI_Comm comm, const AggregateSettings& s, Lookup lookup);
  ServerApplier(const ServerApplier&) = delete;
  ServerApplier& operator=(const ServerApplier&) = delete;
  // Applies the batches that have arrived; how many.
  std::size_t poll() override;
  // At the end (every origin has flushed): withdraws the receives and
  // completes the sends.
  void stop() override;
  std::uint64_t batches() const { return batches_; }

 private:
  void apply(int origin, const BatchHeader& h, const char* body, const char* end);
  char* send_buffer(std::size_t bytes, MPI_Request** req);
  MPI_Comm comm_;
  std::size_t cap_, slot_bytes_;
  Lookup lookup_;
  std::vector<std::vector<char>> recv_buf_;
  std::vector<MPI_Request> recv_req_;
  std::size_t recv_head_ = 0;
  std::deque<std::pair<std::vector<char>, MPI_Request>> sends_;  // grows when every buffer is in flight
  std::map<std::pair<int, int>, std::uint64_t> applied_;         // (origin, unit) -> batches
  std::vector<std::uint64_t> replies_;
  std::uint64_t batches_ = 0;
  bool stopped_ = false;
};

class Aggregator {
 public:
  // Collective over the team: allocates the mailboxes.
  Aggregator(Team& team, const AggregateSettings& s);
  ~Aggregator();
  // Collective, before the team's segments go: completes every batch,
  // then stops receiving.
  void shutdown();
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  // Non-blocking: complete at flush.
  void update(const Target& t, const void* value, MPI_Datatype type, Op op) {
    update(t.unit, t.seg->id, t.offset, value, type, op);
  }
  void get(void* dst, const Target& t, std::size_t bytes) { get(dst, t.unit, t.seg->id, t.offset, bytes); }
  // The same on a segment id (of this team), unit and offset in bounds.
  void update(int unit, int segment, std::uint64_t offset, const void* value, MPI_Datatype type, Op op);
  void get(void* dst, int unit, int segment, std::uint64_t offset, std::size_t bytes);
  // gather_nbi's bulk path: every index in the table (checked), every
  // unit's part holding it; peer[u] is unit u's part when on my node.
  void gather(char* dst, int segment, std::uint64_t offset, std::size_t esize, std::size_t per_unit,
              const std::uint64_t* index, std::size_t n, char* const* peer);
  // update_nbi's bulk path, the same way: values[k] (of `type`) applied
  // with op to element index[k].
  void update_many(const char* values, MPI_Datatype type, Op op, int segment, std::uint64_t offset,
                   std::size_t per_unit, const std::uint64_t* index, std::size_t n, char* const* peer);
  // Blocking: the old value.
  void fetch(const Target& t, const void* operand, void* result, MPI_Datatype type, Op op);
  void compare_and_swap(const Target& t, const void* compare, const void* value, void* result,
                        MPI_Datatype type);
  // Sends what is buffered for `unit` (-1: every unit) and waits until the
  // destination has applied it and every reply has arrived.
  void flush(int unit);
  // Applies incoming batches, takes in replies, sends urgent buffers.
  void progress();
  // A barrier that keeps applying batches while it waits.
  void barrier();

  std::uint64_t batches_sent() const { return batches_sent_; }
  std::uint64_t records_sent() const { return records_sent_; }

 private:
  // A batch being filled: room for the header, then runs. Its buffer holds
  // `cap_` records of any kinds (slot_bytes_).
  struct Batch {
    std::vector<char> bytes;
    std::size_t used = 0;          // bytes written, the header's included
    std::size_t open_run = 0;      // offset of the run records join (0: none)
    std::uint64_t open_key = 0;    // its key (a RunHeader's first 8 bytes)
    std::uint32_t open_count = 0;  // its records, written into its header by seal()
    std::uint32_t records = 0;
  };
  struct Out {
    std::deque<Batch> batches;  // the oldest first; records join the last
    std::size_t buffered = 0;   // records in them
    std::uint64_t sent = 0;     // batches sent
    bool urgent = false;        // holds replies or requests someone waits for
    struct Pending {
      void* dst;
      std::uint32_t size;
    };
    // Where the replies from this unit go: request t (counted from 0) in
    // replies[t % size], a ring of a power-of-two size holding the requests
    // from `answered` to `asked`.
    std::vector<Pending> replies;
    std::uint64_t asked = 0, answered = 0;
    std::uint64_t ack_asked = 0;  // message transport: `sent` when a batch last asked for an acknowledgement
    std::size_t next_try = 0;     // buffered records at which push tries to send again
  };
  class Lock {
   public:
    explicit Lock(std::atomic<bool>& f) : f_(f) {
      while (f_.exchange(true, std::memory_order_acquire)) {
        unsigned spins = 0;
        while (f_.load(std::memory_order_relaxed)) relax(spins);
      }
    }
    ~Lock() { f_.store(false, std::memory_order_release); }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    std::atomic<bool>& f_;
  };

  // Room for one record of run `key` in dest's last batch (a new batch
  // when it is full, a new run when the key differs): where to write it.
  char* append(Out& o, const RunHeader& key);
  // Appends n records with run key `key`, fill(i, record) writing record
  // i < n, over as many batches as they need.
  template <class Fill>
  void append_records(Out& o, const RunHeader& key, std::size_t n, Fill&& fill);
  // Room in the reply ring for n more requests.
  void reserve_replies(Out& o, std::size_t n);
  // Writes the open run's count into its header (before the batch goes).
  static void seal(Batch& b);
  Batch new_batch();
  void recycle(Batch& b);
  // After a record for dest was appended: polls, sends full batches.
  void pushed(int dest, std::size_t count = 1);
  void expect_reply(Out& o, void* dst, std::uint32_t size);
  void ask_and_wait(int unit, const RunHeader& key, const std::uint64_t* fields, void* result,
                    std::uint32_t size);
  bool try_send(int dest);
  void drain();
  void apply_batch(int source, const char* body, const char* end, std::size_t records);
  void take_replies(int source, const char* p, std::uint32_t count);
  std::uint64_t acked(int dest) const;
  std::size_t slot_offset(int source, std::uint64_t slot) const;
  bool quiet(int dest) const;

  Team& team_;
  int me_ = 0, units_ = 0;
  std::size_t cap_ = 0;
  int slots_ = 0;
  std::size_t slot_bytes_ = 0, acks_bytes_ = 0;
  int mailbox_ = 0;  // segment id
  SegmentInfo* box_ = nullptr;
  std::vector<Out> out_;
  std::vector<std::vector<char>> spare_;   // batch buffers to reuse
  std::vector<std::uint64_t> answers_;     // a batch's replies, appended at once
  std::vector<std::uint64_t> applied_;     // source -> batches applied
  std::vector<std::uint64_t> ack_values_;  // put: source -> applied count written back
  std::vector<Ack> ack_out_;               // message: source -> acknowledgement being sent
  std::atomic<bool> lock_{false};
  bool draining_ = false;
  // message transport
  bool message_ = false;
  bool stopped_ = false;
  bool by_server_ = false;         // comm.aggregate.applier: progress
  MPI_Comm comm_ = MPI_COMM_NULL;  // own (a dup of the team's), or the engine's (by_server_)
  std::vector<int> rank_of_;       // destination unit -> rank in comm_ that applies its batches
  std::vector<std::vector<char>> recv_buf_;
  std::vector<MPI_Request> recv_req_;
  std::size_t recv_head_ = 0;                // the oldest posted receive
  std::vector<std::vector<char>> send_buf_;  // the batches in flight (the send pool)
  std::vector<MPI_Request> send_req_;        // likewise
  std::size_t send_next_ = 0;                // where to look for a free buffer first
  std::vector<std::uint64_t> acked_;         // dest -> batches it has applied (from its messages)
  Ack ack_in_;
  MPI_Request ack_req_ = MPI_REQUEST_NULL;
  std::vector<MPI_Request> ack_send_req_;  // source -> the last acknowledgement sent
  void post_receive(std::size_t i);
  void drain_messages();
  int free_send_buffer();
  void send_message(int dest, Batch& b, int k);
  void put_batch(int dest, Batch& b, std::uint64_t slot);
  static constexpr std::uint64_t kPollEvery = 64;  // records pushed between looks at the mailboxes
  std::uint64_t pushes_ = 0;
  bool flushing_ = false;   // message transport: a flush is sending
  bool want_acks_ = false;  // message transport: the next drain takes in acknowledgements
  std::uint64_t batches_sent_ = 0, records_sent_ = 0;
};

}  // namespace locus::detail
