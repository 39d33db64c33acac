#include "locus/halo.hpp"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <map>

#include "grid/halo_split.hpp"
#include "grid/halo_staged.hpp"
#include "locus/counts.hpp"
#include "locus/datatype.hpp"
#include "locus/error.hpp"
#include "locus/kokkos.hpp"
#include "locus/plan.hpp"
#include "locus/rma.hpp"
#include "locus/segment.hpp"
#include "locus/staging.hpp"
#include "locus/wait.hpp"
#include "xfer/transfer.hpp"

namespace locus {

namespace {

// One face of the local block (with ghosts) as a subarray type. `layer` is
// the index along dimension d: 0 or n+1 for ghosts, 1 or n for the faces sent.
template <class T>
Datatype face_type(const BlockShape& s, int d, long layer) {
  // Array order (z, y, x); dimension d of the grid is array axis 2 - d.
  int sizes[3], sub[3], start[3];
  for (int k = 0; k < 3; ++k) {
    sizes[2 - k] = static_cast<int>(s.extent(k));
    sub[2 - k] = static_cast<int>(s.n[k]);
    start[2 - k] = static_cast<int>(s.g[k]);
  }
  sub[2 - d] = 1;
  start[2 - d] = static_cast<int>(layer);
  MPI_Datatype t;
  MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, detail::mpi_type<T>(), &t);
  return Datatype(t);
}

// Elements of a face in dimension d of a block (the interior of the other
// two dimensions).
std::size_t face_elements(const std::array<long, 3>& n, int d) {
  std::size_t e = 1;
  for (int k = 0; k < 3; ++k)
    if (k != d) e *= static_cast<std::size_t>(n[k]);
  return e;
}

// MPI two-sided: non-blocking receives into the ghost faces and sends of the
// boundary faces, described by subarray datatypes (no packing copies).
// Message matching orders the exchanges, so no barrier is needed.
// Counted (counts.hpp) at the sender: one message per face, its bytes by
// where the neighbour is (the decomposition's ranks are the team's units).
template <class T>
class P2PHalo : public HaloExchange<T> {
 public:
  P2PHalo(const CartDecomp& dc, const BlockShape& shape, const Team& team) : comm_(dc.comm()) {
    for (int d = 0; d < 3; ++d) {
      long n = shape.n[d];
      for (int side = 0; side < 2; ++side) {
        int nb = dc.neighbor(d, side ? +1 : -1);
        if (nb == MPI_PROC_NULL) continue;
        Face f;
        f.neighbor = nb;
        f.send = face_type<T>(shape, d, side ? n : 1);
        f.recv = face_type<T>(shape, d, side ? n + 1 : 0);
        // A face sent towards +d arrives at the neighbour's -d ghost: tag by
        // the direction of travel so the two faces of one pair never mix.
        f.send_tag = 2 * d + side;
        f.recv_tag = 2 * d + (1 - side);
        (team.same_node(nb) ? on_node_ : off_node_) += face_elements(shape.n, d) * sizeof(T);
        faces_.push_back(std::move(f));
      }
    }
    requests_.resize(2 * faces_.size());
  }

  void exchange(GridFieldT<T>& field) override {
    T* base = field.data();
    std::size_t r = 0;
    for (const auto& f : faces_)
      MPI_Irecv(base, 1, f.recv.get(), f.neighbor, f.recv_tag, comm_, &requests_[r++]);
    for (const auto& f : faces_)
      MPI_Isend(base, 1, f.send.get(), f.neighbor, f.send_tag, comm_, &requests_[r++]);
    locus::count(Count::messages, faces_.size());
    locus::count(Count::bytes_on_node, on_node_, Count::bytes_off_node, off_node_);
    wait_all_yielding(requests_);
  }

  std::string name() const override { return "p2p"; }

