#include "locus/halo.hpp"

#include <mpi.h>

#include "locus/error.hpp"

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

  void exchange(Field3D& field) override {
    double* base = field.data();
    std::size_t r = 0;
    for (const auto& f : faces_)
      MPI_Irecv(base, 1, f.recv.get(), f.neighbor, f.recv_tag, comm_, &requests_[r++]);
    for (const auto& f : faces_)
      MPI_Isend(base, 1, f.send.get(), f.neighbor, f.send_tag, comm_, &requests_[r++]);
    MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
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

}  // namespace

std::vector<std::string> halo_strategies() {
  return {"p2p"};
}

std::unique_ptr<HaloExchange> make_halo(const std::string& strategy, const CartDecomp& decomp) {
  if (strategy == "p2p") return std::make_unique<P2PHalo>(decomp);
  throw Error("comm.halo: unknown strategy '" + strategy + "'");
}

}  // namespace locus
