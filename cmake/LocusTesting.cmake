# In sanitizer builds, leak checking is off for tests that start MPI: MPICH's
# UCX plugins keep allocations until exit and are unloaded before LeakSanitizer
# runs, so their reports cannot even be suppressed by module name. Address and
# undefined-behaviour checks stay on (and fatal).
set(LOCUS_TEST_ENV "")
if(LOCUS_SANITIZE)
  set(LOCUS_TEST_ENV "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1")
endif()
# Over-subscribed runs (4 ranks on 2 cores) would wait a scheduler time slice
# per step of every MPI collective: tools/idle_yield.cpp makes MPICH's busy
# poll yield, preloaded into every test (not with the sanitizers, whose runtime
# must be the first library loaded, so that build has no such library).
if(TARGET locus_idle_yield)
  list(APPEND LOCUS_TEST_ENV "LD_PRELOAD=$<TARGET_FILE:locus_idle_yield>")
endif()
# A test's ./locus takes the build directory as it is (the locus driver's
# cmd_build): a rebuild there would relink binaries other tests are starting
# when ctest runs on a tree that was not built first.
list(APPEND LOCUS_TEST_ENV LOCUS_TEST_KEEP_BUILD=1)
# Open MPI refuses root and more ranks than cores unless told (the tests
# run 4 ranks on 2 cores; CI runs as root).
if(LOCUS_MPI_LIBRARY STREQUAL "openmpi")
  list(APPEND LOCUS_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
       OMPI_MCA_rmaps_base_oversubscribe=1)
endif()

# locus_add_mpi_test(NAME name RANKS 1 2 4 COMMAND exe args... [TIMEOUT s] [LABELS l...])
# registers name.np1, name.np2, ... each run through mpiexec.
# In COMMAND, the token @NP@ is replaced by the rank count (for scripts that
# launch mpiexec themselves, use locus_add_script_test).
# A test a library limitation breaks: registered as skipped, with the
# reason in its output (ctest -V, LastTest.log) and at configure time.
function(locus_skip_test name reason)
  message(STATUS "locus: skipping ${name}: ${reason}")
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} -E echo "SKIP: ${reason}")
  set_tests_properties(${name} PROPERTIES SKIP_REGULAR_EXPRESSION "SKIP:" LABELS "skipped")
endfunction()

# SKIP_OPENMPI "reason": with Open MPI the test is skipped for that reason.
function(locus_add_mpi_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT;SKIP_OPENMPI" "RANKS;COMMAND;LABELS;ENVIRONMENT" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 120)
  endif()
  if(T_SKIP_OPENMPI AND LOCUS_MPI_LIBRARY STREQUAL "openmpi")
    foreach(np IN LISTS T_RANKS)
      locus_skip_test(${T_NAME}.np${np} "${T_SKIP_OPENMPI}")
    endforeach()
    return()
  endif()
  foreach(np IN LISTS T_RANKS)
    set(cmd)
    foreach(tok IN LISTS T_COMMAND)
      string(REPLACE "@NP@" "${np}" tok "${tok}")
      list(APPEND cmd "${tok}")
    endforeach()
    add_test(NAME ${T_NAME}.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${cmd})
    set_tests_properties(${T_NAME}.np${np} PROPERTIES
      TIMEOUT ${T_TIMEOUT} PROCESSORS ${np} LABELS "mpi;${T_LABELS}"
      ENVIRONMENT "${T_ENVIRONMENT};${LOCUS_TEST_ENV}")
  endforeach()
endfunction()

# locus_add_script_test(NAME name RANKS 1 2 4 COMMAND script args...)
# for Python test drivers that call mpiexec themselves; @NP@ in COMMAND
# is replaced by the rank count.
function(locus_add_script_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT;SKIP_OPENMPI" "RANKS;COMMAND;LABELS" ${ARGN})
  if(T_SKIP_OPENMPI AND LOCUS_MPI_LIBRARY STREQUAL "openmpi")
    if(T_RANKS)
      foreach(np IN LISTS T_RANKS)
        locus_skip_test(${T_NAME}.np${np} "${T_SKIP_OPENMPI}")
      endforeach()
    else()
      locus_skip_test(${T_NAME} "${T_SKIP_OPENMPI}")
    endif()
    return()
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 180)
  endif()
  if(NOT T_RANKS)
    set(T_RANKS 1)
    set(suffix OFF)
  else()
    set(suffix ON)
  endif()
  foreach(np IN LISTS T_RANKS)
    set(cmd)
    foreach(tok IN LISTS T_COMMAND)
      string(REPLACE "@NP@" "${np}" tok "${tok}")
      list(APPEND cmd "${tok}")
    endforeach()
    if(suffix)
      set(tname ${T_NAME}.np${np})
    else()
      set(tname ${T_NAME})
    endif()
    add_test(NAME ${tname} COMMAND ${cmd})
    set_tests_properties(${tname} PROPERTIES
      TIMEOUT ${T_TIMEOUT} PROCESSORS ${np} LABELS "script;${T_LABELS}"
      ENVIRONMENT "LOCUS_MPIEXEC=${MPIEXEC_EXECUTABLE};LOCUS_BUILD_DIR=${CMAKE_BINARY_DIR};LOCUS_SOURCE_DIR=${CMAKE_SOURCE_DIR};${LOCUS_TEST_ENV}")
  endforeach()
endfunction()
