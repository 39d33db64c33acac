#include "aggregate.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "locus/app.hpp"
#include "locus/segment.hpp"
#include "locus/wait.hpp"
#include "progress_engine.hpp"
#include "runtime_state.hpp"

namespace locus::detail {

namespace {

constexpr std::size_t kHeader = 16;  // seq, count (put); BatchHeader (message)
constexpr int kBatchTag = 1, kAckTag = 2;

std::uint8_t type_code(MPI_Datatype t) {
  if (t == MPI_INT32_T) return 1;
  if (t == MPI_INT64_T) return 2;
  if (t == MPI_UINT64_T) return 3;
  if (t == MPI_FLOAT) return 4;
  if (t == MPI_DOUBLE) return 5;
  throw Error("aggregated atomics: unsupported element type");
}

std::uint8_t type_size(std::uint8_t code) {
  return code == 1 || code == 4 ? 4 : 8;
}

template <class F>
void with_type(std::uint8_t code, F&& f) {
  switch (code) {
    case 1:
      f(std::int32_t{});
      break;
    case 2:
      f(std::int64_t{});
      break;
    case 3:
      f(std::uint64_t{});
      break;
    case 4:
      f(float{});
      break;
    default:
      f(double{});
      break;
  }
}

}  // namespace

Aggregator::Aggregator(Team& team, const AggregateSettings& s)
    : team_(team), me_(team.rank()), units_(team.size()), cap_(s.records), slots_(s.slots) {
  slot_bytes_ = kHeader + cap_ * sizeof(Record);
  acks_bytes_ = static_cast<std::size_t>(units_) * sizeof(std::uint64_t);
  const std::size_t bytes =
      acks_bytes_ + static_cast<std::size_t>(units_) * static_cast<std::size_t>(slots_) * slot_bytes_;
  // Only the put transport uses the mailboxes.
  const bool message = s.transport == AggregateTransport::message;
  mailbox_ = allocate_segment(team, message ? 0 : bytes, 1, AsyncHint::never, AtomicMode::mpi);
  box_ = &segment(team.id(), mailbox_);
  if (!message) std::memset(box_->base, 0, bytes);
  out_.resize(static_cast<std::size_t>(units_));
  applied_.assign(static_cast<std::size_t>(units_), 0);
  ack_values_.assign(static_cast<std::size_t>(units_), 0);
  message_ = message;
  if (!message_) staging_.resize(slot_bytes_);
  // The progress processes apply the batches of a team they serve (the
  // world team: its units are the engine's application units, in order).
  ProgressEngine* engine = progress_engine();
  by_server_ = message && s.applier == AggregateApplier::progress && team.served() && engine;
  rank_of_.resize(static_cast<std::size_t>(units_));
  for (int d = 0; d < units_; ++d)
    rank_of_[static_cast<std::size_t>(d)] = by_server_ ? engine->ghost_of(d) : d;
  if (message_) {
    if (by_server_)
      comm_ = engine->aggregate_comm();
    else
      MPI_Comm_dup(team.comm(), &comm_);
    const std::size_t posted = static_cast<std::size_t>(std::max(4, 2 * slots_));
    recv_buf_.assign(posted, std::vector<char>(slot_bytes_));
    recv_req_.assign(posted, MPI_REQUEST_NULL);
    for (std::size_t i = 0; i < posted; ++i) post_receive(i);
    // A pool of send buffers shared by all destinations (memory does not
    // grow with the unit count); the credits bound each destination.
    const std::size_t pool = static_cast<std::size_t>(std::max(8, 2 * slots_));
    send_buf_.assign(pool, std::vector<char>(slot_bytes_));
    send_req_.assign(pool, MPI_REQUEST_NULL);
    acked_.assign(static_cast<std::size_t>(units_), 0);
    ack_send_req_.assign(static_cast<std::size_t>(units_), MPI_REQUEST_NULL);
    ack_out_.assign(static_cast<std::size_t>(units_), Ack{});
    MPI_Irecv(&ack_in_, 2, MPI_UINT64_T, MPI_ANY_SOURCE, kAckTag, comm_, &ack_req_);
  }
  if (box_->rma != MPI_WIN_NULL) MPI_Win_sync(box_->rma);
  barrier_yielding(team.comm());  // every mailbox is zero (every receive posted) before anyone sends
}

Aggregator::~Aggregator() {
  if (!stopped_ && collective_cleanup_allowed() && !std::uncaught_exceptions()) {
    try {
      shutdown();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "locus: closing the aggregation buffers failed: %s\n", e.what());
    }
  }
}

