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
// Records are 32 bytes: an update (accumulate with an op), a fetch (the
// same, the old value returned), a compare-and-swap, a get of one element
// of up to 8 bytes (index-gather), and a reply. Replies come back in the
// order the requests were made (each origin-destination stream is applied
// in order), so an origin matches them with a FIFO of destinations.
//
// Mailbox segment, unit X's part: acks[P] (acks[d]: X's batches unit d has
// applied), then for each source s, `slots` slots of {seq, count,
// records[cap]}.
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
#include "segment_table.hpp"
#include "transfer.hpp"

namespace locus::detail {

enum class RecordKind : std::uint8_t { update = 1, fetch = 2, cas = 3, get = 4, reply = 5 };

struct Record {
  std::uint8_t kind = 0, type = 0, op = 0, size = 0;
  std::int32_t segment = 0;
  std::uint64_t offset = 0;  // bytes into the destination's part
  std::uint64_t a = 0;       // operand, compare value or reply value (bits)
  std::uint64_t b = 0;       // compare-and-swap: the new value
};
static_assert(sizeof(Record) == 32);

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

// Applies request R (update, fetch, compare-and-swap or get) at ADDR; a
// request with an answer writes it into *reply and returns true.
bool apply_request(const Record& r, char* addr, Record* reply);

// The progress process's side of comm.aggregate.applier: progress: keeps
// receives posted on `comm` (every rank: the apps first, in unit order,
// then the servers), applies each batch in arrival order, answers.
class ServerApplier {
 public:
  // Unit `unit`'s part of world-team segment `segment` on this node and its
  // size in bytes; null when it is not on this node.
  using Lookup = std::function<char*(int segment, int unit, std::size_t* bytes)>;
  ServerApplier(MPI_Comm comm, const AggregateSettings& s, Lookup lookup);
  ServerApplier(const ServerApplier&) = delete;
  ServerApplier& operator=(const ServerApplier&) = delete;
  // Applies the batches that have arrived; how many.
  std::size_t poll();
  // At the end (every origin has flushed): withdraws the receives and
  // completes the sends.
  void stop();
  std::uint64_t batches() const { return batches_; }

 private:
  void apply(int origin, const BatchHeader& h, const Record* recs);
  char* send_buffer(std::size_t bytes, MPI_Request** req);
  MPI_Comm comm_;
  std::size_t cap_, slot_bytes_;
  Lookup lookup_;
  std::vector<std::vector<char>> recv_buf_;
  std::vector<MPI_Request> recv_req_;
  std::size_t recv_head_ = 0;
  std::deque<std::pair<std::vector<char>, MPI_Request>> sends_;  // grows when every buffer is in flight
  std::map<std::pair<int, int>, std::uint64_t> applied_;         // (origin, unit) -> batches
  std::vector<Record> replies_;
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
  void update(const Target& t, const void* value, MPI_Datatype type, Op op);
  void get(void* dst, const Target& t, std::size_t bytes);
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
  struct Out {
    std::vector<Record> recs;  // buffered, from `head` on
    std::size_t head = 0;
    std::uint64_t sent = 0;  // batches sent
    bool urgent = false;     // holds replies or requests someone waits for
    struct Pending {
      void* dst;
      std::uint32_t size;
    };
    std::deque<Pending> replies;  // where the replies from this unit go, in order
    std::uint64_t asked = 0, answered = 0;
    std::uint64_t ack_asked = 0;
    std::size_t next_try = 0;  // buffered records at which push tries to send again  // message transport:
                               // `sent` when a batch last asked for an acknowledgement
    std::size_t buffered() const { return recs.size() - head; }
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

  void push(int dest, const Record& r);
  void ask_and_wait(int unit, const Record& r, void* result, std::uint32_t size);
  bool try_send(int dest);
  void drain();
  void apply_batch(int source, const Record* recs, std::size_t count);
  void take_reply(int source, const Record& r);
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
  std::vector<std::uint64_t> applied_;     // source -> batches applied
  std::vector<std::uint64_t> ack_values_;  // put: source -> applied count written back
  std::vector<Ack> ack_out_;               // message: source -> acknowledgement being sent
  std::vector<char> staging_;
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
  std::vector<std::vector<char>> send_buf_;  // the send pool
  std::vector<MPI_Request> send_req_;        // likewise
  std::size_t send_next_ = 0;                // where to look for a free buffer first
  std::vector<std::uint64_t> acked_;         // dest -> batches it has applied (from its messages)
  Ack ack_in_;
  MPI_Request ack_req_ = MPI_REQUEST_NULL;
  std::vector<MPI_Request> ack_send_req_;  // source -> the last acknowledgement sent
  void post_receive(std::size_t i);
  void drain_messages();
  int free_send_buffer();
  void send_message(int dest, Out& o, std::size_t n, int k);
  void put_batch(int dest, Out& o, std::size_t n);
  static constexpr std::uint64_t kPollEvery = 64;  // records pushed between looks at the mailboxes
  std::uint64_t pushes_ = 0;
  bool flushing_ = false;   // message transport: a flush is sending
  bool want_acks_ = false;  // message transport: the next drain takes in acknowledgements
  std::uint64_t batches_sent_ = 0, records_sent_ = 0;
};

// Makes the team's aggregator if it has none (collective over the team).
void ensure_aggregator(Team& team);

}  // namespace locus::detail