 private:
  struct Face {
    int neighbor = MPI_PROC_NULL;
    Datatype send, recv;
    int send_tag = 0, recv_tag = 0;
  };
  MPI_Comm comm_;
  std::vector<Face> faces_;
  std::vector<MPI_Request> requests_;
  std::uint64_t on_node_ = 0, off_node_ = 0;  // bytes sent per exchange
};

// One-sided: every unit gets its ghost faces from its neighbours' boundary
// faces, or puts its boundary faces into its neighbours' ghosts; the
// barriers are explained in halo.hpp.
template <class T>
class OneSidedHalo : public HaloExchange<T> {
 public:
  OneSidedHalo(const CartDecomp& dc, const BlockShape& shape, Team& team, std::string name, Route route,
               bool nonblocking, const HaloOptions& o)
      : team_(team),
        name_(std::move(name)),
        route_(route),
        nonblocking_(nonblocking),
        put_(o.direction == Direction::put) {
    const auto& n = shape.n;
    for (int d = 0; d < 3; ++d)
      for (int side = 0; side < 2; ++side) {
        int dir = side ? +1 : -1;
        int nb = dc.neighbor(d, dir);
        if (nb == MPI_PROC_NULL) continue;
        const BlockShape other{dc.neighbor_local(d, dir), shape.g};
        const auto& m = other.n;
        Face f;
        f.unit = nb;
        if (put_) {
          // My boundary layer on this side lands in the neighbour's ghost
          // layer on the other side.
          f.local_offset = face_offset(shape, d, side ? n[d] : 1);
          f.remote_offset = face_offset(other, d, side ? 0 : m[d] + 1);
        } else {
          // My ghost layer on this side is the neighbour's boundary layer on
          // the other side.
          f.local_offset = face_offset(shape, d, side ? n[d] + 1 : 0);
          f.remote_offset = face_offset(other, d, side ? 1 : m[d]);
        }
        f.local = face_layout(shape, d);
        f.remote = face_layout(other, d);
        faces_.push_back(f);
      }
    // Always a barrier first: nobody still reads (or, before the first
    // exchange, initialises) what the transfers overwrite.
    barrier_after_ = o.in_place || put_;
    handles_.reserve(faces_.size());
  }

  void exchange(GridFieldT<T>& field) override {
    start(field);
    finish();
  }

  void begin(GridFieldT<T>& field) override {
    if (nonblocking_)
      start(field);
    else
      exchange(field);
  }

  void end(GridFieldT<T>&) override {
    if (nonblocking_) finish();
  }

  bool split_phase() const override { return nonblocking_; }

  std::string name() const override { return name_; }

 private:
  void finish() {
    if (nonblocking_) wait_all(handles_);
    if (barrier_after_) barrier(team_);
  }

  void start(GridFieldT<T>& field) {
    barrier(team_);
    T* base = field.data();
    handles_.clear();
    for (const auto& f : faces_) {
      GlobalPtr<T> remote = field.gptr(f.unit) + static_cast<std::ptrdiff_t>(f.remote_offset);
      T* local = base + f.local_offset;
      if (put_) {
        if (nonblocking_)
          handles_.push_back(put_async(remote, f.remote, local, f.local, route_));
        else
          put(remote, f.remote, local, f.local, route_);
      } else {
        if (nonblocking_)
          handles_.push_back(get_async(local, f.local, remote, f.remote, route_));
        else
          get(local, f.local, remote, f.remote, route_);
      }
    }
  }

