// Halo exchange on the staging path (comm.staging; locus/staging.hpp).
//
// The field is touched only by kernels: a pack kernel gathers the boundary
// faces into a contiguous buffer in the app's memory space, which is copied
// into a host segment; the strategy moves the packed faces between host
// segments; the received faces are copied back into the app's space and an
// unpack kernel scatters them into the ghosts. Every strategy keeps its
// transport and synchronisation:
//   p2p            MPI_Irecv / MPI_Isend of the packed faces
//   rma            pack, barrier, MPI_Get of the neighbours' packed faces
//                  (Direction::put: MPI_Put into their receive buffers),
//                  barrier
//   locus-barrier  the same through the locus core (memcpy on one node)
//   locus          notified: the owner packs, then announces the face with
//                  its `ready` flag (the step number); the fetcher waits for
//                  its neighbours only and gets the face (a transfer plan;
//                  faces from other nodes follow comm.remote, and one that
//                  travels as a message needs no flag)
//   locus-nb       the same, split phase: begin() announces and starts the
//                  gets, end() completes them and unpacks
// Packed faces sit in slots, one per face 2 * d + side, in the same order
// in the send and receive buffers. The notified send buffer alternates by
// step parity (the argument of NotifiedHalo in halo.cpp: the owner repacks
// the buffer of step s at s + 2, after its neighbours announced s + 1,
// which they do after fetching s). The field's own faces never travel, so
// in-place updates need no `done` flag.
#include "grid/halo_staged.hpp"

#include <mpi.h>

#include <atomic>

#include "grid/halo_split.hpp"
#include "locus/counts.hpp"
#include "locus/error.hpp"
#include "locus/kokkos.hpp"
#include "locus/plan.hpp"
#include "locus/rma.hpp"
#include "locus/staging.hpp"
#include "locus/wait.hpp"

namespace locus::detail {

namespace {

// Elements of a face in dimension d of a block.
std::size_t face_size(const std::array<long, 3>& n, int d) {
  std::size_t e = 1;
  for (int k = 0; k < 3; ++k)
    if (k != d) e *= static_cast<std::size_t>(n[k]);
  return e;
}

// Offset of a face slot in one packed buffer of a block.
std::size_t slot_start(const std::array<long, 3>& n, int slot) {
  std::size_t off = 0;
  for (int q = 0; q < slot; ++q) off += face_size(n, q / 2);
  return off;
}

enum class Transport { two_sided, one_sided, notified };

template <class T>
class StagedHalo : public SplitHalo<T> {
 public:
  StagedHalo(const CartDecomp& dc, const BlockShape& shape, Team& team, std::string name, Transport transport,
             Route route, bool nonblocking, const HaloOptions& o)
      : SplitHalo<T>(std::move(name), nonblocking),
        team_(team),
        comm_(dc.comm()),
        transport_(transport),
        route_(route),
        put_(o.direction == Direction::put) {
    per_buffer_ = slot_start(shape.n, 6);
    const std::size_t parities = transport == Transport::notified ? 2 : 1;
    send_ = StagingBuffer<T>(team, parities * per_buffer_, "locus::halo_send");
    recv_ = StagingBuffer<T>(team, per_buffer_, "locus::halo_recv");
    std::vector<PlanEntry> remote[2];
    for (int d = 0; d < 3; ++d)
      for (int side = 0; side < 2; ++side) {
        const int nb = dc.neighbor(d, side ? +1 : -1);
        if (nb == MPI_PROC_NULL) continue;
        const BlockShape other{dc.neighbor_local(d, side ? +1 : -1), shape.g};
        Face f;
        f.unit = nb;
        f.slot = 2 * d + side;
        f.their_slot = 2 * d + (1 - side);
        f.layout = face_layout(shape, d);
        f.ghost_offset = face_offset(shape, d, side ? shape.n[d] + 1 : 0);
        f.boundary_offset = face_offset(shape, d, side ? shape.n[d] : 1);
        f.elements = face_size(shape.n, d);
        f.my_slot = slot_start(shape.n, f.slot);
        f.their_slot_offset = slot_start(other.n, f.their_slot);
        f.their_buffer = slot_start(other.n, 6);
        faces_.push_back(f);
        for (std::size_t parity = 0; parity < parities; ++parity)
          remote[parity].push_back(
              PlanEntry{nb, Side::contiguous(f.my_slot, f.elements),
                        Side::contiguous(parity * f.their_buffer + f.their_slot_offset, f.elements)});
      }
    if (transport == Transport::notified) {
      flags_ = Array<std::uint64_t>(team, 6);
      std::fill(flags_.data(), flags_.data() + flags_.size(), 0);
      // Faces from other nodes follow comm.remote, as the direct notified
      // halo's do: a face that travels as a message needs no ready flag.
      for (std::size_t parity = 0; parity < 2; ++parity)
        plans_[parity] = GetPlan<T>(send_.gptr(), remote[parity], route_, RemoteMode::deck);
      for (Face& f : faces_) f.message = plans_[0].message(f.unit);
    }
    requests_.resize(2 * faces_.size());
    // Nobody announces (or transfers) before every unit has its buffers
    // and zeroed flags.
    barrier(team);
  }

 private:
  using detail::SplitHalo<T>::nonblocking_;
  struct Face {
    int unit = -1;
    int slot = 0, their_slot = 0;  // 2 * d + side, seen from me and from the neighbour
    bool message = false;          // notified: travels as a two-sided message (comm.remote)
    Layout layout;
    std::size_t ghost_offset = 0, boundary_offset = 0, elements = 0;
    std::size_t my_slot = 0;            // my slot in my send and receive buffers
    std::size_t their_slot_offset = 0;  // the neighbour's slot facing me, in its send and receive buffers
    std::size_t their_buffer = 0;       // elements of one of the neighbour's buffers
  };

