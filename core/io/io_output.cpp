// The HDF5 writer: H5Output (one run's output, written to NAME.h5.tmp and
// renamed at commit).
#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "io/h5_common.hpp"
#include "io/reaper.hpp"
#include "locus/collective.hpp"
#include "locus/io.hpp"
#include "locus/version.hpp"
#include "locus/wait.hpp"

namespace fs = std::filesystem;

namespace locus {

namespace {

using h5::check;
using h5::Id;
using h5::memory_space;
using h5::open_access;
using h5::quiet_hdf5;
using h5::select_block;

void remember(char* slot, const std::string& path) {
  if (path.size() < 4095) {
    std::memcpy(slot, path.c_str(), path.size() + 1);
  } else {
    slot[0] = 0;
  }
}

void write_attr(hid_t obj, const std::string& name, hid_t type, hid_t space, const void* data) {
  if (H5Aexists(obj, name.c_str()) > 0) check(H5Adelete(obj, name.c_str()), "H5Adelete " + name);
  Id attr(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
          "creating attribute " + name);
  check(H5Awrite(attr, type, data), "writing attribute " + name);
}

template <class T>
hid_t native_type();
template <>
hid_t native_type<float>() {
  return H5T_NATIVE_FLOAT;
}
template <>
hid_t native_type<double>() {
  return H5T_NATIVE_DOUBLE;
}

// The outputs this process has committed: a run's own earlier checkpoint
// is not "replaced" (no note for it; issue 53).
std::set<std::string>& committed_paths() {
  static std::set<std::string> paths;
  return paths;
}

std::string absolute_path(const std::string& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(fs::path(p), ec);
  return ec ? p : a.lexically_normal().string();
}

// N values of 8 bytes each as little-endian bytes (what an attribute's
// checksum covers: h5::attribute_bytes).
std::string le64_bytes(const void* values, std::size_t n) {
  std::string out;
  const auto* p = static_cast<const unsigned char*>(values);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t v = 0;
    std::memcpy(&v, p + 8 * i, 8);
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xFFu));
  }
  return out;
}

// Every dataset that is not a field is chunked with Fletcher32 too (a
// restart's residual, spmv's vectors, timers): one chunk per dataset,
// halved along its longest extent while above kChunkBytes. An empty
// dataset holds nothing to check and stays contiguous.
Id checked_chunks(int ndims, const hsize_t* dims, std::size_t elem);

// Fields are chunked and carry HDF5's Fletcher32 checksum per chunk, so a
// damaged file (a flipped byte in a restart) is an error when read, not
// silently wrong data. A chunk is one rank's block (the largest of the
// decomposition: ceil(global / procs)), halved along its longest extent
// while above kChunkBytes, so that the filter's buffer per chunk stays
// small; every rank computes the same layout (dataset creation is
// collective).
constexpr double kChunkBytes = 16.0 * 1024 * 1024;

Id checked_layout(const CartDecomp& dc, int ndims, std::size_t elem) {
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
  const auto& g = dc.global();
  const auto& p = dc.procs();
  hsize_t chunk[3];
  for (int d = 0; d < 3; ++d) {
    const long procs = std::max(1, p[d]);
    chunk[2 - d] = hsize_t(std::max(1L, (g[d] + procs - 1) / procs));
  }
  const int skip = 3 - ndims;
  auto bytes = [&] {
    double b = double(elem);
    for (int i = skip; i < 3; ++i) b *= double(chunk[i]);
    return b;
  };
  while (bytes() > kChunkBytes) {
    int longest = skip;
    for (int i = skip; i < 3; ++i)
      if (chunk[i] > chunk[longest]) longest = i;
    if (chunk[longest] <= 1) break;
    chunk[longest] = (chunk[longest] + 1) / 2;
  }
  check(H5Pset_chunk(dcpl, ndims, chunk + skip), "H5Pset_chunk");
  check(H5Pset_fletcher32(dcpl), "H5Pset_fletcher32");
  // every element is written: no fill pass
  check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  return Id(H5Pcopy(dcpl), H5Pclose, "H5Pcopy");
}

