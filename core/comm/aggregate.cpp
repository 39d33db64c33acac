#include "comm/aggregate.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>

#include "comm/comm_state.hpp"
#include "locus/counts.hpp"
#include "locus/segment.hpp"
#include "locus/wait.hpp"
#include "mem/htm.hpp"
#include "mem/shared_pages.hpp"
#include "mem/stripe_locks.hpp"
#include "progress/progress_engine.hpp"

// Counted requirements (counts.hpp): a record is counted where it is
// appended (an update: its element's bytes off my node and one atomic
// update; a get: its bytes; a fetch or compare-and-swap: one atomic
// fetch), same-node elements of the bulk calls where they are applied,
// and every batch sent as one message (or, by the put transport, two RMA
// calls), acknowledgements too. Replies are not counted as bytes (the get
// was); the progress processes' applier counts nothing (not a unit).
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
  slot_bytes_ = kHeader + cap_ * kMaxRecordBytes;
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
  // The progress processes apply the batches of a team they serve (the
  // world team: its units are the engine's application units, in order).
  ProgressEngine* engine = core().engine;
  by_server_ = message && s.applier == AggregateApplier::progress && team.served() && engine;
  rank_of_.resize(static_cast<std::size_t>(units_));
  for (int d = 0; d < units_; ++d)
    rank_of_[static_cast<std::size_t>(d)] = by_server_ ? engine->ghost_of(d) : d;
  if (message_) {
    if (by_server_)
      comm_ = engine->aggregate_comm();
    else
      yielding::comm_dup(team.comm(), &comm_);
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
  locus::yielding::barrier(comm_);
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
  return o.buffered == 0 && acked(dest) == o.sent && o.answered == o.asked;
}

Aggregator::Batch Aggregator::new_batch() {
  Batch b;
  if (spare_.empty()) {
    b.bytes.resize(slot_bytes_);
  } else {
    b.bytes = std::move(spare_.back());
    spare_.pop_back();
  }
  b.used = kHeader;
  return b;
}

void Aggregator::recycle(Batch& b) {
  if (b.bytes.size() == slot_bytes_) spare_.push_back(std::move(b.bytes));
}

void Aggregator::seal(Batch& b) {
  if (b.open_run) std::memcpy(b.bytes.data() + b.open_run + offsetof(RunHeader, count), &b.open_count, 4);
}

char* Aggregator::append(Out& o, const RunHeader& key) {
  if (o.batches.empty() || o.batches.back().records == cap_) o.batches.push_back(new_batch());
  Batch& b = o.batches.back();
  std::uint64_t want = 0;
  std::memcpy(&want, &key, 8);
  if (!b.open_run || b.open_key != want) {
    seal(b);
    b.open_run = b.used;
    b.open_key = want;
    b.open_count = 0;
    std::memcpy(b.bytes.data() + b.used, &key, sizeof key);
    b.used += sizeof key;
  }
  ++b.open_count;
  char* const at = b.bytes.data() + b.used;
  b.used += record_bytes(key.kind);
  ++b.records;
  ++o.buffered;
  return at;
}

template <class Fill>
void Aggregator::append_records(Out& o, const RunHeader& key, std::size_t n, Fill&& fill) {
  const std::size_t stride = record_bytes(key.kind);
  for (std::size_t i = 0; i < n;) {
    fill(i++, append(o, key));  // opens the run (or a new batch)
    Batch& b = o.batches.back();
    const std::size_t more = std::min<std::size_t>(n - i, cap_ - b.records);
    char* p = b.bytes.data() + b.used;
    for (std::size_t q = 0; q < more; ++q) fill(i + q, p + q * stride);
    b.used += stride * more;
    b.open_count += static_cast<std::uint32_t>(more);
    b.records += static_cast<std::uint32_t>(more);
    o.buffered += more;
    i += more;
  }
}

void Aggregator::pushed(int dest, std::size_t count) {
  Out& o = out_[static_cast<std::size_t>(dest)];
  // Apply what others sent every so often (as HPCC's bucketed code tests
  // its receive every 16 updates): a destination that only sends would
  // otherwise hold its origins' credits until its own buffers fill.
  const std::uint64_t before = pushes_;
  pushes_ += count;
  if (before / kPollEvery != pushes_ / kPollEvery && !draining_) drain();
  // A full batch goes at once; when it cannot (every send buffer in
  // flight), the next try comes kPollEvery records later, not at every push.
  if (o.buffered < std::max(cap_, o.next_try)) return;
  // Every full batch (a bulk call may have filled several).
  while (o.buffered >= cap_ && try_send(dest)) {
  }
  if (o.buffered < cap_) {
    o.next_try = 0;
    return;
  }
  o.next_try = o.buffered + kPollEvery;
  if (o.buffered < cap_ * static_cast<std::size_t>(slots_ + 2) || draining_) return;
  // Far ahead of the destination: apply what comes in (it may be waiting
  // for us) until a slot frees.
  for (unsigned spins = 0; o.buffered >= cap_ * static_cast<std::size_t>(slots_ + 2);) {
    drain();
    if (!try_send(dest)) relax_with_progress(spins, team_.comm());
  }
}

