#pragma once
// Parallel HDF5 output (mpio driver) and input (checkpoints).
//
// An H5Output is written as NAME.h5.tmp and renamed to NAME.h5 by commit(),
// so an aborted run never leaves a half-written file under the final name;
// a failed or terminated run removes the .tmp. An existing NAME.h5 is an
// error unless overwrite is set, and while a run writes NAME.h5 it holds a
// lock on NAME.h5.lock, so a second run with the same output is refused.
#include <mpi.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "locus/decomp.hpp"
#include "locus/field.hpp"

namespace locus {

class H5Output {
 public:
  // Collective. Creates the directory if needed. Throws CollectiveError when
  // the file exists and !overwrite, or cannot be created.
  H5Output(MPI_Comm comm, const std::string& path, bool overwrite);
  ~H5Output();
  H5Output(const H5Output&) = delete;
  H5Output& operator=(const H5Output&) = delete;

  // All collective, with the same arguments on every rank. `object` is ""
  // for the file's root group, else a dataset name.
  void attribute(const std::string& object, const std::string& name, const std::string& value);
  void attribute(const std::string& object, const std::string& name, double value);
  void attribute(const std::string& object, const std::string& name, long value);
  void attribute(const std::string& object, const std::string& name, const std::vector<double>& v);

  // The interior of every rank's block, into one global (nz, ny, nx) dataset
  // (any ghost width; float or double, stored as such); ndims 2 writes a
  // (ny, nx) dataset of a grid whose z extent is 1. A field whose memory
  // space the host cannot address is copied to the host first.
  template <class T>
  void write_field(const std::string& name, const GridFieldT<T>& f, const CartDecomp& dc, int ndims = 3);
  // A vector only rank 0 holds (other ranks pass anything; its size is taken
  // from rank 0).
  void write_root_vector(const std::string& name, const std::vector<double>& v);
  // The same for counts and indices: a 64-bit signed integer dataset.
  void write_root_vector(const std::string& name, const std::vector<std::int64_t>& v);
  // A 1D dataset of `global` elements of which this rank holds `count`
  // starting at `offset` (the ranks' pieces tile it; a rank may hold none):
  // a distributed vector such as spmv's y, written collectively.
  void write_distributed(const std::string& name, const double* data, std::uint64_t count,
                         std::uint64_t offset, std::uint64_t global);
  // An N-d array only rank 0 holds (row-major, `dims` on every rank; other
  // ranks pass anything).
  void write_root_array(const std::string& name, const std::vector<double>& v,
                        const std::vector<std::uint64_t>& dims);
  // One row per rank: a (ranks x row.size()) dataset.
  void write_rank_rows(const std::string& name, const std::vector<double>& row);

  // Collective: closes the file and renames NAME.h5.tmp to NAME.h5.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::int64_t object(const std::string& name) const;
  void write_block(const std::string& name, const void* data, std::int64_t type, const BlockShape& shape,
                   const CartDecomp& dc, int ndims);
  void release_lock();
  void spawn_reaper();
  // Collective: a failed write is one CollectiveError with the path and errno.
  void written(int status, const std::string& name);
  // Collective: DSET, or (a creation failed on some rank) one
  // CollectiveError; the file is then abandoned.
  std::int64_t created(std::int64_t dset, const std::string& name);
  // A dataset of doubles of these extents, chunked with checksums, the
  // space checked first (collective); its id, for the caller to close.
  std::int64_t create_doubles(const std::string& name, const std::vector<std::uint64_t>& extents);
  // The same for any HDF5 type (its size sets the chunks and the space).
  std::int64_t create_dataset(const std::string& name, const std::vector<std::uint64_t>& extents,
                              std::int64_t type);
  // Rank 0's data of `extents` into DSET (other ranks select nothing).
  void write_root_data(std::int64_t dset, const std::string& name, std::int64_t memtype, const void* data,
                       const std::vector<std::uint64_t>& extents);
  // The CRC-32 of an attribute's value (h5::attribute_bytes), and the
  // record of them all written at commit (docs/outputs.md, Checksums).
  void remember_checksum(const std::string& obj, const std::string& name, const std::string& bytes);
  void write_checksum_record();
  // Collective: the file system has room for `bytes` more (else one
  // CollectiveError saying how much it needs and has).
  void ensure_space(double bytes, const std::string& name);
  MPI_Comm comm_;
  int rank_ = 0;
  std::string path_, tmp_, lock_;
  int lock_fd_ = -1;
  pid_t reaper_ = 0;  // the watcher that removes a killed run's files
  std::int64_t file_ = -1;
  std::int64_t xfer_ = -1;
  bool committed_ = false;
  bool broken_ = false;  // a write failed: the file is abandoned, not closed
  std::map<std::pair<std::string, std::string>, std::uint32_t> attribute_crc_;  // (object, name) -> CRC-32
};

class H5Input {
 public:
  // Collective. Throws CollectiveError when the file cannot be opened.
  H5Input(MPI_Comm comm, const std::string& path);
  ~H5Input();
  H5Input(const H5Input&) = delete;
  H5Input& operator=(const H5Input&) = delete;

  bool has(const std::string& name) const;
  // Collective: every attribute against the CRC-32 the writer recorded
  // (attribute_checksums); a missing record or a mismatch is one
  // CollectiveError naming the file and the attribute.
  void verify_attributes();
  // Collective. Throws CollectiveError when the dataset's shape differs from
  // the decomposition's global grid.
  void read_field(const std::string& name, HostField3D& f, const CartDecomp& dc);
  // Collective. A dataset that is not float64, or longer than
  // max_elements, is a CollectiveError (before anything is allocated).
  std::vector<double> read_vector(const std::string& name, std::size_t max_elements = std::size_t(1) << 26);
  double real_attribute(const std::string& name);
  long integer_attribute(const std::string& name);
  std::string string_attribute(const std::string& name);

 private:
  MPI_Comm comm_;
  std::string path_;
  std::int64_t file_ = -1;
};

// ParaView-readable XDMF for a (nz, ny, nx) dataset on a uniform grid, or a
// (ny, nx) one with ndims 2 (dims[2], origin[2] and spacing[2] unused).
// `precision` is the element size in bytes (4 or 8). Written by rank 0
// (tmp + rename). xyz order for dims, origin, spacing. `more`: further
// datasets of the same shape on the same grid (e.g. poisson5pt's error).
std::string write_xdmf(const std::string& xmf_path, const std::string& h5_file, const std::string& dataset,
                       const std::array<long, 3>& dims, const std::array<double, 3>& origin,
                       const std::array<double, 3>& spacing, double time, int ndims = 3, int precision = 8,
                       const std::vector<std::string>& more = {});
// The same, throwing Error on failure.
void write_xdmf_file(const std::string& xmf_path, const std::string& h5_file, const std::string& dataset,
                     const std::array<long, 3>& dims, const std::array<double, 3>& origin,
                     const std::array<double, 3>& spacing, double time, int ndims = 3, int precision = 8,
                     const std::vector<std::string>& more = {});

}  // namespace locus