void Aggregator::shutdown() {
  if (stopped_) return;
  barrier();  // every batch of every unit applied
  stopped_ = true;
  if (!message_) return;
  for (MPI_Request& r : recv_req_) {
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  MPI_Cancel(&ack_req_);
  MPI_Wait(&ack_req_, MPI_STATUS_IGNORE);
  // Every batch was acknowledged, so every send was received; an
  // acknowledgement of ours may not have been (its receiver has left).
  for (MPI_Request& r : send_req_)
    if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
  for (MPI_Request& r : ack_send_req_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  if (by_server_) return;  // the engine's communicator: it frees it
  MPI_Barrier(comm_);
  MPI_Comm_free(&comm_);
}

void Aggregator::post_receive(std::size_t i) {
  MPI_Irecv(recv_buf_[i].data(), static_cast<int>(slot_bytes_), MPI_BYTE, MPI_ANY_SOURCE, kBatchTag, comm_,
            &recv_req_[i]);
}

std::size_t Aggregator::slot_offset(int source, std::uint64_t slot) const {
  return acks_bytes_ +
         (static_cast<std::size_t>(source) * static_cast<std::size_t>(slots_) + slot) * slot_bytes_;
}

std::uint64_t Aggregator::acked(int dest) const {
  if (message_) return acked_[static_cast<std::size_t>(dest)];
  const auto* acks = reinterpret_cast<const std::uint64_t*>(box_->base);
  return __atomic_load_n(&acks[dest], __ATOMIC_ACQUIRE);
}

bool Aggregator::quiet(int dest) const {
  const Out& o = out_[static_cast<std::size_t>(dest)];
  return o.buffered() == 0 && acked(dest) == o.sent && o.answered == o.asked;
}

void Aggregator::push(int dest, const Record& r) {
  Out& o = out_[static_cast<std::size_t>(dest)];
  o.recs.push_back(r);
  // Apply what others sent every so often (as HPCC's bucketed code tests
  // its receive every 16 updates): a destination that only sends would
  // otherwise hold its origins' credits until its own buffers fill.
  if (++pushes_ % kPollEvery == 0 && !draining_) drain();
  // A full batch goes at once; when it cannot (every send buffer in
  // flight), the next try comes kPollEvery records later, not at every push.
  if (o.buffered() < std::max(cap_, o.next_try)) return;
  if (try_send(dest)) {
    o.next_try = 0;
    return;
  }
  o.next_try = o.buffered() + kPollEvery;
  if (o.buffered() < cap_ * static_cast<std::size_t>(slots_ + 2) || draining_) return;
  // Far ahead of the destination: apply what comes in (it may be waiting
  // for us) until a slot frees.
  for (unsigned spins = 0; o.buffered() >= cap_ * static_cast<std::size_t>(slots_ + 2);) {
    drain();
    if (!try_send(dest)) relax_with_progress(spins, team_.comm());
  }
}

// Sends one batch to dest if it has records and a free slot.
bool Aggregator::try_send(int dest) {
  Out& o = out_[static_cast<std::size_t>(dest)];
  if (o.buffered() == 0) return false;
  const std::size_t n = std::min(cap_, o.buffered());
  if (message_) {
    // No credits: MPI's own flow control bounds what is in flight (a pool
    // buffer is reused once its send completed, as HPCC reuses a bucket).
    const int k = free_send_buffer();
    if (k < 0) return false;  // every buffer of the pool still in flight
    send_message(dest, o, n, k);
  } else {
    if (o.sent - acked(dest) >= static_cast<std::uint64_t>(slots_)) return false;  // the mailbox is full
    put_batch(dest, o, n);
  }
  ++o.sent;
  ++batches_sent_;
  records_sent_ += n;
  o.head += n;
  if (o.head == o.recs.size()) {
    o.recs.clear();
    o.head = 0;
  } else if (o.head > o.recs.size() / 2) {
    o.recs.erase(o.recs.begin(), o.recs.begin() + static_cast<std::ptrdiff_t>(o.head));
    o.head = 0;
  }
  if (o.buffered() == 0) o.urgent = false;
  return true;
}

// A free buffer of the send pool (its last send complete), or -1.
int Aggregator::free_send_buffer() {
  // An unused one first (no MPI call), else one MPI_Testany over the pool.
  for (std::size_t i = 0; i < send_req_.size(); ++i) {
    const std::size_t k = (send_next_ + i) % send_req_.size();
    if (send_req_[k] == MPI_REQUEST_NULL) {
      send_next_ = (k + 1) % send_req_.size();
      return static_cast<int>(k);
    }
  }
  int index = MPI_UNDEFINED, done = 0;
  MPI_Testany(static_cast<int>(send_req_.size()), send_req_.data(), &index, &done, MPI_STATUS_IGNORE);
  return done && index != MPI_UNDEFINED ? index : -1;
}

void Aggregator::send_message(int dest, Out& o, std::size_t n, int k) {
  std::vector<char>& buf = send_buf_[static_cast<std::size_t>(k)];
  const BatchHeader h{static_cast<std::uint32_t>(n), dest, flushing_ ? 1u : 0u};
  std::memcpy(buf.data(), &h, kHeader);
  std::memcpy(buf.data() + kHeader, o.recs.data() + o.head, n * sizeof(Record));
  MPI_Isend(buf.data(), static_cast<int>(kHeader + n * sizeof(Record)), MPI_BYTE,
            rank_of_[static_cast<std::size_t>(dest)], kBatchTag, comm_,
            &send_req_[static_cast<std::size_t>(k)]);
}

void Aggregator::put_batch(int dest, Out& o, std::size_t n) {
  const std::uint64_t count = n;
  std::memcpy(staging_.data() + 8, &count, 8);
  std::memcpy(staging_.data() + kHeader, o.recs.data() + o.head, n * sizeof(Record));
  const std::uint64_t slot = o.sent % static_cast<std::uint64_t>(slots_);
  const MPI_Aint disp =
      box_->disp[static_cast<std::size_t>(dest)] + static_cast<MPI_Aint>(slot_offset(me_, slot));
  MPI_Win win = box_->rma;
  MPI_Put(staging_.data() + 8, static_cast<int>(8 + n * sizeof(Record)), MPI_BYTE, dest, disp + 8,
          static_cast<int>(8 + n * sizeof(Record)), MPI_BYTE, win);
  MPI_Win_flush(dest, win);  // the records are there before their number
  const std::uint64_t seq = o.sent + 1;
  MPI_Accumulate(&seq, 1, MPI_UINT64_T, dest, disp, 1, MPI_UINT64_T, MPI_REPLACE, win);
  MPI_Win_flush_local(dest, win);
}

namespace {
// Walks a batch in order: where(r) is record r's target address (null for
// a reply), resolved once per record. The records' targets are random
// words in general (GUPS, index-gather): each one's line is prefetched
// kAhead records before its atomic (its address kept in a ring until
// then), so that the cache misses overlap instead of waiting one by one
// behind each locked instruction.
template <class Where, class Apply>
void walk_batch(const Record* recs, std::size_t count, Where&& where, Apply&& apply) {
  constexpr std::size_t kAhead = 16;
  char* ring[kAhead];
  auto prefetch = [&](const Record& r) {
    char* addr = where(r);
    if (!addr) return addr;
    if (static_cast<RecordKind>(r.kind) == RecordKind::get)
      __builtin_prefetch(addr, 0, 3);
    else
      __builtin_prefetch(addr, 1, 3);
    return addr;
  };
  for (std::size_t i = 0; i < std::min(kAhead, count); ++i) ring[i] = prefetch(recs[i]);
  for (std::size_t i = 0; i < count; ++i) {
    char* addr = ring[i % kAhead];
    if (i + kAhead < count) ring[i % kAhead] = prefetch(recs[i + kAhead]);
    apply(recs[i], addr);
  }
}

std::string record_error(int source, const Record& r, const std::string& what) {
  return "aggregated operation from unit " + std::to_string(source) + " on segment " +
         std::to_string(r.segment) + ": " + what;
}
}  // namespace

// A batch from `source`, in order: requests to my part, replies to mine.
void Aggregator::apply_batch(int source, const Record* recs, std::size_t count) {
  const int team = team_.id();
  int cached_id = -1;
  char* cached_base = nullptr;
  auto where = [&](const Record& r) -> char* {
    if (static_cast<RecordKind>(r.kind) == RecordKind::reply) return nullptr;
    if (r.segment != cached_id) {
      const SegmentInfo* seg = state().segments.find(team, r.segment);
      if (!seg) throw Error(record_error(source, r, "not allocated here (freed before a flush?)"));
      cached_id = r.segment;
      cached_base = seg->base;
    }
    return cached_base + r.offset;
  };
  walk_batch(recs, count, where, [&](const Record& r, char* addr) {
    if (!addr) return take_reply(source, r);
    Record reply;
    if (!apply_request(r, addr, &reply)) return;
    Out& back = out_[static_cast<std::size_t>(source)];
    back.recs.push_back(reply);
    back.urgent = true;
  });
}

// The answer to my oldest open request to `source`.
void Aggregator::take_reply(int source, const Record& r) {
  Out& o = out_[static_cast<std::size_t>(source)];
  if (o.replies.empty())
    throw Error("aggregated operations: a reply for unit " + std::to_string(source) +
                " that nobody asked for");
  const Out::Pending p = o.replies.front();
  o.replies.pop_front();
  std::memcpy(p.dst, &r.a, p.size);
  ++o.answered;
}

bool apply_request(const Record& r, char* addr, Record* reply) {
  const auto kind = static_cast<RecordKind>(r.kind);
  *reply = Record{};
  reply->kind = static_cast<std::uint8_t>(RecordKind::reply);
  switch (kind) {
    case RecordKind::update:
      with_type(r.type, [&](auto zero) {
        using T = decltype(zero);
        T v;
        std::memcpy(&v, &r.a, sizeof v);
        // relaxed: the flush that completes it at the origin synchronises
        cpu_apply(reinterpret_cast<T*>(addr), v, static_cast<Op>(r.op), std::memory_order_relaxed);
      });
      return false;
    case RecordKind::fetch:
      with_type(r.type, [&](auto zero) {
        using T = decltype(zero);
        T v;
        std::memcpy(&v, &r.a, sizeof v);
        const T old = cpu_apply(reinterpret_cast<T*>(addr), v, static_cast<Op>(r.op));
        std::memcpy(&reply->a, &old, sizeof old);
      });
      return true;
    case RecordKind::cas:
      if (type_size(r.type) == 4) {
        std::uint32_t expected = static_cast<std::uint32_t>(r.a);
        std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(addr))
            .compare_exchange_strong(expected, static_cast<std::uint32_t>(r.b), std::memory_order_acq_rel);
        reply->a = expected;
      } else {
        std::uint64_t expected = r.a;
        std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(addr))
            .compare_exchange_strong(expected, r.b, std::memory_order_acq_rel);
        reply->a = expected;
      }
      return true;
    case RecordKind::get:
      std::memcpy(&reply->a, addr, r.size);
      return true;
    default:
      throw Error("aggregated operations: a corrupt record (kind " + std::to_string(r.kind) + ")");
  }
}

