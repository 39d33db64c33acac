# LOCUS_SMPI=ON: the dependencies of the SimGrid SMPI build (docs/building.md,
# "The SMPI build"). smpicc/smpicxx are the compilers (SimGrid's MPI is in
# their include path and libsimgrid is linked by them; an "executable" is a
# shared object that smpirun loads once per simulated rank). There is no
# parallel HDF5 for SMPI's MPI: the io layer is the one that writes nothing
# (core/io/io_none.cpp). Only heat3d, poisson5pt and spmv are built; tests
# and benchmarks are not (they run in the default build).
get_filename_component(_locus_cxx "${CMAKE_CXX_COMPILER}" NAME)
get_filename_component(_locus_cc "${CMAKE_C_COMPILER}" NAME)
if(NOT _locus_cxx STREQUAL "smpicxx" OR NOT _locus_cc STREQUAL "smpicc")
  message(FATAL_ERROR "LOCUS_SMPI=ON needs SimGrid's compilers (Debian: libsimgrid-dev): configure a new build directory with\n"
                      "  cmake -S . -B build-smpi -DLOCUS_SMPI=ON -DCMAKE_C_COMPILER=smpicc -DCMAKE_CXX_COMPILER=smpicxx\n"
                      "(got CMAKE_C_COMPILER=${CMAKE_C_COMPILER}, CMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}; ./locus build --smpi does it)")
endif()
# SimGrid's MPI comes with the compilers: empty targets stand for FindMPI's.
foreach(_lang C CXX)
  if(NOT TARGET MPI::MPI_${_lang})
    add_library(MPI::MPI_${_lang} INTERFACE IMPORTED)
  endif()
endforeach()
find_program(LOCUS_SMPIRUN smpirun REQUIRED)
set(MPIEXEC_EXECUTABLE ${LOCUS_SMPIRUN})
set(LOCUS_MPI_LIBRARY "smpi")
# smpicxx's smpi_helpers.h turns malloc, calloc, realloc and free into
# macros (SMPI's shared-malloc interception), which breaks Kokkos::realloc;
# locus does not use shared malloc.
add_compile_definitions(SMPI_NO_OVERRIDE_MALLOC)
message(STATUS "locus: SimGrid SMPI build: ${CMAKE_CXX_COMPILER}, ${LOCUS_SMPIRUN}; no HDF5 output")

find_package(Kokkos REQUIRED)
include(${CMAKE_CURRENT_LIST_DIR}/LocusKokkosFix.cmake)
find_package(yaml-cpp REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
set(LOCUS_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with numpy and h5py")
