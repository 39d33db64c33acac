#pragma once
// Internal: what the HDF5 writer (io_output.cpp) and reader (io_input.cpp)
// share: identifiers closed with their owner, error checks, the MPI-IO file
// access, and a rank's block in memory and in the file.
#include <hdf5.h>
#include <mpi.h>

#include <cstddef>
#include <cstdint>
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

// CRC-32 (zlib's: Python's zlib.crc32 gives the same value) of N bytes,
// continuing from CRC.
std::uint32_t crc32(const void* data, std::size_t n, std::uint32_t crc = 0);
// The root attribute holding the CRC-32 of every other attribute a locus
// output carries (docs/outputs.md, "Checksums"): lines "OBJECT<TAB>NAME<TAB>
// crc32 in hex", OBJECT "/" for the root group, then "record<TAB>" and the
// CRC-32 of the lines before it.
inline constexpr const char* kAttributeChecksums = "attribute_checksums";
// An attribute's value as the bytes its checksum covers: a text as its
// UTF-8 bytes, numbers as little-endian float64 (floating point) or int64
// (integers), element after element. Returns false (and says why in WHY)
// for a type locus does not write or an unreadable value.
bool attribute_bytes(hid_t attr, std::string& bytes, std::string& why);

}  // namespace locus::h5