  // Boundary faces -> send buffer (parity half) -> host segment.
  void pack(GridFieldT<T>& field, std::size_t parity) {
    T* packed = send_.device() + parity * per_buffer_;
    for (const Face& f : faces_)
      face_kernel<T>("locus::halo_stage_pack", field.data() + f.boundary_offset, f.layout, packed + f.my_slot,
                     true);
    Kokkos::fence();
    send_.to_host(parity * per_buffer_, per_buffer_);
  }

  // Host segment -> receive buffer -> ghost faces.
  void unpack(GridFieldT<T>& field) {
    recv_.to_device();
    for (const Face& f : faces_)
      face_kernel<T>("locus::halo_stage_unpack", field.data() + f.ghost_offset, f.layout,
                     recv_.device() + f.my_slot, false);
    Kokkos::fence();
  }

  void start(GridFieldT<T>& field) override {
    const std::uint64_t s = ++step_;
    const std::size_t parity = transport_ == Transport::notified ? s % 2 : 0;
    pack(field, parity);
    switch (transport_) {
      case Transport::two_sided:
        post_messages();
        break;
      case Transport::one_sided:
        barrier(team_);
        transfer_one_sided();
        break;
      case Transport::notified:
        std::atomic_thread_fence(std::memory_order_release);
        for (const Face& f : faces_)
          if (!f.message) notify(flags_.gptr(f.unit) + f.their_slot, s);
        if (nonblocking_) fetch(s);
        break;
    }
  }

  void finish(GridFieldT<T>& field) override {
    switch (transport_) {
      case Transport::two_sided:
        wait_all_yielding(requests_);
        break;
      case Transport::one_sided:
        // Every transfer of this step is complete before anybody unpacks
        // or repacks its buffers.
        barrier(team_);
        break;
      case Transport::notified:
        if (!nonblocking_) fetch(step_);
        plans_[step_ % 2].wait();
        break;
    }
    unpack(field);
  }

  // Counted (counts.hpp) at the sender: a message per face, its bytes by
  // where the neighbour is (the one-sided transports count in the core).
  void post_messages() {
    std::size_t r = 0;
    // A face sent towards +d arrives at the neighbour's -d ghost: tagged by
    // the direction of travel, as P2PHalo does.
    for (const Face& f : faces_)
      MPI_Irecv(recv_.host() + f.my_slot, static_cast<int>(f.elements), mpi_type<T>(), f.unit, f.their_slot,
                comm_, &requests_[r++]);
    for (const Face& f : faces_) {
      MPI_Isend(send_.host() + f.my_slot, static_cast<int>(f.elements), mpi_type<T>(), f.unit, f.slot, comm_,
                &requests_[r++]);
      count_bytes(team_.same_node(f.unit), f.elements * sizeof(T));
    }
    locus::count(Count::messages, faces_.size());
  }

  void transfer_one_sided() {
    for (const Face& f : faces_) {
      if (put_)
        put(recv_.gptr(f.unit) + static_cast<std::ptrdiff_t>(f.their_slot_offset), send_.host() + f.my_slot,
            f.elements, route_);
      else
        get(recv_.host() + f.my_slot, send_.gptr(f.unit) + static_cast<std::ptrdiff_t>(f.their_slot_offset),
            f.elements, route_);
    }
  }

  void fetch(std::uint64_t s) {
    for (const Face& f : faces_)
      if (!f.message) wait_notify(flags_.data() + f.slot, s);
    plans_[s % 2].start(recv_.host());
  }

  Team& team_;
  MPI_Comm comm_;
  Transport transport_;
  Route route_;
  bool put_;
  std::size_t per_buffer_ = 0;
  StagingBuffer<T> send_, recv_;
  Array<std::uint64_t> flags_;  // notified: ready flag per face slot
  GetPlan<T> plans_[2];         // notified: the gets of each step parity
  std::vector<Face> faces_;
  std::vector<MPI_Request> requests_;
  std::uint64_t step_ = 0;
};

}  // namespace

template <class T>
std::unique_ptr<HaloExchange<T>> make_staged_halo(const std::string& strategy, const CartDecomp& decomp,
                                                  const BlockShape& shape, Team& team, const HaloOptions& o) {
  if (strategy == "p2p")
    return std::make_unique<StagedHalo<T>>(decomp, shape, team, strategy, Transport::two_sided,
                                           Route::automatic, false, o);
  if (strategy == "rma")
    return std::make_unique<StagedHalo<T>>(decomp, shape, team, strategy, Transport::one_sided, Route::mpi,
                                           false, o);
  if (strategy == "locus-barrier")
    return std::make_unique<StagedHalo<T>>(decomp, shape, team, strategy, Transport::one_sided,
                                           Route::automatic, false, o);
  if (strategy == "locus")
    return std::make_unique<StagedHalo<T>>(decomp, shape, team, strategy, Transport::notified, Route::local,
                                           false, o);
  if (strategy == "locus-nb")
    return std::make_unique<StagedHalo<T>>(decomp, shape, team, strategy, Transport::notified,
                                           Route::automatic, true, o);
  throw Error("comm.halo: unknown strategy '" + strategy + "'");
}

template std::unique_ptr<HaloExchange<float>> make_staged_halo<float>(const std::string&, const CartDecomp&,
                                                                      const BlockShape&, Team&,
                                                                      const HaloOptions&);
template std::unique_ptr<HaloExchange<double>> make_staged_halo<double>(const std::string&, const CartDecomp&,
                                                                        const BlockShape&, Team&,
                                                                        const HaloOptions&);

}  // namespace locus::detail