void Aggregator::drain_messages() {
  int flag = 0;
  MPI_Status st;
  // Applied counts of my batches come only in answer to a flush's batches,
  // so only a flush looks for them: most drains cost one MPI_Test, as
  // HPCC's polling does.
  const bool acks = want_acks_;
  want_acks_ = false;
  for (; acks;) {
    MPI_Test(&ack_req_, &flag, &st);
    if (!flag) break;
    std::uint64_t& a = acked_[static_cast<std::size_t>(ack_in_.unit)];
    a = std::max(a, ack_in_.applied);
    MPI_Irecv(&ack_in_, 2, MPI_UINT64_T, MPI_ANY_SOURCE, kAckTag, comm_, &ack_req_);
  }
  std::vector<char> due;  // sources owed an acknowledgement
  for (;;) {              // batches, oldest receive first (each source's stream in order)
    MPI_Request& r = recv_req_[recv_head_];
    MPI_Test(&r, &flag, &st);
    if (!flag) break;
    std::vector<char>& buf = recv_buf_[recv_head_];
    BatchHeader h;
    std::memcpy(&h, buf.data(), kHeader);
    // From a progress process: replies on behalf of the unit it names.
    const int src = by_server_ ? h.unit : st.MPI_SOURCE;
    const auto* recs = reinterpret_cast<const Record*>(buf.data() + kHeader);
    apply_batch(src, recs, h.count);
    ++applied_[static_cast<std::size_t>(src)];
    if (h.ask) {
      if (due.empty()) due.assign(static_cast<std::size_t>(units_), 0);
      due[static_cast<std::size_t>(src)] = 1;
    }
    post_receive(recv_head_);
    recv_head_ = (recv_head_ + 1) % recv_req_.size();
  }
  for (std::size_t s = 0; s < due.size(); ++s) {
    if (!due[s]) continue;
    if (ack_send_req_[s] != MPI_REQUEST_NULL) MPI_Wait(&ack_send_req_[s], MPI_STATUS_IGNORE);
    ack_out_[s] = Ack{static_cast<std::uint64_t>(me_), applied_[s]};
    MPI_Isend(&ack_out_[s], 2, MPI_UINT64_T, static_cast<int>(s), kAckTag, comm_, &ack_send_req_[s]);
  }
}