// Sends dest's oldest batch if it has records and a free slot.
bool Aggregator::try_send(int dest) {
  Out& o = out_[static_cast<std::size_t>(dest)];
  if (o.buffered == 0) return false;
  Batch& b = o.batches.front();
  seal(b);
  if (message_) {
    // No credits: MPI's own flow control bounds what is in flight (a pool
    // buffer is reused once its send completed, as HPCC reuses a bucket).
    const int k = free_send_buffer();
    if (k < 0) return false;  // every buffer of the pool still in flight
    send_message(dest, b, k);
  } else {
    if (o.sent - acked(dest) >= static_cast<std::uint64_t>(slots_)) return false;  // the mailbox is full
    put_batch(dest, b, o.sent % static_cast<std::uint64_t>(slots_));
  }
  ++o.sent;
  ++batches_sent_;
  records_sent_ += b.records;
  o.buffered -= b.records;
  recycle(b);
  o.batches.pop_front();
  if (o.buffered == 0) o.urgent = false;
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

// Batch b goes as it is: it takes pool slot k's place (the slot's old
// buffer, whose send completed, comes back in b to be reused).
void Aggregator::send_message(int dest, Batch& b, int k) {
  const BatchHeader h{b.records, dest, flushing_ ? 1u : 0u};
  std::memcpy(b.bytes.data(), &h, kHeader);
  std::vector<char>& slot = send_buf_[static_cast<std::size_t>(k)];
  slot.swap(b.bytes);
  locus::count(Count::messages, 1);
  MPI_Isend(slot.data(), static_cast<int>(b.used), MPI_BYTE, rank_of_[static_cast<std::size_t>(dest)],
            kBatchTag, comm_, &send_req_[static_cast<std::size_t>(k)]);
}

void Aggregator::put_batch(int dest, Batch& b, std::uint64_t slot) {
  const std::uint64_t count = b.records;
  std::memcpy(b.bytes.data() + 8, &count, 8);
  const MPI_Aint disp =
      box_->disp[static_cast<std::size_t>(dest)] + static_cast<MPI_Aint>(slot_offset(me_, slot));
  MPI_Win win = box_->rma;
  rma_epoch(win);
  locus::count(Count::rma_ops, 2);  // the records, then their sequence number
  MPI_Put(b.bytes.data() + 8, static_cast<int>(b.used - 8), MPI_BYTE, dest, disp + 8,
          static_cast<int>(b.used - 8), MPI_BYTE, win);
  MPI_Win_flush(dest, win);  // the records are there before their number
  const std::uint64_t seq = out_[static_cast<std::size_t>(dest)].sent + 1;
  MPI_Accumulate(&seq, 1, MPI_UINT64_T, dest, disp, 1, MPI_UINT64_T, MPI_REPLACE, win);
  MPI_Win_flush_local(dest, win);
}

namespace {

std::string corrupt_batch(int origin) {
  return "aggregated operations: a corrupt batch from unit " + std::to_string(origin);
}

std::uint64_t field(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Calls fn(run, first record) for every run of a batch of `records`
// records in [p, end); a batch that does not parse is an Error.
template <class Fn>
void for_each_run(const char* p, const char* end, std::size_t records, int origin, Fn&& fn) {
  while (records > 0) {
    RunHeader h;
    if (end - p < static_cast<std::ptrdiff_t>(sizeof h)) throw Error(corrupt_batch(origin));
    std::memcpy(&h, p, sizeof h);
    p += sizeof h;
    const std::size_t stride = record_bytes(h.kind);
    if (stride == 0 || h.count == 0 || h.count > records ||
        static_cast<std::size_t>(end - p) / stride < h.count)
      throw Error(corrupt_batch(origin));
    fn(h, p);
    p += h.count * stride;
    records -= h.count;
  }
}

// Prefetches the targets of a run's records kAhead records before their
// access: the targets are random words in general (GUPS, index-gather), so
// the cache misses overlap instead of waiting one by one behind each
// locked instruction. An address is only a hint here (never dereferenced
// before its record's bounds check).
struct Ahead {
  static constexpr std::size_t kAhead = 16;
  const char* p;
  const char* base;
  std::size_t stride, n;
  bool write;
  void one(std::size_t i) const {
    const char* a = base + field(p + i * stride);
    if (write)
      __builtin_prefetch(a, 1, 3);
    else
      __builtin_prefetch(a, 0, 3);
  }
  void start() const {
    for (std::size_t i = 0; i < std::min(kAhead, n); ++i) one(i);
  }
  void before(std::size_t i) const {
    if (i + kAhead < n) one(i + kAhead);
  }
};

// Updates or fetches of element type T, the operation chosen once per run;
// floating-point ones under the part's stripe locks at `area` where it has
// them (comm.fp_locks: mem/stripe_locks.hpp).
template <class T, class Check, class Emit>
void apply_ops(const RunHeader& h, const char* p, char* base, char* area, const Ahead& ahead, Check& check,
               Emit& emit) {
  const auto op = static_cast<Op>(h.op);
  auto each = [&](auto&& one) {
    for (std::size_t i = 0; i < h.count; ++i) {
      ahead.before(i);
      const char* r = p + i * ahead.stride;
      const std::uint64_t off = field(r);
      check(off, sizeof(T));
      T v;
      std::memcpy(&v, r + 8, sizeof v);
      one(reinterpret_cast<T*>(base + off), v);
    }
  };
  auto answer = [&](T old) {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &old, sizeof old);
    emit(bits);
  };
  const bool fetch = static_cast<RecordKind>(h.kind) == RecordKind::fetch;
  if constexpr (stripe_locked<T>())
    if (area)
      return plain_update<T>(op, [&](auto plain) {
        each([&](T* a, T v) {
          StripeGuard hold(area, static_cast<std::uint64_t>(reinterpret_cast<char*>(a) - base));
          const T old = *a;
          plain(*a, v);
          if (fetch) answer(old);
        });
      });
  if (fetch) return each([&](T* a, T v) { answer(cpu_apply(a, v, op)); });
  relaxed_update<T>(op, each);
}

// Compare-and-swaps, each under its stripe's lock where the part has them
// (`area`: comm.fp_locks).
template <class T, class Check, class Emit>
void apply_cas(const RunHeader& h, const char* p, char* base, char* area, Check& check, Emit& emit) {
  for (std::size_t i = 0; i < h.count; ++i) {
    const char* r = p + i * record_bytes(h.kind);
    const std::uint64_t off = field(r);
    check(off, sizeof(T));
    T expected = static_cast<T>(field(r + 8));
    maybe_locked(area, off, [&] {
      std::atomic_ref<T>(*reinterpret_cast<T*>(base + off))
          .compare_exchange_strong(expected, static_cast<T>(field(r + 16)), std::memory_order_acq_rel);
    });
    emit(static_cast<std::uint64_t>(expected));
  }
}

// Applies the requests of run h (records at p) to the part at `base`
// (its stripe locks at `area`, or nullptr: comm.fp_locks):
// check(offset, bytes) throws when a record is out of bounds; emit(bits)
// takes each answer (fetches, compare-and-swaps, gets) in order.
template <class Check, class Emit>
void apply_run(const RunHeader& h, const char* p, char* base, char* area, Check&& check, Emit&& emit) {
  const auto kind = static_cast<RecordKind>(h.kind);
  const Ahead ahead{p, base, record_bytes(h.kind), h.count, kind != RecordKind::get};
  switch (kind) {
    case RecordKind::update:
    case RecordKind::fetch:
      ahead.start();
      with_type(h.type, [&](auto zero) { apply_ops<decltype(zero)>(h, p, base, area, ahead, check, emit); });
      return;
    case RecordKind::cas:
      if (type_size(h.type) == 4)
        apply_cas<std::uint32_t>(h, p, base, area, check, emit);
      else
        apply_cas<std::uint64_t>(h, p, base, area, check, emit);
      return;
    case RecordKind::get:
      if (h.size == 0 || h.size > 8)
        throw Error("aggregated operations: a get of " + std::to_string(h.size) + " bytes");
      ahead.start();
      for (std::size_t i = 0; i < h.count; ++i) {
        ahead.before(i);
        const std::uint64_t off = field(p + i * ahead.stride);
        check(off, h.size);
        std::uint64_t v = 0;
        std::memcpy(&v, base + off, h.size);
        emit(v);
      }
      return;
    default:
      throw Error("aggregated operations: a corrupt record (kind " + std::to_string(h.kind) + ")");
  }
}

std::string record_error(int source, int segment, const std::string& what) {
  return "aggregated operation from unit " + std::to_string(source) + " on segment " +
         std::to_string(segment) + ": " + what;
}

const RunHeader kReplyRun{static_cast<std::uint8_t>(RecordKind::reply), 0, 0, 0, 0, 0, 0};
}  // namespace

// A batch from `source`, in order: requests to my part, replies to mine.
void Aggregator::apply_batch(int source, const char* body, const char* end, std::size_t records) {
  const int team = team_.id();
  for_each_run(body, end, records, source, [&](const RunHeader& h, const char* p) {
    if (static_cast<RecordKind>(h.kind) == RecordKind::reply) return take_replies(source, p, h.count);
    const SegmentInfo* seg = core().segments.find(team, h.segment);
    if (!seg) throw Error(record_error(source, h.segment, "not allocated here (freed before a flush?)"));
    answers_.clear();
    char* area =
        seg->fp_locks ? stripe_area(seg->base, seg->bytes[static_cast<std::size_t>(team_.rank())]) : nullptr;
    apply_run(
        h, p, seg->base, area, [](std::uint64_t, std::size_t) {},
        [&](std::uint64_t bits) { answers_.push_back(bits); });
    if (answers_.empty()) return;
    Out& back = out_[static_cast<std::size_t>(source)];
    append_records(back, kReplyRun, answers_.size(),
                   [&](std::size_t i, char* r) { std::memcpy(r, &answers_[i], 8); });
    back.urgent = true;
  });
}

// The answers to my oldest open requests to `source`.
void Aggregator::take_replies(int source, const char* p, std::uint32_t count) {
  Out& o = out_[static_cast<std::size_t>(source)];
  if (o.asked - o.answered < count)
    throw Error("aggregated operations: a reply for unit " + std::to_string(source) +
                " that nobody asked for");
  const std::uint64_t mask = o.replies.size() - 1;
  for (std::uint32_t i = 0; i < count; ++i) {
    const Out::Pending& d = o.replies[(o.answered + i) & mask];
    const char* v = p + 8 * static_cast<std::size_t>(i);
    if (d.size == 8)
      std::memcpy(d.dst, v, 8);  // the common case inline, not a call
    else
      std::memcpy(d.dst, v, d.size);
  }
  o.answered += count;
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
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    if (bytes < static_cast<int>(kHeader) || h.count > cap_) throw Error(corrupt_batch(st.MPI_SOURCE));
    apply_batch(src, buf.data() + kHeader, buf.data() + bytes, h.count);
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
    locus::count(Count::messages, 1);
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
      if (count > cap_) throw Error(corrupt_batch(s));
      apply_batch(s, slot + kHeader, slot + slot_bytes_, count);
      ++done;
      any_applied = true;
    }
    if (any_applied) {
      // The origin's acknowledgement word: how many of its batches are applied.
      std::uint64_t& v = ack_values_[static_cast<std::size_t>(s)];
      v = done;
      const MPI_Aint disp = box_->disp[static_cast<std::size_t>(s)] +
                            static_cast<MPI_Aint>(static_cast<std::size_t>(me_) * sizeof(std::uint64_t));
      locus::count(Count::rma_ops, 1);
      rma_epoch(box_->rma);
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
// The run key of a get of `bytes` bytes.
RunHeader get_key(int segment, std::size_t bytes) {
  RunHeader h;
  h.kind = static_cast<std::uint8_t>(RecordKind::get);
  h.size = static_cast<std::uint8_t>(bytes);
  h.segment = segment;
  return h;
}

// The run key of an update or fetch.
RunHeader op_key(RecordKind kind, int segment, MPI_Datatype type, Op op) {
  RunHeader h;
  h.kind = static_cast<std::uint8_t>(kind);
  h.type = type_code(type);
  h.op = static_cast<std::uint8_t>(op);
  h.segment = segment;
  return h;
}
}  // namespace

void Aggregator::update(int unit, int segment, std::uint64_t offset, const void* value, MPI_Datatype type,
                        Op op) {
  const RunHeader key = op_key(RecordKind::update, segment, type, op);
  std::uint64_t fields[2] = {offset, 0};
  std::memcpy(&fields[1], value, type_size(key.type));
  locus::count(Count::bytes_off_node, type_size(key.type), Count::atomic_updates, 1);
  Lock lock(lock_);
  std::memcpy(append(out_[static_cast<std::size_t>(unit)], key), fields, sizeof fields);
  pushed(unit);
}

void Aggregator::reserve_replies(Out& o, std::size_t n) {
  while (o.asked - o.answered + n > o.replies.size()) {  // twice the size, the same order
    std::vector<Out::Pending> bigger(std::max<std::size_t>(64, 2 * o.replies.size()));
    for (std::uint64_t t = o.answered; t < o.asked; ++t)
      bigger[t & (bigger.size() - 1)] = o.replies[t & (o.replies.size() - 1)];
    o.replies.swap(bigger);
  }
}

void Aggregator::expect_reply(Out& o, void* dst, std::uint32_t size) {
  reserve_replies(o, 1);
  o.replies[o.asked & (o.replies.size() - 1)] = {dst, size};
  ++o.asked;
}

void Aggregator::get(void* dst, int unit, int segment, std::uint64_t offset, std::size_t bytes) {
  const RunHeader key = get_key(segment, bytes);
  locus::count(Count::bytes_off_node, bytes);
  Lock lock(lock_);
  Out& o = out_[static_cast<std::size_t>(unit)];
  expect_reply(o, dst, static_cast<std::uint32_t>(bytes));
  std::memcpy(append(o, key), &offset, 8);
  pushed(unit);
}

namespace {
// The bulk calls (gather_nbi, update_nbi), a chunk of indices at a time:
// split without a branch per index into same-node elements, handed in
// index order to near(first index of the chunk, position j in the chunk,
// the element's address) with each line prefetched kAhead elements before
// (for writing when kWrite), and others, handed to far(unit, first index
// of the chunk, positions js[0..k), byte offsets at[j] in the unit's
// part), one run per unit the chunk sends to.
template <bool kWrite, class Near, class Far>
void split_chunks(std::uint64_t offset, std::size_t esize, std::size_t per_unit, const std::uint64_t* index,
                  std::size_t n, char* const* peer, std::size_t units, Near&& near, Far&& far) {
  constexpr std::size_t kChunk = 512, kAhead = 16;
  const TableIndex table(per_unit);
  std::uint32_t unit[kChunk], here[kChunk], other[kChunk], sorted[kChunk];
  std::vector<std::uint32_t> count, first, touched;  // per unit; the units a chunk sends to
  std::uint64_t at[kChunk];                          // byte offset in the unit's part
  for (std::size_t b = 0; b < n; b += kChunk) {
    const std::size_t m = std::min(kChunk, n - b);
    std::size_t nn = 0, nf = 0;
    for (std::size_t j = 0; j < m; ++j) {
      const std::uint64_t g = index[b + j];
      const auto u = static_cast<std::uint32_t>(table.unit(g));
      unit[j] = u;
      at[j] = offset + static_cast<std::uint64_t>(table.element(g)) * esize;
      const bool mine = peer[u] != nullptr;
      here[nn] = static_cast<std::uint32_t>(j);
      other[nf] = static_cast<std::uint32_t>(j);
      nn += mine;
      nf += !mine;
    }
    auto addr = [&](std::size_t i) { return peer[unit[here[i]]] + at[here[i]]; };
    auto ahead = [&](std::size_t i) { __builtin_prefetch(addr(i), kWrite ? 1 : 0, 3); };
    for (std::size_t i = 0; i < std::min(kAhead, nn); ++i) ahead(i);
    for (std::size_t i = 0; i < nn; ++i) {
      if (i + kAhead < nn) ahead(i + kAhead);
      near(b, here[i], addr(i));
    }
    // (the far ones become records in batches, sent as messages later)
    locus::count(Count::bytes_on_node, nn * esize, Count::bytes_off_node, nf * esize);
    if (kWrite) locus::count(Count::atomic_updates, m);
    if (nf == 0) continue;
    if (units <= 2) {  // one other unit at most: already in order
      far(unit[other[0]], b, other, nf, at);
      continue;
    }
    // Other nodes: grouped by unit (a counting sort over the units this
    // chunk touches, each unit's elements in index order), one run each.
    if (count.empty()) count.assign(units, 0), first.assign(units, 0);
    touched.clear();
    for (std::size_t i = 0; i < nf; ++i)
      if (count[unit[other[i]]]++ == 0) touched.push_back(unit[other[i]]);
    if (touched.size() == 1) {  // the chunk sends to one unit only
      far(touched[0], b, other, nf, at);
      count[touched[0]] = 0;
      continue;
    }
    std::uint32_t pos = 0;
    for (const std::uint32_t u : touched) first[u] = pos, pos += count[u];
    for (std::size_t i = 0; i < nf; ++i) sorted[first[unit[other[i]]]++] = other[i];
    for (const std::uint32_t u : touched) {
      const std::uint32_t k = count[u];
      far(u, b, sorted + (first[u] - k), k, at);
      count[u] = 0;
    }
  }
}

// gather_nbi's same-node element: copied at once.
struct GatherNear {
  char* dst;
  std::size_t esize;
  void operator()(std::size_t b, std::size_t j, const char* src) const {
    char* out = dst + (b + j) * esize;
    if (esize == 8)
      std::memcpy(out, src, 8);
    else
      std::memcpy(out, src, esize);
  }
};
}  // namespace

// Other nodes' elements become get requests in their units' batches.
void Aggregator::gather(char* dst, int segment, std::uint64_t offset, std::size_t esize, std::size_t per_unit,
                        const std::uint64_t* index, std::size_t n, char* const* peer) {
  const RunHeader key = get_key(segment, esize);
  Lock lock(lock_);
  split_chunks<false>(
      offset, esize, per_unit, index, n, peer, out_.size(), GatherNear{dst, esize},
      [&](std::uint32_t u, std::size_t b, const std::uint32_t* js, std::size_t k, const std::uint64_t* at) {
        Out& o = out_[u];
        reserve_replies(o, k);
        const std::uint64_t mask = o.replies.size() - 1;
        for (std::size_t i = 0; i < k; ++i)
          o.replies[(o.asked + i) & mask] = {dst + (b + js[i]) * esize, static_cast<std::uint32_t>(esize)};
        o.asked += k;
        append_records(o, key, k, [&](std::size_t i, char* r) { std::memcpy(r, &at[js[i]], 8); });
        pushed(static_cast<int>(u), k);
      });
}

namespace {
// update_nbi's split: same-node elements updated at once (relaxed_update:
// the operation chosen once per call; with comm.htm in transactions of 16,
// else by atomics prefetched 16 ahead),
// the others handed to far(unit,
// first index of the chunk, positions, byte offsets) as split_chunks does.
template <class T, class Far>
void scatter_chunks(const char* values, Op op, std::uint64_t offset, std::size_t per_unit,
                    const std::uint64_t* index, std::size_t n, char* const* peer, std::size_t units,
                    Far&& far) {
  auto value = [&](std::size_t i) {
    T v;
    std::memcpy(&v, values + i * sizeof(T), sizeof v);
    return v;
  };
  relaxed_update<T>(op, [&](auto one) {
    if (!(*core().settings).htm) {
      // no RTM (or comm.htm: off): CPU atomics, their lines prefetched a
      // batch ahead (htm.hpp: PrefetchedBatch)
      PrefetchedBatch<T, decltype(one)> batch(one);
      split_chunks<true>(
          offset, sizeof(T), per_unit, index, n, peer, units,
          [&](std::size_t b, std::size_t j, char* a) { batch.add(reinterpret_cast<T*>(a), value(b + j)); },
          far);
      return;
    }
    // comm.htm: the same-node elements in transactions of 16 (htm.hpp)
    plain_update<T>(op, [&](auto plain) {
      TransactionalBatch<T, decltype(plain), decltype(one)> batch(plain, one);
      split_chunks<true>(
          offset, sizeof(T), per_unit, index, n, peer, units,
          [&](std::size_t b, std::size_t j, char* a) { batch.add(reinterpret_cast<T*>(a), value(b + j)); },
          far);
    });
  });
}
}  // namespace

// Other nodes' elements become update records in their units' batches.
void Aggregator::update_many(const char* values, MPI_Datatype type, Op op, int segment, std::uint64_t offset,
                             std::size_t per_unit, const std::uint64_t* index, std::size_t n,
                             char* const* peer) {
  const RunHeader key = op_key(RecordKind::update, segment, type, op);
  Lock lock(lock_);
  with_type(key.type, [&](auto zero) {
    using T = decltype(zero);
    scatter_chunks<T>(
        values, op, offset, per_unit, index, n, peer, out_.size(),
        [&](std::uint32_t u, std::size_t b, const std::uint32_t* js, std::size_t k, const std::uint64_t* at) {
          append_records(out_[u], key, k, [&](std::size_t i, char* r) {
            std::memcpy(r, &at[js[i]], 8);
            std::uint64_t bits = 0;
            std::memcpy(&bits, values + (b + js[i]) * sizeof(T), sizeof(T));
            std::memcpy(r + 8, &bits, 8);
          });
          pushed(static_cast<int>(u), k);
        });
  });
}

void Aggregator::fetch(const Target& t, const void* operand, void* result, MPI_Datatype type, Op op) {
  locus::count(Count::atomic_fetches, 1);
  const RunHeader key = op_key(RecordKind::fetch, t.seg->id, type, op);
  std::uint64_t fields[2] = {t.offset, 0};
  std::memcpy(&fields[1], operand, type_size(key.type));
  ask_and_wait(t.unit, key, fields, result, type_size(key.type));
}

void Aggregator::compare_and_swap(const Target& t, const void* compare, const void* value, void* result,
                                  MPI_Datatype type) {
  locus::count(Count::atomic_fetches, 1);
  RunHeader key;
  key.kind = static_cast<std::uint8_t>(RecordKind::cas);
  key.type = type_code(type);
  key.segment = t.seg->id;
  const std::uint8_t size = type_size(key.type);
  std::uint64_t fields[3] = {t.offset, 0, 0};
  std::memcpy(&fields[1], compare, size);
  std::memcpy(&fields[2], value, size);
  ask_and_wait(t.unit, key, fields, result, size);
}

// Sends a request (its run key and record fields) whose reply goes to
// `result` and applies incoming batches until that reply has arrived.
void Aggregator::ask_and_wait(int unit, const RunHeader& key, const std::uint64_t* fields, void* result,
                              std::uint32_t size) {
  std::uint64_t ticket = 0;
  {
    Lock lock(lock_);
    Out& o = out_[static_cast<std::size_t>(unit)];
    expect_reply(o, result, size);
    ticket = o.asked;
    o.urgent = true;
    std::memcpy(append(o, key), fields, record_bytes(key.kind));
    pushed(unit);
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
        if (message_ && o.buffered == 0 && acked(d) < o.sent && o.ack_asked != o.sent)
          if (const int k = free_send_buffer(); k >= 0) {
            Batch empty = new_batch();
            send_message(d, empty, k);
            recycle(empty);
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
// The team's aggregator when the short path may take the call: another
// node's unit of a segment with aggregated atomics, in bounds (when
// checked), the profile not measuring; else nullptr. Two table reads, no
// segment record.
Aggregator* short_path(int team, int segment, int unit, std::uint64_t offset, std::size_t bytes) {
  const Direct& d = g_direct;
  const DirectSegment* s = d.find(team, segment);
  if (!s || !s->aggregate || static_cast<unsigned>(unit) >= s->units || s->peer[unit]) return nullptr;
  if (d.check && !fits_part(*s, unit, offset, bytes)) return nullptr;
  if (d.measuring.load(std::memory_order_relaxed)) return nullptr;
  return d.rows[team].aggregator;
}
}  // namespace

bool aggregate_update(int team, int segment, int unit, std::uint64_t offset, const void* value,
                      MPI_Datatype type, Op op) {
  Aggregator* agg = short_path(team, segment, unit, offset, type_size(type_code(type)));
  if (!agg) return false;
  agg->update(unit, segment, offset, value, type, op);
  return true;
}

bool aggregate_get(void* dst, int team, int segment, int unit, std::uint64_t offset, std::size_t bytes) {
  Aggregator* agg = short_path(team, segment, unit, offset, bytes);
  if (!agg) return false;
  agg->get(dst, unit, segment, offset, bytes);
  return true;
}

void check_table(const char* what, int team, int segment, std::uint64_t offset, std::size_t esize,
                 std::size_t per_unit, const std::uint64_t* index, std::size_t n) {
  const std::string call = what;
  const SegmentInfo* seg = core().segments.find(team, segment);
  if (!seg) throw Error(call + ": segment " + std::to_string(segment) + " is not allocated (freed?)");
  const auto units = static_cast<std::uint64_t>(seg->bytes.size());
  if (per_unit == 0 || per_unit > UINT64_MAX / units || per_unit > SIZE_MAX / esize)
    throw Error(call + ": a table of " + std::to_string(per_unit) + " elements per unit");
  for (std::size_t u = 0; u < seg->bytes.size(); ++u)  // the core's one bounds rule, for the whole table
    if (std::string problem =
            bounds_problem(what, team, segment, static_cast<int>(u), offset, per_unit * esize, seg->bytes[u]);
        !problem.empty())
      throw Error(problem);
  const std::uint64_t limit = units * per_unit;
  bool past = false;
  for (std::size_t k = 0; k < n; ++k) past |= index[k] >= limit;  // no early exit: vectorizes
  if (!past) return;
  for (std::size_t k = 0; k < n; ++k)
    if (index[k] >= limit)
      throw Error(call + ": index[" + std::to_string(k) + "] = " + std::to_string(index[k]) +
                  " is past the table (" + std::to_string(units) + " units x " + std::to_string(per_unit) +
                  " elements)");
}

namespace {
// The segment a bulk call may take whole, with its aggregator (null: every
// unit is on my node): comm.locality on, the profile not measuring, and
// every unit on my node or aggregated atomics; else null.
const DirectSegment* bulk_segment(int team, int segment, Aggregator** agg) {
  const Direct& d = g_direct;
  const DirectSegment* s = d.find(team, segment);
  if (!d.locality || !s || d.measuring.load(std::memory_order_relaxed)) return nullptr;
  *agg = s->aggregate ? d.rows[team].aggregator : nullptr;
  const bool one_node = std::all_of(s->peer, s->peer + s->units, [](const char* p) { return p != nullptr; });
  return one_node || *agg ? s : nullptr;
}
}  // namespace

bool gather_bulk(void* dst, int team, int segment, std::uint64_t offset, std::size_t esize,
                 std::size_t per_unit, const std::uint64_t* index, std::size_t n) {
  Aggregator* agg = nullptr;
  const DirectSegment* s = bulk_segment(team, segment, &agg);
  if (!s) return false;
  check_table("gather_nbi", team, segment, offset, esize, per_unit, index, n);
  complete_lookahead();  // this thread's queued accesses come first
  if (agg)
    agg->gather(static_cast<char*>(dst), segment, offset, esize, per_unit, index, n, s->peer);
  else
    split_chunks<false>(offset, esize, per_unit, index, n, s->peer, s->units,
                        GatherNear{static_cast<char*>(dst), esize},
                        [](std::uint32_t, std::size_t, const std::uint32_t*, std::size_t,
                           const std::uint64_t*) {});  // every unit on my node
  return true;
}

bool update_bulk(int team, int segment, std::uint64_t offset, const void* values, MPI_Datatype type, Op op,
                 std::size_t per_unit, const std::uint64_t* index, std::size_t n) {
  Aggregator* agg = nullptr;
  const DirectSegment* s = bulk_segment(team, segment, &agg);
  const std::uint8_t code = type_code(type);
  if (!s || !s->cpu_atomics || (op == Op::bxor && (code == 4 || code == 5)))
    return false;  // the general route (and its error for bxor on a floating type)
  if (s->fp_locks && (code == 4 || code == 5)) return false;  // under stripe locks: element by element
  check_table("update_nbi", team, segment, offset, type_size(code), per_unit, index, n);
  complete_lookahead();  // this thread's queued updates come first
  const char* v = static_cast<const char*>(values);
  if (agg) {
    agg->update_many(v, type, op, segment, offset, per_unit, index, n, s->peer);
    return true;
  }
  with_type(code, [&](auto zero) {  // every unit on my node
    scatter_chunks<decltype(zero)>(
        v, op, offset, per_unit, index, n, s->peer, s->units,
        [](std::uint32_t, std::size_t, const std::uint32_t*, std::size_t, const std::uint64_t*) {});
  });
  return true;
}

// ------------------------------------------------------------ progress process

ServerApplier::ServerApplier(MPI_Comm comm, const AggregateSettings& s, Lookup lookup)
    : comm_(comm),
      cap_(s.records),
      slot_bytes_(kHeader + s.records * kMaxRecordBytes),
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
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    if (bytes < static_cast<int>(kHeader)) throw Error(corrupt_batch(st.MPI_SOURCE));
    apply(st.MPI_SOURCE, h, buf.data() + kHeader, buf.data() + bytes);
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
void ServerApplier::apply(int origin, const BatchHeader& h, const char* body, const char* end) {
  if (h.count > cap_)
    throw Error("aggregated operations: a batch of " + std::to_string(h.count) + " records from unit " +
                std::to_string(origin) + " (at most " + std::to_string(cap_) + ")");
  const std::string what = "aggregated operation from unit " + std::to_string(origin);
  replies_.clear();
  for_each_run(body, end, h.count, origin, [&](const RunHeader& run, const char* p) {
    std::size_t part = 0;
    char* base = lookup_(run.segment, h.unit, &part);
    if (!base)
      throw Error(record_error(origin, run.segment,
                               "unit " + std::to_string(h.unit) +
                                   "'s part is not known to its progress process (freed before a flush?)"));
    // The core's one bounds rule, as the progress processes apply it to
    // every command (the world team: id 0).
    auto check = [&](std::uint64_t offset, std::size_t size) {
      if (std::string problem = bounds_problem(what.c_str(), 0, run.segment, h.unit, offset, size, part);
          !problem.empty())
        throw Error(problem);
    };
    // (no stripe locks: comm.fp_locks is off with progress processes)
    apply_run(run, p, base, nullptr, check, [&](std::uint64_t bits) { replies_.push_back(bits); });
  });
  ++batches_;
  std::uint64_t& applied = ++applied_[{origin, h.unit}];
  if (!replies_.empty()) {
    // One run of replies, in the order of the requests.
    const BatchHeader back{static_cast<std::uint32_t>(replies_.size()), h.unit, 0};
    RunHeader run = kReplyRun;
    run.count = static_cast<std::uint32_t>(replies_.size());
    const std::size_t bytes = kHeader + sizeof run + replies_.size() * 8;
    MPI_Request* req = nullptr;
    char* buf = send_buffer(bytes, &req);
    std::memcpy(buf, &back, kHeader);
    std::memcpy(buf + kHeader, &run, sizeof run);
    std::memcpy(buf + kHeader + sizeof run, replies_.data(), replies_.size() * 8);
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

CommState::CommState() = default;
CommState::~CommState() = default;

Aggregator* aggregator_of(const Team& team) noexcept {
  CommState* cs = comm_state_if_any();
  const auto id = static_cast<std::size_t>(team.id());
  return cs && id < cs->aggregators.size() ? cs->aggregators[id].get() : nullptr;
}

void ensure_aggregator(Team& team) {
  if (aggregator_of(team)) return;
  CoreState& st = core();
  const auto id = static_cast<std::size_t>(team.id());
  if (st.comm->aggregators.size() <= id) st.comm->aggregators.resize(id + 1);
  st.comm->aggregators[id] = std::make_unique<Aggregator>(team, st.settings->aggregate);
  st.segments.set_aggregator(team.id(), st.comm->aggregators[id].get());
}

void drop_aggregator(const Team& team) {
  CoreState& st = core();
  const auto id = static_cast<std::size_t>(team.id());
  st.segments.set_aggregator(team.id(), nullptr);
  if (id < st.comm->aggregators.size()) st.comm->aggregators[id].reset();
}

}  // namespace locus::detail
