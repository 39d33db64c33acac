// The HDF5 reader: H5Input (checkpoints), with collective errors naming
// file and dataset.
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "io/h5_common.hpp"
#include "locus/collective.hpp"
#include "locus/io.hpp"
#include "locus/wait.hpp"

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

// Independent reads: a rank whose chunk fails its checksum returns alone,
// with no collective left waiting for it; the verdict is collective after.
Id independent_transfer() {
  Id dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose, "H5Pcreate");
  check(H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_INDEPENDENT), "H5Pset_dxpl_mpio");
  return Id(H5Pcopy(dxpl), H5Pclose, "H5Pcopy");
}

// Why a dataset read failed, from HDF5's error stack.
std::string read_failure() {
  const std::string stack = hdf5_errors();
  return stack.find("Fletcher32") != std::string::npos || stack.find("checksum") != std::string::npos
             ? "its Fletcher32 checksum does not match: the file is damaged"
             : "damaged file?" + (stack.empty() ? std::string() : " HDF5: " + stack.substr(0, 200));
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
  Id dxpl = independent_transfer();
  const herr_t st = H5Dread(dset, H5T_NATIVE_DOUBLE, memspace, filespace, dxpl, f.data());
  const std::string why = st < 0 ? read_failure() : std::string();
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
  Id dxpl = independent_transfer();
  const herr_t st = H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dxpl, v.data());
  const std::string why = st < 0 ? read_failure() : std::string();
  collective_require(comm_, st >= 0, path_ + ": reading dataset " + name + " failed (" + why + ")");
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

namespace {
std::string crc_hex(std::uint32_t crc) {
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(crc));
  return hex;
}

// What is wrong with FILE's attributes against their checksum record, ""
// when every one matches (h5_common.hpp: kAttributeChecksums).
std::string attribute_problem(hid_t file, const std::string& path) {
  const std::string damaged = " (the file is damaged)";
  if (H5Aexists(file, h5::kAttributeChecksums) <= 0)
    return path + ": has no attribute " + std::string(h5::kAttributeChecksums) +
           " (not a complete locus output, written before checksums, or damaged)";
  std::string record, why;
  {
    const hid_t a = H5Aopen(file, h5::kAttributeChecksums, H5P_DEFAULT);
    const bool ok = a >= 0 && h5::attribute_bytes(a, record, why);
    if (a >= 0) H5Aclose(a);
    if (!ok)
      return path + ": reading attribute " + std::string(h5::kAttributeChecksums) + " failed" + damaged;
  }
  // the record's own last line covers the lines before it
  const std::size_t last = record.rfind("record\t");
  if (last == std::string::npos || (last > 0 && record[last - 1] != '\n') ||
      record.substr(last) != "record\t" + crc_hex(h5::crc32(record.data(), last)) + "\n")
    return path + ": attribute " + std::string(h5::kAttributeChecksums) + " does not match its own checksum" +
           damaged;
  std::istringstream lines(record.substr(0, last));
  std::string line;
  while (std::getline(lines, line)) {
    const std::size_t t1 = line.find('\t'), t2 = line.rfind('\t');
    if (t1 == std::string::npos || t2 == t1) return path + ": attribute_checksums: bad line '" + line + "'";
    const std::string obj = line.substr(0, t1), name = line.substr(t1 + 1, t2 - t1 - 1),
                      crc = line.substr(t2 + 1);
    const std::string label = (obj == "/" ? "attribute " : "attribute " + obj + "/") + name;
    if (H5Lexists(file, obj.c_str(), H5P_DEFAULT) <= 0 && obj != "/") return path + ": has no dataset " + obj;
    const hid_t o = H5Oopen(file, obj.c_str(), H5P_DEFAULT);
    if (o < 0) return path + ": cannot open " + obj + damaged;
    std::string bytes;
    bool ok = H5Aexists(o, name.c_str()) > 0;
    if (!ok) {
      H5Oclose(o);
      return path + ": has no " + label;
    }
    const hid_t a = H5Aopen(o, name.c_str(), H5P_DEFAULT);
    ok = a >= 0 && h5::attribute_bytes(a, bytes, why);
    if (a >= 0) H5Aclose(a);
    H5Oclose(o);
    if (!ok) return path + ": reading " + label + " failed (" + why + ")" + damaged;
    if (crc_hex(h5::crc32(bytes.data(), bytes.size())) != crc)
      return path + ": " + label + " does not match its checksum" + damaged;
  }
  return "";
}
}  // namespace

void H5Input::verify_attributes() {
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  std::string problem = rank == 0 ? attribute_problem(file_, path_) : std::string();
  long long len = static_cast<long long>(problem.size());
  locus::yielding::bcast(&len, 1, MPI_LONG_LONG, 0, comm_);
  problem.resize(static_cast<std::size_t>(len));
  locus::yielding::bcast(problem.data(), static_cast<int>(len), MPI_CHAR, 0, comm_);
  collective_require(comm_, problem.empty(), problem);
}

}  // namespace locus