void Aggregator::drain() {
  if (draining_ || stopped_) return;
  draining_ = true;
  if (message_) {
    drain_messages();
    draining_ = false;
    for (int d = 0; d < units_; ++d)
      if (out_[static_cast<std::size_t>(d)].urgent)
        while (try_send(d)) {
        }
    return;
  }
  // An MPI library that applies accumulates by active messages (MPICH
  // ch4) needs this process in MPI for the sequence numbers and the
  // acknowledgements to land.
  int any = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, team_.comm(), &any, MPI_STATUS_IGNORE);
  for (int s = 0; s < units_; ++s) {
    if (s == me_ || team_.same_node(s)) continue;
    std::uint64_t& done = applied_[static_cast<std::size_t>(s)];
    bool any_applied = false;
    for (;;) {
      char* slot = box_->base + slot_offset(s, done % static_cast<std::uint64_t>(slots_));
      if (__atomic_load_n(reinterpret_cast<std::uint64_t*>(slot), __ATOMIC_ACQUIRE) != done + 1) break;
      std::uint64_t count = 0;
      std::memcpy(&count, slot + 8, 8);
      const auto* recs = reinterpret_cast<const Record*>(slot + kHeader);
      apply_batch(s, recs, count);
      ++done;
      any_applied = true;
    }
    if (any_applied) {
      // The origin's acknowledgement word: how many of its batches are applied.
      std::uint64_t& v = ack_values_[static_cast<std::size_t>(s)];
      v = done;
      const MPI_Aint disp = box_->disp[static_cast<std::size_t>(s)] +
                            static_cast<MPI_Aint>(static_cast<std::size_t>(me_) * sizeof(std::uint64_t));
      MPI_Accumulate(&v, 1, MPI_UINT64_T, s, disp, 1, MPI_UINT64_T, MPI_REPLACE, box_->rma);
      MPI_Win_flush_local(s, box_->rma);
    }
  }
  draining_ = false;
  for (int d = 0; d < units_; ++d)
    if (out_[static_cast<std::size_t>(d)].urgent)
      while (try_send(d)) {
      }
}

