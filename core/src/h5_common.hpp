#pragma once
// Internal: what the HDF5 writer (io_output.cpp) and reader (io_input.cpp)
// share: identifiers closed with their owner, error checks, the MPI-IO file
// access, and a rank's block in memory and in the file.
#include <hdf5.h>
#include <mpi.h>

#include <string>

#include "locus/decomp.hpp"
#include "locus/error.hpp"
#include "locus/field.hpp"

namespace locus::h5 {

// HDF5 identifiers closed with their owner.
class Id {
 public:
  Id(hid_t id, herr_t (*close)(hid_t), const std::string& what) : id_(id), close_(close) {
    if (id_ < 0) throw Error("HDF5: " + what + " failed");
  }
  ~Id() {
    if (id_ >= 0) close_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id_; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// Throws Error("HDF5: WHAT failed") when STATUS is negative.
void check(herr_t status, const std::string& what);
// Before the first file: no HDF5 clean-up at exit, no HDF5 error stack dumps.
void quiet_hdf5();
// A file access property list for the MPI-IO driver over COMM.
Id open_access(MPI_Comm comm);
// The interior of a rank's block in the field array and in the file. The
// file space has `ndims` dimensions (z dropped for 2D); memory is always the
// stored 3D block.
void select_block(const CartDecomp& dc, const BlockShape& s, int ndims, hid_t filespace, hid_t memspace);
// The stored 3D block (with ghosts) as a memory space.
Id memory_space(const BlockShape& s);
// The block shape of a field of ghost width 1.
BlockShape shape_of(const HostField3D& f);

}  // namespace locus::h5
