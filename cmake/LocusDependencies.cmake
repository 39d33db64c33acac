# Finds every external package locus uses, with the work-arounds that
# Debian's packages need (see docs/building.md). A site's own installs are
# honoured the CMake way: MPI_HOME (or MPI_C_COMPILER/MPI_CXX_COMPILER),
# Kokkos_ROOT, HDF5_ROOT, yaml-cpp_ROOT, BLAS_LIBRARIES.
# LOCUS_SMPI=ON (SimGrid's SMPI) takes its own set: LocusSmpi.cmake.
if(LOCUS_SMPI)
  include(${CMAKE_CURRENT_LIST_DIR}/LocusSmpi.cmake)
  return()
endif()

# LOCUS_MPI names a Debian MPI flavour (mpich or openmpi): its compiler
# wrappers, mpiexec and HDF5 are taken by their own names, never through
# Debian's alternatives (which follow whichever MPI was installed last).
set(LOCUS_MPI "" CACHE STRING "Debian MPI flavour to build with: mpich, openmpi, or empty (whatever FindMPI finds)")
if(LOCUS_MPI AND NOT LOCUS_MPI MATCHES "^(mpich|openmpi)$")
  message(FATAL_ERROR "LOCUS_MPI must be mpich or openmpi (got '${LOCUS_MPI}')")
endif()
if(LOCUS_MPI AND NOT MPI_HOME)
  foreach(_w C:mpicc CXX:mpicxx)
    string(REPLACE ":" ";" _w "${_w}")
    list(GET _w 0 _lang)
    list(GET _w 1 _exe)
    find_program(_locus_${_lang} NAMES ${_exe}.${LOCUS_MPI} NO_CACHE)
    if(NOT _locus_${_lang})
      message(FATAL_ERROR "LOCUS_MPI=${LOCUS_MPI}: ${_exe}.${LOCUS_MPI} not found (./locus setup installs it)")
    endif()
    # unset, or Debian's alternative (which may point to the other MPI)
    if(NOT MPI_${_lang}_COMPILER OR MPI_${_lang}_COMPILER MATCHES "/${_exe}$")
      set(MPI_${_lang}_COMPILER ${_locus_${_lang}} CACHE FILEPATH "MPI ${_lang} wrapper" FORCE)
    endif()
  endforeach()
  find_program(_locus_mpiexec NAMES mpiexec.${LOCUS_MPI} NO_CACHE)
  if(_locus_mpiexec AND (NOT MPIEXEC_EXECUTABLE OR MPIEXEC_EXECUTABLE MATCHES "/mpiexec$"))
    set(MPIEXEC_EXECUTABLE ${_locus_mpiexec} CACHE FILEPATH "mpiexec of ${LOCUS_MPI}" FORCE)
  endif()
  find_program(_locus_h5pcc NAMES h5pcc.${LOCUS_MPI} NO_CACHE)
  if(_locus_h5pcc AND NOT HDF5_ROOT AND (NOT HDF5_C_COMPILER_EXECUTABLE OR HDF5_C_COMPILER_EXECUTABLE MATCHES "/h5pcc$"))
    set(HDF5_C_COMPILER_EXECUTABLE ${_locus_h5pcc} CACHE FILEPATH "parallel HDF5 wrapper of ${LOCUS_MPI}" FORCE)
  endif()
endif()
find_package(MPI REQUIRED COMPONENTS C CXX)
# Which MPI it is, from its mpi.h (tests skip what a library cannot do).
include(CheckSymbolExists)
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
check_symbol_exists(OMPI_MAJOR_VERSION mpi.h LOCUS_HAVE_OMPI)
check_symbol_exists(MPICH_VERSION mpi.h LOCUS_HAVE_MPICH)
unset(CMAKE_REQUIRED_INCLUDES)
if(LOCUS_HAVE_OMPI)
  set(LOCUS_MPI_LIBRARY "openmpi")
elseif(LOCUS_HAVE_MPICH)
  set(LOCUS_MPI_LIBRARY "mpich")
else()
  set(LOCUS_MPI_LIBRARY "other")
endif()
message(STATUS "locus: MPI ${LOCUS_MPI_LIBRARY}: ${MPI_CXX_COMPILER}, ${MPIEXEC_EXECUTABLE}")

find_package(Kokkos REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/LocusKokkosFix.cmake)

set(HDF5_PREFER_PARALLEL ON)
find_package(HDF5 REQUIRED COMPONENTS C)
if(NOT HDF5_IS_PARALLEL)
  message(FATAL_ERROR "locus needs a parallel (MPI) HDF5; install libhdf5-mpich-dev (./locus setup) or set HDF5_ROOT")
endif()

find_package(yaml-cpp REQUIRED)
# spmv: threads inside each rank (g++ ships libgomp).
find_package(OpenMP REQUIRED COMPONENTS CXX)
# tensor_contract: DGEMM through CBLAS from OpenBLAS (Debian: libopenblas-dev).
if(NOT BLA_VENDOR)
  set(BLA_VENDOR OpenBLAS)
endif()
find_package(BLAS REQUIRED)
if(LOCUS_TESTS)
  find_package(GTest REQUIRED)
endif()
# Tools and test drivers use Debian's python3 (numpy, h5py), not whatever
# python3 comes first on PATH.
set(LOCUS_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with numpy and h5py")