namespace {
// An update or fetch record: op applied to the target with `value`.
Record op_record(RecordKind kind, const Target& t, const void* value, MPI_Datatype type, Op op) {
  Record r;
  r.kind = static_cast<std::uint8_t>(kind);
  r.type = type_code(type);
  r.op = static_cast<std::uint8_t>(op);
  r.segment = t.seg->id;
  r.offset = t.offset;
  std::memcpy(&r.a, value, type_size(r.type));
  return r;
}
}  // namespace

void Aggregator::update(const Target& t, const void* value, MPI_Datatype type, Op op) {
  const Record r = op_record(RecordKind::update, t, value, type, op);
  Lock lock(lock_);
  push(t.unit, r);
}

void Aggregator::get(void* dst, const Target& t, std::size_t bytes) {
  Record r;
  r.kind = static_cast<std::uint8_t>(RecordKind::get);
  r.size = static_cast<std::uint8_t>(bytes);
  r.segment = t.seg->id;
  r.offset = t.offset;
  Lock lock(lock_);
  Out& o = out_[static_cast<std::size_t>(t.unit)];
  o.replies.push_back({dst, static_cast<std::uint32_t>(bytes)});
  ++o.asked;
  push(t.unit, r);
}

void Aggregator::fetch(const Target& t, const void* operand, void* result, MPI_Datatype type, Op op) {
  const Record r = op_record(RecordKind::fetch, t, operand, type, op);
  ask_and_wait(t.unit, r, result, type_size(r.type));
}