  struct Face {
    int unit = -1;
    std::size_t local_offset = 0, remote_offset = 0;
    Layout local, remote;
  };
  Team& team_;
  std::string name_;
  Route route_;
  bool nonblocking_;
  bool put_;
  bool barrier_after_ = false;
  std::vector<Face> faces_;
  std::vector<Handle> handles_;
};

// Notified one-sided halos: every unit waits only for its neighbours.
//
// Every face is fetched by the unit whose ghosts it fills, once its owner
// has announced it with the face's `ready` flag (the step number, growing,
// never reset; one flag per face of the fetching unit):
//   same node  the owner announces on entering the exchange (its boundary
//              layer is final, its ghosts are no longer read); the fetcher
//              copies the boundary layer straight into its ghost layer
//   remote     the owner packs the face into its send segment, then
//              announces; the fetcher gets it as one contiguous transfer
//              (an MPI_Rget on the segment window: complete when its
//              request is, no flush, no derived datatype on the wire) and
//              unpacks it into its ghosts; with comm.remote message or
//              auto the pair may instead exchange the packed faces as
//              two-sided messages (no flag: the arrival announces)
//   direct     a remote face whose pair routes as messages and which is
//              one contiguous run (a row of a 2D grid), or whose runs are
//              64 bytes or more under comm.remote_faces: direct (the
//              default), goes as a message (an MPI datatype) straight from
//              the owner's boundary layer into the fetcher's ghosts, with
//              no pack, unpack or flag
// The fetches are transfer plans built from the decomposition: one per
// field for the same-node faces (field segment -> ghosts), one per field
// for the direct faces, and one per step parity for the packed remote
// faces (send segment -> receive buffer).
// Send buffers alternate by step parity: the owner repacks the buffer of
// step s at step s + 2 only, after it has fetched its neighbour's faces of
// step s + 1, which the neighbour announces after it has fetched step s.
// In-place updates (Gauss-Seidel) also exchange a `done` flag with
// same-node neighbours at the end (they overwrite the faces just read);
// double-buffered updates do not need it: the next `ready` covers it.
// A face that is one run in the field (a row of a 2D grid) always goes
// direct. Faces of several runs follow comm.remote_faces. Which of direct
// and packed is faster depends on the MPI library's datatype path and, on
// this project's host, on its state: heat3d's 128 KiB z faces (128 rows of
// 1 KiB) between emulated nodes with MPICH 4.0 took 34-36 us direct against
// 43-44 us packed (p2p 36-37) in one state, and 106-112 us direct against
// 55-65 us packed (p2p 107-114) in the other. Direct is the default because
// it costs what p2p costs in both.
bool contiguous(const Layout& l) {
  return l.count * l.rows == 1 || (l.stride == l.block && (l.rows == 1 || l.row_stride == l.block * l.count));
}

// comm.remote_faces: direct (the default) sends faces of several runs as
// datatypes too, those whose runs are a cache line or more (a 3D block's x
// faces, one element per run, stay packed: a datatype with an entry per
// element costs more than the pack).
bool direct_rows(const Layout& l, std::size_t esize) {
  return Runtime::current().settings().remote.faces == RemoteFaces::direct && l.block * esize >= 64;
}

template <class T>
class NotifiedHalo : public detail::SplitHalo<T> {
 public:
  NotifiedHalo(const CartDecomp& dc, const BlockShape& shape, Team& team, std::string name, bool nonblocking,
               const HaloOptions& o)
      : detail::SplitHalo<T>(std::move(name), nonblocking),
        in_place_(o.in_place),
        route_(nonblocking ? Route::automatic : Route::local) {
    const std::size_t per_buffer = slot_offset(shape.n, 6);
    flags_ = Array<std::uint64_t>(team, 2 * 6);
    std::fill(flags_.data(), flags_.data() + flags_.size(), 0);
    send_ = Array<T>(team, 2 * per_buffer);
    send_elements_ = per_buffer;
    // Bytes per exchange with each unit of another node (all faces to it):
    // what decides the pair's route, as a plan decides it (message_route).
    std::map<int, double> remote_bytes;
    for (int d = 0; d < 3; ++d)
      for (int side = 0; side < 2; ++side) {
        const int nb = dc.neighbor(d, side ? +1 : -1);
        if (nb != MPI_PROC_NULL && !send_.gptr(nb).is_local())
          remote_bytes[nb] += static_cast<double>(face_elements(shape.n, d) * sizeof(T));
      }
    std::vector<PlanEntry> remote[2];
    for (int d = 0; d < 3; ++d)
      for (int side = 0; side < 2; ++side) {
        const int dir = side ? +1 : -1;
        const int nb = dc.neighbor(d, dir);
        if (nb == MPI_PROC_NULL) continue;
        const BlockShape other{dc.neighbor_local(d, dir), shape.g};
        Face f;
        f.unit = nb;
        f.slot = 2 * d + side;
        f.their_slot = 2 * d + (1 - side);
        f.layout = face_layout(shape, d);
        f.ghost_offset = face_offset(shape, d, side ? shape.n[d] + 1 : 0);
        f.boundary_offset = face_offset(shape, d, side ? shape.n[d] : 1);
        f.my_slot_offset = slot_offset(shape.n, f.slot);
        f.local = send_.gptr(nb).is_local();
        const PlanEntry in_place{
            nb, Side::strided(f.ghost_offset, f.layout),
            Side::strided(face_offset(other, d, side ? 1 : other.n[d]), face_layout(other, d))};
        if (f.local) {
          local_entries_.push_back(in_place);
        } else if (message_route(team.id(), nb, remote_bytes[nb]) &&
                   (contiguous(f.layout) || direct_rows(f.layout, sizeof(T)))) {
          // A message straight from the neighbour's boundary into my ghosts
          // (both sides decide alike: the same faces, the same bytes).
          f.direct = f.message = true;
          direct_entries_.push_back(in_place);
        } else {
          const std::size_t n = face_elements(shape.n, d);
          f.recv_offset = recv_.size();
          recv_.resize(recv_.size() + n);
          for (std::size_t parity = 0; parity < 2; ++parity)
            remote[parity].push_back(PlanEntry{
                nb, Side::contiguous(f.recv_offset, n),
                Side::contiguous(parity * slot_offset(other.n, 6) + slot_offset(other.n, f.their_slot), n)});
        }
        faces_.push_back(f);
      }
    // Packed faces from other nodes follow comm.remote: a face that travels
    // as a message needs no ready flag (its arrival is the announcement).
    // Both parities hold the same faces, so they route alike.
    for (std::size_t parity = 0; parity < 2; ++parity)
      remote_[parity] = GetPlan<T>(send_.gptr(), remote[parity], route_, RemoteMode::deck);
    for (Face& f : faces_)
      if (!f.local && !f.direct) f.message = remote_[0].message(f.unit);
    direct_ = Runtime::current().settings().remote.mode != RemoteMode::rma;
    // Nobody announces before every unit has zeroed its flags.
    barrier(team);
  }

