// The HDF5 reader: H5Input (checkpoints), with collective errors naming
// file and dataset.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "h5_common.hpp"
#include "locus/app.hpp"
#include "locus/io.hpp"

namespace locus {

namespace {

using h5::check;
using h5::Id;
using h5::memory_space;
using h5::open_access;
using h5::quiet_hdf5;
using h5::select_block;
using h5::shape_of;

// The HDF5 error stack of the last failed call, as one line ("" if empty).
std::string hdf5_errors() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
        auto* t = static_cast<std::string*>(data);
        if (e->desc && *e->desc) *t += std::string(t->empty() ? "" : "; ") + e->desc;
        return 0;
      },
      &text);
  return text;
}

Id collective_transfer() {
  Id dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
  check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio");
  return Id(H5Pcopy(dxpl), H5Pclose, "H5Pcopy");
}

}  // namespace

// ---------------------------------------------------------------- input

H5Input::H5Input(MPI_Comm comm, const std::string& path) : comm_(comm), path_(path) {
  quiet_hdf5();
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // stat, not open: a FIFO would block; a directory or device is no file
  std::string problem;
  if (rank == 0) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      problem =
          errno == ENOENT ? path + ": no such file" : path + ": cannot open (" + std::strerror(errno) + ")";
    else if (!S_ISREG(st.st_mode))
      problem = path + ": not a regular file (" +
                (S_ISDIR(st.st_mode) ? "a directory" : "a FIFO, device or socket") + "); give an HDF5 file";
  }
  collective_require(comm, problem.empty(), problem);
  Id fapl = open_access(comm);
  file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl);
  collective_require(comm, file_ >= 0, path + ": not an HDF5 file (or unreadable)");
}

H5Input::~H5Input() {
  if (file_ >= 0 && collective_cleanup_allowed()) H5Fclose(file_);
}

bool H5Input::has(const std::string& name) const {
  return H5Lexists(file_, name.c_str(), H5P_DEFAULT) > 0;
}

namespace {
// "float64" when the dataset's type is a 64-bit IEEE float, else its kind.
std::string float64_or_kind(hid_t dset) {
  Id t(H5Dget_type(dset), H5Tclose, "H5Dget_type");
  const H5T_class_t cls = H5Tget_class(t);
  const std::size_t size = H5Tget_size(t);
  if (cls == H5T_FLOAT && size == 8) return "float64";
  if (cls == H5T_FLOAT) return "float" + std::to_string(8 * size);
  if (cls == H5T_INTEGER) return "int" + std::to_string(8 * size);
  if (cls == H5T_STRING) return "string";
  return "a non-numeric type";
}
}  // namespace

void H5Input::read_field(const std::string& name, HostField3D& f, const CartDecomp& dc) {
  collective_require(comm_, has(name), path_ + ": has no dataset " + name);
  Id dset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose, "opening " + name);
  {
    const std::string kind = float64_or_kind(dset);
    collective_require(comm_, kind == "float64", path_ + ": " + name + " is " + kind + ", expected float64");
  }
  Id filespace(H5Dget_space(dset), H5Sclose, "H5Dget_space");
  hsize_t dims[3] = {0, 0, 0};
  int rank = H5Sget_simple_extent_ndims(filespace);
  if (rank == 3) H5Sget_simple_extent_dims(filespace, dims, nullptr);
  const auto& g = dc.global();
  bool same = rank == 3 && dims[0] == hsize_t(g[2]) && dims[1] == hsize_t(g[1]) && dims[2] == hsize_t(g[0]);
  std::ostringstream msg;
  msg << path_ << ": " << name << " is " << dims[2] << "x" << dims[1] << "x" << dims[0]
      << " but the run's grid is " << g[0] << "x" << g[1] << "x" << g[2];
  collective_require(comm_, same, msg.str());
  const BlockShape shape = shape_of(f);
  Id memspace = memory_space(shape);
  select_block(dc, shape, 3, filespace, memspace);
  // Independent reads: a rank whose chunk fails its checksum returns alone,
  // with no collective left waiting for it; the verdict is collective below.
  Id dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
  check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT), "H5Pset_dxpl_mpio");
  const herr_t st = H5Dread(dset, H5T_NATIVE_DOUBLE, memspace, filespace, dxpl, f.data());
  std::string why;
  if (st < 0) {
    const std::string stack = hdf5_errors();
    why = stack.find("Fletcher32") != std::string::npos || stack.find("checksum") != std::string::npos
              ? "its Fletcher32 checksum does not match: the file is damaged"
              : "damaged file?" + (stack.empty() ? std::string() : " HDF5: " + stack.substr(0, 200));
  }
  collective_require(comm_, st >= 0, path_ + ": reading dataset " + name + " failed (" + why + ")");
}

