# Finds every external package locus uses, with the work-arounds that
# Debian's packages need (see docs/building.md).
find_package(MPI REQUIRED COMPONENTS C CXX)

find_package(Kokkos REQUIRED)
# Debian's Trilinos Kokkos exports a wrong include directory.
set_target_properties(Kokkos::kokkos PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES /usr/include/trilinos)

set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "locus needs a parallel (MPI) HDF5; install libhdf5-mpich-dev (./locus setup)")
endif()

find_package(yaml-cpp REQUIRED)
# spmv: threads inside each rank (g++ ships libgomp).
find_package(OpenMP REQUIRED COMPONENTS CXX)
# tensor_contract: DGEMM through CBLAS from OpenBLAS (Debian: libopenblas-dev).
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_package(GTest REQUIRED)
# Tools and test drivers use Debian's python3 (numpy, h5py), not whatever
# python3 comes first on PATH.
set(LOCUS_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with numpy and h5py")
