#include "locus/halo.hpp"

#include <mpi.h>

#include "locus/error.hpp"
#include "locus/wait.hpp"

namespace locus {

namespace {

// An MPI datatype that is freed with its owner.
class Datatype {
 public:
  Datatype() = default;
  explicit Datatype(MPI_Datatype t) : t_(t) { MPI_Type_commit(&t_); }
  ~Datatype() {
    if (t_ != MPI_DATATYPE_NULL) MPI_Type_free(&t_);
  }
  Datatype(Datatype&& o) noexcept : t_(o.t_) { o.t_ = MPI_DATATYPE_NULL; }
  Datatype& operator=(Datatype&& o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  MPI_Datatype get() const { return t_; }

 private:
  MPI_Datatype t_ = MPI_DATATYPE_NULL;
};

// One face of the local block (with ghosts) as a subarray type. `layer` is
// the index along dimension d: 0 or n+1 for ghosts, 1 or n for the faces sent.
Datatype face_type(const CartDecomp& dc, int d, long layer) {
  const auto& n = dc.local();
  // Array order (z, y, x); dimension d of the grid is array axis 2 - d.
  int sizes[3] = {int(n[2] + 2), int(n[1] + 2), int(n[0] + 2)};
  int sub[3] = {int(n[2]), int(n[1]), int(n[0])};
  int start[3] = {1, 1, 1};
  sub[2 - d] = 1;
  start[2 - d] = static_cast<int>(layer);
  MPI_Datatype t;
  MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &t);
  return Datatype(t);
}

// MPI two-sided: non-blocking receives into the ghost faces and sends of the
// boundary faces, described by subarray datatypes (no packing copies).
class P2PHalo : public HaloExchange {
 public:
  explicit P2PHalo(const CartDecomp& dc) : comm_(dc.comm()) {
    for (int d = 0; d < 3; ++d) {
      long n = dc.local()[d];
      for (int side = 0; side < 2; ++side) {
        int nb = dc.neighbor(d, side ? +1 : -1);
        if (nb == MPI_PROC_NULL) continue;
        Face f;
        f.neighbor = nb;
        f.send = face_type(dc, d, side ? n : 1);
        f.recv = face_type(dc, d, side ? n + 1 : 0);
        // A face sent towards +d arrives at the neighbour's -d ghost: tag by
        // the direction of travel so the two faces of one pair never mix.
        f.send_tag = 2 * d + side;
        f.recv_tag = 2 * d + (1 - side);
        faces_.push_back(std::move(f));
      }
    }
    requests_.resize(2 * faces_.size());
  }

  void exchange(GridField& field) override {
    double* base = field.view().data();
    std::size_t r = 0;
    for (const auto& f : faces_)
      MPI_Irecv(base, 1, f.recv.get(), f.neighbor, f.recv_tag, comm_, &requests_[r++]);
    for (const auto& f : faces_)
      MPI_Isend(base, 1, f.send.get(), f.neighbor, f.send_tag, comm_, &requests_[r++]);
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
};

// One-sided: every unit gets its ghost faces from its neighbours' boundary
// faces. The barrier first makes sure the neighbours finished writing the
// field in the previous step; the gets of this step complete before the
// unit reaches the next step's barrier, so the neighbours cannot overwrite
// the faces while they are read (one barrier per exchange).
class GetHalo : public HaloExchange {
 public:
  GetHalo(const CartDecomp& dc, Team& team, std::string name, Route route, bool nonblocking)
      : team_(team), name_(std::move(name)), route_(route), nonblocking_(nonblocking) {
    const auto& n = dc.local();
    for (int d = 0; d < 3; ++d)
      for (int side = 0; side < 2; ++side) {
        int dir = side ? +1 : -1;
        int nb = dc.neighbor(d, dir);
        if (nb == MPI_PROC_NULL) continue;
        auto m = dc.neighbor_local(d, dir);
        // My ghost layer on this side is the neighbour's boundary layer on
        // the other side.
        Face f;
        f.unit = nb;
        f.local_offset = face_offset(n, d, side ? n[d] + 1 : 0);
        f.remote_offset = face_offset(m, d, side ? 1 : m[d]);
        f.local = face_layout(n, d);
        f.remote = face_layout(m, d);
        faces_.push_back(f);
      }
    handles_.reserve(faces_.size());
  }

  void exchange(GridField& field) override {
    barrier(team_);
    double* base = field.view().data();
    handles_.clear();
    for (const auto& f : faces_) {
      GlobalPtr<double> src = field.gptr(f.unit) + static_cast<std::ptrdiff_t>(f.remote_offset);
      if (nonblocking_)
        handles_.push_back(get_async(base + f.local_offset, f.local, src, f.remote, route_));
      else
        get(base + f.local_offset, f.local, src, f.remote, route_);
    }
    if (nonblocking_) wait_all(handles_);
  }

  std::string name() const override { return name_; }

 private:
  struct Face {
    int unit = -1;
    std::size_t local_offset = 0, remote_offset = 0;
    Layout local, remote;
  };
  Team& team_;
  std::string name_;
  Route route_;
  bool nonblocking_;
  std::vector<Face> faces_;
  std::vector<Handle> handles_;
};

}  // namespace

std::size_t face_offset(const std::array<long, 3>& n, int d, long layer) {
  const std::size_t sy = static_cast<std::size_t>(n[0] + 2);
  const std::size_t sz = static_cast<std::size_t>((n[0] + 2) * (n[1] + 2));
  std::size_t idx[3] = {1, 1, 1};
  idx[d] = static_cast<std::size_t>(layer);
  return idx[2] * sz + idx[1] * sy + idx[0];
}

Layout face_layout(const std::array<long, 3>& n, int d) {
  const auto nx = static_cast<std::size_t>(n[0]), ny = static_cast<std::size_t>(n[1]),
             nz = static_cast<std::size_t>(n[2]);
  const std::size_t sy = nx + 2, sz = (nx + 2) * (ny + 2);
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

std::vector<std::string> halo_strategies() {
  return {"p2p", "rma", "locus", "locus-nb"};
}

std::unique_ptr<HaloExchange> make_halo(const std::string& strategy, const CartDecomp& decomp, Team& team) {
  if (strategy == "p2p") return std::make_unique<P2PHalo>(decomp);
  if (strategy == "rma") return std::make_unique<GetHalo>(decomp, team, strategy, Route::mpi, false);
  if (strategy == "locus") return std::make_unique<GetHalo>(decomp, team, strategy, Route::automatic, false);
  if (strategy == "locus-nb")
    return std::make_unique<GetHalo>(decomp, team, strategy, Route::automatic, true);
  throw Error("comm.halo: unknown strategy '" + strategy + "'");
}

}  // namespace locus