 private:
  using detail::SplitHalo<T>::nonblocking_;
  struct Face {
    int unit = -1;
    int slot = 0, their_slot = 0;  // 2 * d + side, seen from me and from the neighbour
    bool local = false;            // same node (and comm.locality on)
    bool message = false;          // travels as a two-sided message (comm.remote)
    bool direct = false;           // ... between the fields, not packed (direct_plan)
    Layout layout;
    std::size_t ghost_offset = 0, boundary_offset = 0, my_slot_offset = 0, recv_offset = 0;
  };
  enum Flag { ready = 0, done = 6 };

  // Offset (elements) of a face slot in one send buffer of a block.
  static std::size_t slot_offset(const std::array<long, 3>& n, int slot) {
    std::size_t off = 0;
    for (int q = 0; q < slot; ++q) off += face_elements(n, q / 2);
    return off;
  }

  GlobalPtr<std::uint64_t> their_flag(const Face& f, Flag kind) const {
    return flags_.gptr(f.unit) + (kind + f.their_slot);
  }
  const std::uint64_t* my_flag(const Face& f, Flag kind) const { return flags_.data() + kind + f.slot; }

  void prepare(GridFieldT<T>& field) override {
    if (!local_entries_.empty()) local_plan(field);
    direct_plan(field);
  }

  // The same-node plan of a field (fields are segments; a plan per field).
  GetPlan<T>& local_plan(GridFieldT<T>& field) {
    const int key = field.gptr(0).segment;
    auto it = local_.find(key);
    if (it == local_.end()) it = local_.emplace(key, GetPlan<T>(field.gptr(0), local_entries_, route_)).first;
    return it->second;
  }

  // The direct message faces of a field: built by prepare() or on the
  // field's first exchange, collectively (every unit prepares and exchanges
  // the same fields in the same order, with or without such faces), when
  // comm.remote is not rma.
  GetPlan<T>* direct_plan(GridFieldT<T>& field) {
    if (!direct_) return nullptr;
    const int key = field.gptr(0).segment;
    if (key == last_direct_.first) return last_direct_.second;
    auto it = direct_plans_.find(key);
    if (it == direct_plans_.end())
      it = direct_plans_
               .emplace(key, GetPlan<T>(field.gptr(0), direct_entries_, Route::local, RemoteMode::message))
               .first;
    last_direct_ = {key, &it->second};
    return &it->second;
  }

  // Split phase (locus-nb): start() announces and starts the fetches
  // (carried by a progress process when large enough); finish() completes
  // them. The blocking form fetches in finish().
  void start(GridFieldT<T>& field) override {
    const std::uint64_t s = ++step_;
    const std::size_t parity = s % 2;
    T* base = field.data();
    for (const Face& f : faces_)
      if (!f.local && !f.direct)
        detail::face_kernel<T>("locus::halo_pack", base + f.boundary_offset, f.layout,
                               send_.data() + parity * send_elements_ + f.my_slot_offset, true);
    if (!recv_.empty()) Kokkos::fence();  // (packed faces only)
    std::atomic_thread_fence(std::memory_order_release);
    for (const Face& f : faces_)
      if (!f.message) notify(their_flag(f, ready), s);
    if (nonblocking_) fetch(field, s);
  }

  void fetch(GridFieldT<T>& field, std::uint64_t s) {
    for (const Face& f : faces_)
      if (!f.message) wait_notify(my_flag(f, ready), s);
    if (!local_entries_.empty()) local_plan(field).start(field.data());
    if (GetPlan<T>* direct = direct_plan(field)) direct->start(field.data());
    remote_[s % 2].start(recv_.data());
  }

  void finish(GridFieldT<T>& field) override {
    const std::uint64_t s = step_;
    if (!nonblocking_) fetch(field, s);
    if (!local_entries_.empty()) local_plan(field).wait();
    if (GetPlan<T>* direct = direct_plan(field)) direct->wait();
    remote_[s % 2].wait();
    T* base = field.data();
    for (const Face& f : faces_)
      if (!f.local && !f.direct)
        detail::face_kernel<T>("locus::halo_unpack", base + f.ghost_offset, f.layout,
                               recv_.data() + f.recv_offset, false);
    if (!recv_.empty()) Kokkos::fence();
    if (!in_place_) return;
    for (const Face& f : faces_)
      if (f.local) notify(their_flag(f, done), s);
    for (const Face& f : faces_)
      if (f.local) wait_notify(my_flag(f, done), s);
  }

