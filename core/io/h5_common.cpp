#include "io/h5_common.hpp"

#include <array>
#include <cstring>
#include <vector>

namespace locus::h5 {

void check(herr_t status, const std::string& what) {
  if (status < 0) throw Error("HDF5: " + what + " failed");
}

void quiet_hdf5() {
  // No HDF5 clean-up at exit: every output is closed (or, after a failed
  // write, deliberately abandoned) by locus; HDF5's own exit handler would
  // try to close an abandoned file again, and hang or crash.
  static const bool once = [] {
    H5dont_atexit();
    return true;
  }();
  (void)once;
  // Errors become locus::Error messages; HDF5's own stack dump only adds noise.
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Id open_access(MPI_Comm comm) {
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "H5Pcreate");
  check(H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
  return Id(H5Pcopy(fapl), H5Pclose, "H5Pcopy");
}

void select_block(const CartDecomp& dc, const BlockShape& s, int ndims, hid_t filespace, hid_t memspace) {
  const auto& n = dc.local();
  const auto& o = dc.offset();
  hsize_t count[3] = {hsize_t(n[2]), hsize_t(n[1]), hsize_t(n[0])};
  hsize_t fstart[3] = {hsize_t(o[2]), hsize_t(o[1]), hsize_t(o[0])};
  hsize_t mstart[3] = {hsize_t(s.g[2]), hsize_t(s.g[1]), hsize_t(s.g[0])};
  const int skip = 3 - ndims;
  check(H5Sselect_hyperslab(filespace, H5S_SELECT_SET, fstart + skip, nullptr, count + skip, nullptr),
        "file hyperslab");
  check(H5Sselect_hyperslab(memspace, H5S_SELECT_SET, mstart, nullptr, count, nullptr), "memory hyperslab");
}

Id memory_space(const BlockShape& s) {
  hsize_t m[3] = {hsize_t(s.extent(2)), hsize_t(s.extent(1)), hsize_t(s.extent(0))};
  return Id(H5Screate_simple(3, m, nullptr), H5Sclose, "H5Screate_simple");
}

BlockShape shape_of(const HostField3D& f) {
  return BlockShape{{long(f.extent(2)) - 2, long(f.extent(1)) - 2, long(f.extent(0)) - 2}, {1, 1, 1}};
}

std::uint32_t crc32(const void* data, std::size_t n, std::uint32_t crc) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

namespace {
// N values of 8 bytes each, little-endian, appended to OUT.
void append_le64(std::string& out, const void* values, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(values);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t v = 0;
    std::memcpy(&v, p + 8 * i, 8);
    for (int b = 0; b < 8; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xFFu));
  }
}
}  // namespace

bool attribute_bytes(hid_t attr, std::string& bytes, std::string& why) {
  bytes.clear();
  const hid_t stored = H5Aget_type(attr);
  const hid_t space = H5Aget_space(attr);
  if (stored < 0 || space < 0) {
    if (stored >= 0) H5Tclose(stored);
    if (space >= 0) H5Sclose(space);
    why = "unreadable type or shape";
    return false;
  }
  const H5T_class_t cls = H5Tget_class(stored);
  const hssize_t n = H5Sget_simple_extent_npoints(space);
  bool ok = n >= 0;
  if (!ok) {
    why = "unreadable shape";
  } else if (cls == H5T_STRING && H5Tis_variable_str(stored) > 0 && n == 1) {
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    char* p = nullptr;
    ok = H5Aread(attr, t, &p) >= 0;
    if (ok && p) bytes = p;
    if (p) H5free_memory(p);
    H5Tclose(t);
    if (!ok) why = "unreadable text";
  } else if (cls == H5T_FLOAT || cls == H5T_INTEGER) {
    std::vector<std::uint64_t> v(static_cast<std::size_t>(n));
    ok = H5Aread(attr, cls == H5T_FLOAT ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64, v.data()) >= 0;
    if (ok) append_le64(bytes, v.data(), v.size());
    if (!ok) why = "unreadable value";
  } else {
    ok = false;
    why = "a type locus does not write";
  }
  H5Tclose(stored);
  H5Sclose(space);
  return ok;
}

}  // namespace locus::h5