Id checked_chunks(int ndims, const hsize_t* dims, std::size_t elem) {
  Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose, "H5Pcreate");
  std::vector<hsize_t> chunk(dims, dims + ndims);
  bool empty = ndims == 0;
  for (hsize_t d : chunk) empty = empty || d == 0;
  if (empty) return Id(H5Pcopy(dcpl), H5Pclose, "H5Pcopy");
  auto bytes = [&] {
    double b = double(elem);
    for (hsize_t c : chunk) b *= double(c);
    return b;
  };
  while (bytes() > kChunkBytes) {
    auto longest = std::max_element(chunk.begin(), chunk.end());
    if (*longest <= 1) break;
    *longest = (*longest + 1) / 2;
  }
  check(H5Pset_chunk(dcpl, ndims, chunk.data()), "H5Pset_chunk");
  check(H5Pset_fletcher32(dcpl), "H5Pset_fletcher32");
  check(H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  return Id(H5Pcopy(dcpl), H5Pclose, "H5Pcopy");
}

}  // namespace

// ---------------------------------------------------------------- output

H5Output::H5Output(MPI_Comm comm, const std::string& path, bool overwrite)
    : comm_(comm), path_(path), tmp_(path + ".tmp") {
  quiet_hdf5();
  MPI_Comm_rank(comm, &rank_);
  std::string problem;
  if (rank_ == 0) {
    std::error_code ec;
    fs::path parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) {
      problem = "output: cannot create directory " + parent.string() + " (" + ec.message() + ")";
    } else {
      // One run per output: the first holds a lock on NAME.h5.lock until it
      // commits or fails, so a second run with the same output is refused
      // before any work (the lock dies with its process; a lock file left
      // by a killed run is taken over).
      lock_ = path + ".lock";
      lock_fd_ = ::open(lock_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
      if (lock_fd_ < 0) {
        problem = "output: cannot create " + lock_ + " (" + std::strerror(errno) + ")";
      } else if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        problem = "output: another run is writing " + path + " right now (it holds " + lock_ +
                  "); wait for it or choose another output.dir/output.name";
        ::close(lock_fd_);
        lock_fd_ = -1;
      } else {
        remember(detail::g_output_lock, lock_);
        // The watcher first: from here on a kill -9 leaves files (the lock
        // now, NAME.h5.tmp soon), and HDF5's file creation below takes a
        // while (checkpoints run this often: killed in between, they left
        // their .lock).
        spawn_reaper();
        if (const char* hold = std::getenv("LOCUS_TEST_HOLD_LOCK_MS"); hold && *hold)
          ::usleep(static_cast<useconds_t>(std::atol(hold)) * 1000);  // tests: a kill lands here
        const bool exists = fs::exists(path, ec);
        if (ec)
          problem = "output: cannot use " + path + " (" + ec.message() + ")";
        else if (exists && fs::is_directory(path, ec))
          problem = "output: " + path + " is a directory; choose another output.name";
        else if (exists && !overwrite)
          problem = "output: " + path +
                    " exists; set output.overwrite: true (or --set output.overwrite=true) to replace it, "
                    "or choose another output.dir/output.name";
        else if (fs::is_directory(tmp_, ec))
          problem = "output: " + tmp_ + " is a directory; remove it or choose another output.name";
        else
          fs::remove(tmp_, ec);  // a stale file from a killed run
        // never silently: say which file this run replaces, once, and not
        // for a file this run wrote itself (its own earlier checkpoint)
        if (problem.empty() && exists && committed_paths().insert(absolute_path(path)).second)
          std::fprintf(stderr, "note: this run replaces %s (output.overwrite: true)\n", path.c_str());
      }
    }
    if (!problem.empty()) release_lock();
  }
  collective_require(comm, problem.empty(), problem);
  Id fapl = open_access(comm);
  file_ = H5Fcreate(tmp_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  // every rank knows the paths: whichever rank a signal reaches first
  // removes the unfinished output (the launcher may kill the others)
  if (file_ >= 0) {
    remember(detail::g_output_tmp, tmp_);
    remember(detail::g_output_lock, path + ".lock");
  }
  if (file_ < 0 && rank_ == 0) release_lock();
  collective_require(comm, file_ >= 0, "output: cannot create " + tmp_ + " (" + std::strerror(errno) + ")");
  xfer_ = H5Pcreate(H5P_DATASET_XFER);
  check(H5Pset_dxpl_mpio(xfer_, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
}

H5Output::~H5Output() {
  if (committed_) return;
  // Closing is collective: only safe when every rank is here. A local error
  // is followed by MPI_Abort; then rank 0 still removes NAME.h5.tmp (never
  // NAME.h5 exists) before the job ends.
  if (collective_cleanup_allowed() && !broken_) {
    if (xfer_ >= 0) H5Pclose(xfer_);
    if (file_ >= 0) H5Fclose(file_);
  }
  if (broken_) detail::g_output_abandoned = true;
  if (rank_ == 0) {
    std::remove(tmp_.c_str());
    release_lock();
  }
  detail::g_output_tmp[0] = 0;
  detail::g_output_lock[0] = 0;
}

void H5Output::ensure_space(double bytes, const std::string& name) {
  // HDF5 1.10 does not survive a write that fails on some ranks only (the
  // others stay inside MPI-IO collectives): check the space first.
  double avail = -1;
  if (rank_ == 0) {
    struct statvfs fs {};
    const std::string dir = fs::path(tmp_).parent_path().string();
    if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) == 0)
      avail = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  }
  locus::yielding::bcast(&avail, 1, MPI_DOUBLE, 0, comm_);
  const double need = bytes + 256.0 * 1024;  // the data and room for metadata
  char text[160];
  std::snprintf(text, sizeof text, "needs %.1f MiB more, the file system has %.1f MiB free", need / 1048576.0,
                avail / 1048576.0);
  collective_require(
      comm_, avail < 0 || avail >= need,
      "output: writing " + name + " to " + tmp_ + ": " + text + "; nothing was written under " + path_);
}

