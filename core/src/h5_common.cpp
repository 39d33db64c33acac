#include "h5_common.hpp"

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

}  // namespace locus::h5
