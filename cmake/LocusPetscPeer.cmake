# The PETSc peer of spmv: bench/petsc_hpcg27 (PETSc's MatMult and KSPCG on
# HPCG's 27-point operator, in its own MPI job; ./locus bench spmv runs it
# beside the app). Optional: built only where PETSc and the MPI C compiler
# PETSc was built with are found, and a configure probe compiles and links a
# PETSc program with them. Otherwise one status line says why, and nothing
# else changes.
#
# PETSc is linked against its own MPI (Debian's petsc-dev: Open MPI), which
# need not be the project's (MPICH by default): the driver is compiled with
# that MPI's compiler (LOCUS_PETSC_CC, default mpicc.openmpi) and started
# with its launcher (LOCUS_PETSC_MPIEXEC, default mpirun.openmpi), never with
# the project's MPI. PETSc is found by pkg-config (module PETSc), also under
# PETSC_DIR[/PETSC_ARCH]/lib/pkgconfig (CMake or environment variables).
# The cache keeps LOCUS_PETSC_PEER_STATUS ("built" or why not) for the
# benchmark driver (tools/bench_spmv_peer.py).
option(LOCUS_PETSC_PEER "Build the PETSc peer of spmv (bench/petsc_hpcg27) where PETSc is found" ON)
set(LOCUS_PETSC_CC "" CACHE FILEPATH "MPI C compiler of the MPI PETSc is built with (default: mpicc.openmpi)")
set(LOCUS_PETSC_MPIEXEC "" CACHE FILEPATH
    "launcher of the MPI PETSc is built with, for the PETSc peer (default: mpirun.openmpi)")

function(locus_petsc_peer_status status)
  set(LOCUS_PETSC_PEER_STATUS "${status}" CACHE INTERNAL "whether bench/petsc_hpcg27 is built, or why not")
  if(status STREQUAL "built")
    message(STATUS "locus: PETSc peer bench/petsc_hpcg27: built with ${ARGN}")
  else()
    message(STATUS "locus: PETSc peer bench/petsc_hpcg27 not built: ${status} "
                   "(optional: ./locus setup --peers installs petsc-dev; docs/building.md)")
  endif()
endfunction()

# Compiles and links a PETSc program with the peer's compiler (catches a
# PETSc built with another MPI: petscsys.h checks mpi.h); empty on success,
# else the compiler's first error line. A success is cached per compiler
# and flags; a failure is probed again at the next configure.
function(locus_petsc_probe cc cflags ldflags out)
  set(key "${cc};${cflags};${ldflags}")
  if(DEFINED LOCUS_PETSC_PROBE_OK AND LOCUS_PETSC_PROBE_OK STREQUAL key)
    set(${out} "" PARENT_SCOPE)
    return()
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/petsc_probe)
  file(MAKE_DIRECTORY ${dir})
  file(WRITE ${dir}/probe.c "#include <petscksp.h>\nint main(void) { PetscBool b = PETSC_FALSE; KSP k = NULL; (void)k; PetscInitialized(&b); return (int)b; }\n")
  execute_process(COMMAND ${cc} ${cflags} ${dir}/probe.c -o ${dir}/probe ${ldflags}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  set(error "")
  if(NOT rc EQUAL 0)
    string(REGEX MATCH "[^\n]*error[^\n]*" error "${log}")
    if(error STREQUAL "")
      set(error "${cc} failed to compile and link a PETSc program (exit ${rc})")
    endif()
  endif()
  if(error STREQUAL "")
    set(LOCUS_PETSC_PROBE_OK "${key}" CACHE INTERNAL "the compiler and flags a PETSc probe built with")
  endif()
  set(${out} "${error}" PARENT_SCOPE)
endfunction()

function(locus_add_petsc_peer source)
  if(NOT LOCUS_PETSC_PEER)
    locus_petsc_peer_status("LOCUS_PETSC_PEER=OFF")
    return()
  endif()
  find_package(PkgConfig QUIET)
  if(NOT PKG_CONFIG_FOUND)
    locus_petsc_peer_status("pkg-config not found (PETSc is found through its PETSc.pc)")
    return()
  endif()
  foreach(var PETSC_DIR PETSC_ARCH)
    if(NOT ${var} AND DEFINED ENV{${var}})
      set(${var} "$ENV{${var}}")
    endif()
  endforeach()
  if(PETSC_DIR)
    set(ENV{PKG_CONFIG_PATH} "${PETSC_DIR}/${PETSC_ARCH}/lib/pkgconfig:${PETSC_DIR}/lib/pkgconfig:$ENV{PKG_CONFIG_PATH}")
  endif()
  pkg_check_modules(LOCUS_PETSC QUIET PETSc)
  if(NOT LOCUS_PETSC_FOUND)
    locus_petsc_peer_status("PETSc not found (pkg-config module PETSc; Debian: petsc-dev, or set PETSC_DIR)")
    return()
  endif()
  if(NOT LOCUS_PETSC_CC)
    find_program(LOCUS_PETSC_CC_FOUND NAMES mpicc.openmpi)
    set(cc "${LOCUS_PETSC_CC_FOUND}")
  else()
    set(cc "${LOCUS_PETSC_CC}")
  endif()
  if(NOT LOCUS_PETSC_MPIEXEC)
    find_program(LOCUS_PETSC_MPIEXEC_FOUND NAMES mpirun.openmpi mpiexec.openmpi)
    set(run "${LOCUS_PETSC_MPIEXEC_FOUND}")
  else()
    set(run "${LOCUS_PETSC_MPIEXEC}")
  endif()
  if(NOT cc OR NOT run)
    locus_petsc_peer_status("PETSc ${LOCUS_PETSC_VERSION} found, but not the compiler and launcher of its MPI "
                            "(mpicc.openmpi and mpirun.openmpi: Debian's openmpi-bin; elsewhere set "
                            "LOCUS_PETSC_CC and LOCUS_PETSC_MPIEXEC)")
    return()
  endif()
  set(ldflags ${LOCUS_PETSC_LDFLAGS})
  foreach(dir ${LOCUS_PETSC_LIBRARY_DIRS})
    list(APPEND ldflags "-Wl,-rpath,${dir}")
  endforeach()
  locus_petsc_probe("${cc}" "${LOCUS_PETSC_CFLAGS}" "${ldflags}" error)
  if(error)
    locus_petsc_peer_status("PETSc ${LOCUS_PETSC_VERSION} does not build with ${cc}: ${error}")
    return()
  endif()
  set(exe ${CMAKE_CURRENT_BINARY_DIR}/petsc_hpcg27)
  add_custom_command(
    OUTPUT ${exe}
    COMMAND ${cc} -O3 -std=c11 -Wall -Wextra ${LOCUS_PETSC_CFLAGS} ${source} -o ${exe} ${ldflags}
    DEPENDS ${source}
    COMMENT "Building the PETSc peer bench/petsc_hpcg27 (${cc}, PETSc ${LOCUS_PETSC_VERSION})"
    VERBATIM)
  add_custom_target(bench_petsc_hpcg27 ALL DEPENDS ${exe})
  set(LOCUS_PETSC_PEER_MPIEXEC "${run}" CACHE INTERNAL "launcher of bench/petsc_hpcg27")
  locus_petsc_peer_status("built" "${cc}, PETSc ${LOCUS_PETSC_VERSION}, run with ${run}")
endfunction()