void H5Output::written(herr_t status, const std::string& name) {
  const int err = errno;
  std::string why = status < 0 ? std::string(std::strerror(err)) : std::string();
  int bad = status < 0 ? 1 : 0, any = 0;
  locus::yielding::allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm_);
  // After a failed write HDF5's close runs different collectives on
  // different ranks (one flushes metadata, another truncates) and hangs:
  // such a file is abandoned, not closed.
  if (any) broken_ = true;
  collective_require(comm_, status >= 0,
                     "output: writing " + name + " to " + tmp_ + " failed (" + why +
                         "; is the file system full or read-only?); nothing was written under " + path_);
}

hid_t H5Output::created(hid_t dset, const std::string& name) {
  // the space was checked: a creation that fails all the same (the disk
  // filled meanwhile) is one collective error, and the file is abandoned
  const int err = errno;
  int bad = dset < 0 ? 1 : 0, any = 0;
  locus::yielding::allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, comm_);
  if (any) {
    broken_ = true;
    if (dset >= 0) H5Dclose(dset);
    collective_require(comm_, false,
                       "output: creating " + name + " in " + tmp_ + " failed (" +
                           (bad ? std::string(std::strerror(err)) : std::string("on another rank")) +
                           "; is the file system full?); nothing was written under " + path_);
  }
  return dset;
}

hid_t H5Output::object(const std::string& name) const {
  if (name.empty()) return H5Oopen(file_, "/", H5P_DEFAULT);
  return H5Oopen(file_, name.c_str(), H5P_DEFAULT);
}