std::vector<double> H5Input::read_vector(const std::string& name, std::size_t max_elements) {
  collective_require(comm_, has(name), path_ + ": has no dataset " + name);
  Id dset(H5Dopen2(file_, name.c_str(), H5P_DEFAULT), H5Dclose, "opening " + name);
  {
    const std::string kind = float64_or_kind(dset);
    collective_require(comm_, kind == "float64", path_ + ": " + name + " is " + kind + ", expected float64");
  }
  Id space(H5Dget_space(dset), H5Sclose, "H5Dget_space");
  hssize_t n = H5Sget_simple_extent_npoints(space);
  collective_require(comm_, n >= 0 && static_cast<std::size_t>(n) <= max_elements,
                     path_ + ": " + name + " has " + std::to_string(n) + " elements, more than the " +
                         std::to_string(max_elements) + " it may have");
  std::vector<double> v(static_cast<std::size_t>(n));
  if (n == 0) return v;
  Id dxpl = collective_transfer();
  const herr_t st = H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dxpl, v.data());
  collective_require(comm_, st >= 0, path_ + ": reading " + name + " failed (damaged file?)");
  return v;
}

namespace {
template <class T>
T read_scalar_attr(MPI_Comm comm, hid_t file, const std::string& path, const std::string& name, hid_t type) {
  bool ok = H5Aexists(file, name.c_str()) > 0;
  collective_require(comm, ok, path + ": has no attribute " + name);
  Id attr(H5Aopen(file, name.c_str(), H5P_DEFAULT), H5Aclose, "opening attribute " + name);
  // the stored type must be the same kind (a number) and a scalar
  Id stored(H5Aget_type(attr), H5Tclose, "H5Aget_type");
  Id space(H5Aget_space(attr), H5Sclose, "H5Aget_space");
  const H5T_class_t want = H5Tget_class(type), have = H5Tget_class(stored);
  const bool scalar = H5Sget_simple_extent_npoints(space) == 1;
  collective_require(comm, want == have && scalar,
                     path + ": attribute " + name + " is not a single " +
                         (want == H5T_FLOAT ? "floating-point number" : "integer"));
  T v{};
  const herr_t st = H5Aread(attr, type, &v);
  collective_require(comm, st >= 0, path + ": reading attribute " + name + " failed (damaged file?)");
  return v;
}
}  // namespace

double H5Input::real_attribute(const std::string& name) {
  return read_scalar_attr<double>(comm_, file_, path_, name, H5T_NATIVE_DOUBLE);
}

long H5Input::integer_attribute(const std::string& name) {
  return read_scalar_attr<long>(comm_, file_, path_, name, H5T_NATIVE_LONG);
}

std::string H5Input::string_attribute(const std::string& name) {
  bool ok = H5Aexists(file_, name.c_str()) > 0;
  collective_require(comm_, ok, path_ + ": has no attribute " + name);
  Id attr(H5Aopen(file_, name.c_str(), H5P_DEFAULT), H5Aclose, "opening attribute " + name);
  {
    Id stored(H5Aget_type(attr), H5Tclose, "H5Aget_type");
    collective_require(comm_, H5Tget_class(stored) == H5T_STRING && H5Tis_variable_str(stored) > 0,
                       path_ + ": attribute " + name + " is not a text attribute");
  }
  Id type(H5Tcopy(H5T_C_S1), H5Tclose, "H5Tcopy");
  check(H5Tset_size(type, H5T_VARIABLE), "H5Tset_size");
  check(H5Tset_cset(type, H5T_CSET_UTF8), "H5Tset_cset");
  char* p = nullptr;
  check(H5Aread(attr, type, &p), "reading attribute " + name);
  std::string s = p ? p : "";
  H5free_memory(p);
  return s;
}

}  // namespace locus
