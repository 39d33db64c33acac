// The io layer of the SMPI build (LOCUS_SMPI): SimGrid's MPI has no
// parallel HDF5, so a run writes no output. H5Output keeps the interface
// the apps' shared tail calls and writes nothing (its path() is empty: the
// summary's output says so); H5Input refuses, as one CollectiveError, since
// there is nothing such a build could have written to read back.
#include <mpi.h>

#include "locus/error.hpp"
#include "locus/io.hpp"

namespace locus {

H5Output::H5Output(MPI_Comm comm, const std::string&, bool) : comm_(comm) {
  MPI_Comm_rank(comm, &rank_);
}

H5Output::~H5Output() = default;

void H5Output::attribute(const std::string&, const std::string&, const std::string&) {}
void H5Output::attribute(const std::string&, const std::string&, double) {}
void H5Output::attribute(const std::string&, const std::string&, long) {}
void H5Output::attribute(const std::string&, const std::string&, const std::vector<double>&) {}

template <class T>
void H5Output::write_field(const std::string&, const GridFieldT<T>&, const CartDecomp&, int) {}
template void H5Output::write_field<float>(const std::string&, const GridFieldT<float>&, const CartDecomp&,
                                           int);
template void H5Output::write_field<double>(const std::string&, const GridFieldT<double>&, const CartDecomp&,
                                            int);

void H5Output::write_root_vector(const std::string&, const std::vector<double>&) {}
void H5Output::write_root_vector(const std::string&, const std::vector<std::int64_t>&) {}
void H5Output::write_distributed(const std::string&, const double*, std::uint64_t, std::uint64_t,
                                 std::uint64_t) {}
void H5Output::write_root_array(const std::string&, const std::vector<double>&,
                                const std::vector<std::uint64_t>&) {}
void H5Output::write_rank_rows(const std::string&, const std::vector<double>&) {}

void H5Output::commit() {
  committed_ = true;
}

namespace {
[[noreturn]] void no_input(const std::string& path) {
  throw CollectiveError(path + ": cannot be read: the SMPI build (LOCUS_SMPI) has no HDF5 input or output");
}
}  // namespace

// The constructor throws: no H5Input exists in this build, and the reads
// below are never reached (they throw the same error all the same).
H5Input::H5Input(MPI_Comm comm, const std::string& path) : comm_(comm), path_(path) {
  no_input(path_);
}
H5Input::~H5Input() = default;
bool H5Input::has(const std::string&) const {
  no_input(path_);
}
void H5Input::verify_attributes() {
  no_input(path_);
}
void H5Input::read_field(const std::string&, HostField3D&, const CartDecomp&) {
  no_input(path_);
}
std::vector<double> H5Input::read_vector(const std::string&, std::size_t) {
  no_input(path_);
}
double H5Input::real_attribute(const std::string&) {
  no_input(path_);
}
long H5Input::integer_attribute(const std::string&) {
  no_input(path_);
}
std::string H5Input::string_attribute(const std::string&) {
  no_input(path_);
}

}  // namespace locus