void Aggregator::compare_and_swap(const Target& t, const void* compare, const void* value, void* result,
                                  MPI_Datatype type) {
  Record r;
  r.kind = static_cast<std::uint8_t>(RecordKind::cas);
  r.type = type_code(type);
  r.segment = t.seg->id;
  r.offset = t.offset;
  const std::uint8_t size = type_size(r.type);
  std::memcpy(&r.a, compare, size);
  std::memcpy(&r.b, value, size);
  ask_and_wait(t.unit, r, result, size);
}

// Sends a request whose reply goes to `result` and applies incoming batches
// until that reply has arrived.
void Aggregator::ask_and_wait(int unit, const Record& r, void* result, std::uint32_t size) {
  std::uint64_t ticket = 0;
  {
    Lock lock(lock_);
    Out& o = out_[static_cast<std::size_t>(unit)];
    o.replies.push_back({result, size});
    ticket = ++o.asked;
    o.urgent = true;
    push(unit, r);
  }
  for (unsigned spins = 0;;) {
    {
      Lock lock(lock_);
      if (out_[static_cast<std::size_t>(unit)].answered >= ticket) return;
      try_send(unit);
      drain();
    }
    relax_with_progress(spins, team_.comm());
  }
}

void Aggregator::flush(int unit) {
  const int first = unit < 0 ? 0 : unit, last = unit < 0 ? units_ : unit + 1;
  for (unsigned spins = 0;;) {
    bool done = true;
    {
      Lock lock(lock_);
      flushing_ = true;  // batches sent now ask for an acknowledgement
      for (int d = first; d < last; ++d) {
        if (quiet(d)) continue;
        done = false;
        Out& o = out_[static_cast<std::size_t>(d)];
        o.urgent = true;
        while (try_send(d)) {
          o.ack_asked = o.sent;
        }
        // Everything went out before this flush: an empty batch asks.
        if (message_ && o.buffered() == 0 && acked(d) < o.sent && o.ack_asked != o.sent)
          if (const int k = free_send_buffer(); k >= 0) {
            send_message(d, o, 0, k);
            o.ack_asked = ++o.sent;
            ++batches_sent_;
          }
      }
      flushing_ = false;
      want_acks_ = message_;
      drain();
    }
    if (done) return;
    relax_with_progress(spins, team_.comm());
  }
}