// Attributes are metadata, which parallel HDF5 needs identical on every
// rank (else its close runs mismatched collectives and hangs): every
// attribute writes rank 0's value.
void H5Output::attribute(const std::string& obj, const std::string& name, const std::string& given) {
  std::string value = given;
  long long len = static_cast<long long>(value.size());
  locus::yielding::bcast(&len, 1, MPI_LONG_LONG, 0, comm_);
  value.resize(static_cast<std::size_t>(len));
  locus::yielding::bcast(value.data(), static_cast<int>(len), MPI_CHAR, 0, comm_);
  Id o(object(obj), H5Oclose, "opening " + obj);
  Id type(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  check(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset");
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
  const char* p = value.c_str();
  write_attr(o, name, type, space, &p);
  remember_checksum(obj, name, value);
}

void H5Output::remember_checksum(const std::string& obj, const std::string& name, const std::string& bytes) {
  attribute_crc_[{obj.empty() ? "/" : obj, name}] = h5::crc32(bytes.data(), bytes.size());
}

namespace {
// A scalar attribute of `obj` with rank 0's value (VALUE becomes it).
template <class T>
void scalar_attribute(hid_t obj, const std::string& name, T& value, MPI_Datatype mpi, hid_t h5,
                      MPI_Comm comm) {
  locus::yielding::bcast(&value, 1, mpi, 0, comm);
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
  write_attr(obj, name, h5, space, &value);
}
}  // namespace

void H5Output::attribute(const std::string& obj, const std::string& name, double value) {
  Id o(object(obj), H5Oclose, "opening " + obj);
  scalar_attribute(o, name, value, MPI_DOUBLE, H5T_NATIVE_DOUBLE, comm_);
  remember_checksum(obj, name, le64_bytes(&value, 1));
}

void H5Output::attribute(const std::string& obj, const std::string& name, long value) {
  Id o(object(obj), H5Oclose, "opening " + obj);
  scalar_attribute(o, name, value, MPI_LONG, H5T_NATIVE_LONG, comm_);
  const std::int64_t v = value;
  remember_checksum(obj, name, le64_bytes(&v, 1));
}

void H5Output::attribute(const std::string& obj, const std::string& name, const std::vector<double>& given) {
  std::vector<double> v = given;
  long long len = static_cast<long long>(v.size());
  locus::yielding::bcast(&len, 1, MPI_LONG_LONG, 0, comm_);
  v.resize(static_cast<std::size_t>(len));
  locus::yielding::bcast(v.data(), static_cast<int>(len), MPI_DOUBLE, 0, comm_);
  Id o(object(obj), H5Oclose, "opening " + obj);
  hsize_t n = v.size();
  Id space(H5Screate_simple(1, &n, nullptr), H5Sclose, "H5Screate_simple");
  write_attr(o, name, H5T_NATIVE_DOUBLE, space, v.data());
  remember_checksum(obj, name, le64_bytes(v.data(), v.size()));
}

void H5Output::write_block(const std::string& name, const void* data, hid_t type, const BlockShape& shape,
                           const CartDecomp& dc, int ndims) {
  if (ndims != 2 && ndims != 3) throw Error("output: " + name + ": ndims must be 2 or 3");
  const auto& g = dc.global();
  if (ndims == 2 && g[2] != 1) throw Error("output: " + name + ": a 2D dataset needs a grid of z extent 1");
  hsize_t dims[3] = {hsize_t(g[2]), hsize_t(g[1]), hsize_t(g[0])};
  const int skip = 3 - ndims;
  // the space first: parallel HDF5 allocates a dataset's chunks when it
  // creates it, and a creation that fails on a full disk is no clean error
  ensure_space(double(dims[0]) * double(dims[1]) * double(dims[2]) * double(H5Tget_size(type)), name);
  Id filespace(H5Screate_simple(ndims, dims + skip, nullptr), H5Sclose, "H5Screate_simple");
  Id dcpl = checked_layout(dc, ndims, H5Tget_size(type));
  Id dset(created(H5Dcreate2(file_, name.c_str(), type, filespace, H5P_DEFAULT, dcpl, H5P_DEFAULT), name),
          H5Dclose, "creating dataset " + name);
  Id memspace = memory_space(shape);
  select_block(dc, shape, ndims, filespace, memspace);
  written(H5Dwrite(dset, type, memspace, filespace, xfer_, data), name);
}

template <class T>
void H5Output::write_field(const std::string& name, const GridFieldT<T>& f, const CartDecomp& dc, int ndims) {
  const auto h = host_copy(f);  // the field itself on a host build
  write_block(name, h.data(), native_type<T>(), f.shape(), dc, ndims);
}

template void H5Output::write_field<float>(const std::string&, const GridFieldT<float>&, const CartDecomp&,
                                           int);
template void H5Output::write_field<double>(const std::string&, const GridFieldT<double>&, const CartDecomp&,
                                            int);

std::int64_t H5Output::create_dataset(const std::string& name, const std::vector<std::uint64_t>& extents,
                                      std::int64_t type) {
  const std::vector<hsize_t> dims(extents.begin(), extents.end());
  const std::size_t elem = H5Tget_size(type);
  double n = 1;
  for (hsize_t d : dims) n *= double(d);
  ensure_space(double(elem) * n, name);
  Id filespace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
               "H5Screate_simple");
  Id dcpl = checked_chunks(static_cast<int>(dims.size()), dims.data(), elem);
  return created(H5Dcreate2(file_, name.c_str(), type, filespace, H5P_DEFAULT, dcpl, H5P_DEFAULT), name);
}

std::int64_t H5Output::create_doubles(const std::string& name, const std::vector<std::uint64_t>& extents) {
  return create_dataset(name, extents, H5T_NATIVE_DOUBLE);
}

void H5Output::write_root_vector(const std::string& name, const std::vector<double>& v) {
  unsigned long long n = v.size();
  locus::yielding::bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, comm_);
  write_root_array(name, v, {static_cast<std::uint64_t>(n)});
}

void H5Output::write_root_vector(const std::string& name, const std::vector<std::int64_t>& v) {
  unsigned long long n = v.size();
  locus::yielding::bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, comm_);
  Id dset(create_dataset(name, {static_cast<std::uint64_t>(n)}, H5T_STD_I64LE), H5Dclose,
          "creating dataset " + name);
  write_root_data(dset, name, H5T_NATIVE_INT64, v.data(), {static_cast<std::uint64_t>(n)});
}