  bool in_place_;
  Route route_;
  Array<std::uint64_t> flags_;
  Array<T> send_;
  std::size_t send_elements_ = 0;
  std::vector<T> recv_;  // remote faces, contiguous, one after another
  std::uint64_t step_ = 0;
  std::vector<Face> faces_;
  std::vector<PlanEntry> local_entries_;
  std::map<int, GetPlan<T>> local_;
  std::vector<PlanEntry> direct_entries_;
  std::map<int, GetPlan<T>> direct_plans_;
  std::pair<int, GetPlan<T>*> last_direct_{-1, nullptr};  // the last field's (a lookup per start and wait)
  bool direct_ = false;
  GetPlan<T> remote_[2];
};

}  // namespace

std::size_t face_offset(const BlockShape& s, int d, long layer) {
  std::array<long, 3> idx = s.g;
  idx[d] = layer;
  return s.offset(idx[0], idx[1], idx[2]);
}

Layout face_layout(const BlockShape& s, int d) {
  const auto nx = static_cast<std::size_t>(s.n[0]), ny = static_cast<std::size_t>(s.n[1]),
             nz = static_cast<std::size_t>(s.n[2]);
  const auto sy = static_cast<std::size_t>(s.extent(0));
  const auto sz = static_cast<std::size_t>(s.extent(0) * s.extent(1));
  Layout l;
  if (d == 2) {  // a z-plane: ny rows of nx
    l.block = nx, l.count = ny, l.stride = sy;
  } else if (d == 1) {  // a y-plane: one row of nx per z-plane
    l.block = nx, l.count = nz, l.stride = sz;
  } else {  // an x-plane: single elements, ny per z-plane, nz planes
    l.block = 1, l.count = ny, l.stride = sy, l.rows = nz, l.row_stride = sz;
  }
  return l;
}

std::size_t face_offset(const std::array<long, 3>& n, int d, long layer) {
  return face_offset(BlockShape{n, {1, 1, 1}}, d, layer);
}

Layout face_layout(const std::array<long, 3>& n, int d) {
  return face_layout(BlockShape{n, {1, 1, 1}}, d);
}

std::vector<std::string> halo_strategies() {
  return {"p2p", "rma", "locus", "locus-nb", "locus-barrier"};
}

Schema& add_halo_key(Schema& s) {
  return s.choice(
      "comm.halo", "locus", halo_strategies(),
      "halo exchange: p2p (MPI two-sided), rma (MPI RMA + barriers), locus (notified one-sided: "
      "each rank waits for its neighbours only), locus-nb (split-phase locus) or locus-barrier (the "
      "DART papers' barrier-synchronised one-sided halo); see docs/user-guide.md");
}

template <class T>
std::unique_ptr<HaloExchange<T>> make_halo(const std::string& strategy, const CartDecomp& decomp, Team& team,
                                           const HaloOptions& options) {
  const BlockShape shape{decomp.local(), options.ghosts};
  for (int d = 0; d < 3; ++d)
    if (decomp.procs()[d] > 1 && shape.g[d] != 1)
      throw Error(std::string("halo: the grid is decomposed in ") + "xyz"[d] +
                  " but the field has no ghost layer there");
  if (staging_active()) return detail::make_staged_halo<T>(strategy, decomp, shape, team, options);
  if (strategy == "p2p") return std::make_unique<P2PHalo<T>>(decomp, shape, team);
  if (strategy == "rma")
    return std::make_unique<OneSidedHalo<T>>(decomp, shape, team, strategy, Route::mpi, false, options);
  if (strategy == "locus-barrier")
    return std::make_unique<OneSidedHalo<T>>(decomp, shape, team, strategy, Route::automatic, false, options);
  if (strategy == "locus")
    return std::make_unique<NotifiedHalo<T>>(decomp, shape, team, strategy, false, options);
  if (strategy == "locus-nb")
    return std::make_unique<NotifiedHalo<T>>(decomp, shape, team, strategy, true, options);
  throw Error("comm.halo: unknown strategy '" + strategy + "'");
}

template std::unique_ptr<HaloExchange<float>> make_halo<float>(const std::string&, const CartDecomp&, Team&,
                                                               const HaloOptions&);
template std::unique_ptr<HaloExchange<double>> make_halo<double>(const std::string&, const CartDecomp&, Team&,
                                                                 const HaloOptions&);

}  // namespace locus