void Aggregator::progress() {
  Lock lock(lock_);
  drain();
}

void Aggregator::barrier() {
  flush(-1);
  // Others may still be sending to us: keep applying until all are here.
  MPI_Request req;
  MPI_Ibarrier(team_.comm(), &req);
  int flag = 0;
  for (unsigned spins = 0;;) {
    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
    if (flag) return;
    progress();
    relax(spins);
  }
}

namespace {
// The aggregator and the resolved target (team and segment looked up once)
// of a call the short path may take: another node's unit of a segment with
// aggregated atomics, in bounds (when checked), the profile not measuring;
// else nullptr.
Aggregator* short_path(int team, int segment, int unit, std::uint64_t offset, std::size_t bytes, Target* t) {
  const Direct& d = g_direct;
  const DirectSegment* s = d.find(team, segment);
  if (!s || !s->aggregate || static_cast<unsigned>(unit) >= s->units || s->peer[unit]) return nullptr;
  if (d.check && !fits_part(*s, unit, offset, bytes)) return nullptr;
  if (g_measure_comm.load(std::memory_order_relaxed)) return nullptr;
  Runtime& rt = Runtime::current();
  Team& tm = rt.team(team);
  *t = Target{rt.state().segments.find(team, segment), &tm, unit, offset};
  return tm.aggregator();
}
}  // namespace

bool aggregate_update(int team, int segment, int unit, std::uint64_t offset, const void* value,
                      MPI_Datatype type, Op op) {
  Target t{};
  Aggregator* agg = short_path(team, segment, unit, offset, type_size(type_code(type)), &t);
  if (!agg) return false;
  agg->update(t, value, type, op);
  return true;
}

bool aggregate_get(void* dst, int team, int segment, int unit, std::uint64_t offset, std::size_t bytes) {
  Target t{};
  Aggregator* agg = short_path(team, segment, unit, offset, bytes, &t);
  if (!agg) return false;
  agg->get(dst, t, bytes);
  return true;
}

// ------------------------------------------------------------ progress process

ServerApplier::ServerApplier(MPI_Comm comm, const AggregateSettings& s, Lookup lookup)
    : comm_(comm),
      cap_(s.records),
      slot_bytes_(kHeader + s.records * sizeof(Record)),
      lookup_(std::move(lookup)) {
  const std::size_t posted = static_cast<std::size_t>(std::max(4, 2 * s.slots));
  recv_buf_.assign(posted, std::vector<char>(slot_bytes_));
  recv_req_.assign(posted, MPI_REQUEST_NULL);
  for (std::size_t i = 0; i < posted; ++i)
    MPI_Irecv(recv_buf_[i].data(), static_cast<int>(slot_bytes_), MPI_BYTE, MPI_ANY_SOURCE, kBatchTag, comm_,
              &recv_req_[i]);
  replies_.reserve(cap_);
}

std::size_t ServerApplier::poll() {
  std::size_t n = 0;
  for (;;) {  // oldest receive first: each origin's stream in order
    MPI_Request& r = recv_req_[recv_head_];
    int flag = 0;
    MPI_Status st;
    MPI_Test(&r, &flag, &st);
    if (!flag) break;
    std::vector<char>& buf = recv_buf_[recv_head_];
    BatchHeader h;
    std::memcpy(&h, buf.data(), kHeader);
    apply(st.MPI_SOURCE, h, reinterpret_cast<const Record*>(buf.data() + kHeader));
    MPI_Irecv(buf.data(), static_cast<int>(slot_bytes_), MPI_BYTE, MPI_ANY_SOURCE, kBatchTag, comm_, &r);
    recv_head_ = (recv_head_ + 1) % recv_req_.size();
    ++n;
  }
  return n;
}