void H5Output::write_root_array(const std::string& name, const std::vector<double>& v,
                                const std::vector<std::uint64_t>& extents) {
  std::uint64_t n = 1;
  for (std::uint64_t d : extents) n *= d;
  if (rank_ == 0 && v.size() != n)
    throw Error("output: " + name + ": " + std::to_string(v.size()) + " values for a dataset of " +
                std::to_string(n));
  Id dset(create_doubles(name, extents), H5Dclose, "creating dataset " + name);
  write_root_data(dset, name, H5T_NATIVE_DOUBLE, v.data(), extents);
}

void H5Output::write_root_data(std::int64_t dset, const std::string& name, std::int64_t memtype,
                               const void* data, const std::vector<std::uint64_t>& extents) {
  const std::vector<hsize_t> dims(extents.begin(), extents.end());
  hsize_t n = 1;
  for (hsize_t d : dims) n *= d;
  Id filespace(H5Dget_space(dset), H5Sclose, "H5Dget_space");
  Id memspace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose,
              "H5Screate_simple");
  if (rank_ != 0 || n == 0) {
    H5Sselect_none(filespace);
    H5Sselect_none(memspace);
  }
  if (n > 0) written(H5Dwrite(dset, memtype, memspace, filespace, xfer_, data), name);
}

void H5Output::write_distributed(const std::string& name, const double* data, std::uint64_t count,
                                 std::uint64_t offset, std::uint64_t global) {
  Id dset(create_doubles(name, {global}), H5Dclose, "creating dataset " + name);
  Id filespace(H5Dget_space(dset), H5Sclose, "H5Dget_space");
  hsize_t start = offset, n = count;
  Id memspace(H5Screate_simple(1, &n, nullptr), H5Sclose, "H5Screate_simple");
  if (count == 0) {
    H5Sselect_none(filespace);
    H5Sselect_none(memspace);
  } else {
    check(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, &start, nullptr, &n, nullptr), "hyperslab");
  }
  if (global > 0) written(H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, xfer_, data), name);
}

void H5Output::write_rank_rows(const std::string& name, const std::vector<double>& row) {
  int size = 1;
  MPI_Comm_size(comm_, &size);
  Id dset(create_doubles(name, {static_cast<std::uint64_t>(size), row.size()}), H5Dclose,
          "creating dataset " + name);
  Id filespace(H5Dget_space(dset), H5Sclose, "H5Dget_space");
  hsize_t start[2] = {hsize_t(rank_), 0}, count[2] = {1, row.size()};
  check(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, start, nullptr, count, nullptr), "hyperslab");
  Id memspace(H5Screate_simple(2, count, nullptr), H5Sclose, "H5Screate_simple");
  if (!row.empty()) written(H5Dwrite(dset, H5T_NATIVE_DOUBLE, memspace, filespace, xfer_, row.data()), name);
}

void H5Output::write_checksum_record() {
  std::string text;
  for (const auto& [key, crc] : attribute_crc_) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(crc));
    text += key.first + "\t" + key.second + "\t" + hex + "\n";
  }
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(h5::crc32(text.data(), text.size())));
  text += std::string("record\t") + hex + "\n";
  Id root(object(""), H5Oclose, "opening /");
  Id type(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  check(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset");
  Id space(H5Screate(H5S_SCALAR), H5Sclose, "H5Screate");
  const char* p = text.c_str();
  write_attr(root, h5::kAttributeChecksums, type, space, &p);
}

void H5Output::commit() {
  // every attribute's checksum (the same text on every rank: every value
  // is rank 0's)
  write_checksum_record();
  H5Pclose(xfer_);
  xfer_ = -1;
  herr_t st = H5Fclose(file_);
  file_ = -1;
  const int err = errno;
  if (st < 0) broken_ = true;
  if (st < 0 && rank_ == 0) std::remove(tmp_.c_str());  // the destructor removes it too; be explicit
  collective_require(comm_, st >= 0,
                     "output: writing " + tmp_ + " failed at close (" + std::strerror(err) +
                         "; is the file system full?); nothing was written under " + path_);
  std::string problem;
  if (rank_ == 0) {
    if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
      problem = "output: cannot rename " + tmp_ + " to " + path_ + " (" + std::strerror(errno) + ")";
      std::remove(tmp_.c_str());
    }
    release_lock();
  }
  detail::g_output_tmp[0] = 0;
  detail::g_output_lock[0] = 0;
  committed_ = true;
  collective_require(comm_, problem.empty(), problem);
  if (rank_ == 0) committed_paths().insert(absolute_path(path_));
}

}  // namespace locus