// A free send buffer of at least `bytes` (a new one when every buffer is
// still in flight: replies never wait for their origin to drain).
char* ServerApplier::send_buffer(std::size_t bytes, MPI_Request** req) {
  for (auto& [buf, r] : sends_) {
    int flag = 1;
    if (r != MPI_REQUEST_NULL) MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
    if (flag && buf.size() >= bytes) {
      *req = &r;
      return buf.data();
    }
  }
  sends_.emplace_back(std::vector<char>(std::max(bytes, slot_bytes_)), MPI_REQUEST_NULL);
  *req = &sends_.back().second;
  return sends_.back().first.data();
}

// One batch from `origin` for unit h.unit of my node: applied in order with
// the same CPU atomics the unit's own node uses, then the replies (one
// batch) and, when asked, the count of the stream's batches applied.
void ServerApplier::apply(int origin, const BatchHeader& h, const Record* recs) {
  if (h.count > cap_)
    throw Error("aggregated operations: a batch of " + std::to_string(h.count) + " records from unit " +
                std::to_string(origin) + " (at most " + std::to_string(cap_) + ")");
  const std::string what = "aggregated operation from unit " + std::to_string(origin);
  int cached_id = -1;
  char* cached_base = nullptr;
  std::size_t cached_bytes = 0;
  auto where = [&](const Record& r) -> char* {
    if (r.segment != cached_id) {
      cached_base = lookup_(r.segment, h.unit, &cached_bytes);
      if (!cached_base)
        throw Error(record_error(origin, r,
                                 "unit " + std::to_string(h.unit) +
                                     "'s part is not known to its progress process (freed before a "
                                     "flush?)"));
      cached_id = r.segment;
    }
    // The core's one bounds rule, as the progress processes apply it to
    // every command (the world team: id 0).
    const std::size_t size = static_cast<RecordKind>(r.kind) == RecordKind::get ? r.size : type_size(r.type);
    if (std::string problem =
            bounds_problem(what.c_str(), 0, r.segment, h.unit, r.offset, size, cached_bytes);
        !problem.empty())
      throw Error(problem);
    return cached_base + r.offset;
  };
  replies_.clear();
  walk_batch(recs, h.count, where, [&](const Record& r, char* addr) {
    Record reply;
    if (apply_request(r, addr, &reply)) replies_.push_back(reply);
  });
  ++batches_;
  std::uint64_t& applied = ++applied_[{origin, h.unit}];
  if (!replies_.empty()) {
    const BatchHeader back{static_cast<std::uint32_t>(replies_.size()), h.unit, 0};
    const std::size_t bytes = kHeader + replies_.size() * sizeof(Record);
    MPI_Request* req = nullptr;
    char* buf = send_buffer(bytes, &req);
    std::memcpy(buf, &back, kHeader);
    std::memcpy(buf + kHeader, replies_.data(), replies_.size() * sizeof(Record));
    MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, origin, kBatchTag, comm_, req);
  }
  if (h.ask) {
    const Ack a{static_cast<std::uint64_t>(h.unit), applied};
    MPI_Request* req = nullptr;
    char* buf = send_buffer(sizeof a, &req);
    std::memcpy(buf, &a, sizeof a);
    MPI_Isend(buf, 2, MPI_UINT64_T, origin, kAckTag, comm_, req);
  }
}

void ServerApplier::stop() {
  if (stopped_) return;
  stopped_ = true;
  for (MPI_Request& r : recv_req_) {
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  // Every origin flushed before the end: it took in every reply and
  // acknowledgement, so these complete.
  for (auto& [buf, r] : sends_)
    if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
}

void ensure_aggregator(Team& team) {
  if (team.aggregator()) return;
  team.set_aggregator(std::make_unique<Aggregator>(team, Runtime::current().settings().aggregate));
}

}  // namespace locus::detail
