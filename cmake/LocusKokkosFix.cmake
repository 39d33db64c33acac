# Debian's Trilinos Kokkos (libtrilinos-kokkos-dev) exports an include
# directory without Kokkos_Core.hpp. Repair only that broken package: a
# Kokkos whose exported directories hold the header is left alone.
if(TARGET Kokkos::kokkos)
  get_target_property(_locus_kk_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  set(_locus_kk_ok FALSE)
  foreach(_d IN LISTS _locus_kk_inc)
    if(EXISTS "${_d}/Kokkos_Core.hpp")
      set(_locus_kk_ok TRUE)
    endif()
  endforeach()
  if(NOT _locus_kk_ok AND EXISTS /usr/include/trilinos/Kokkos_Core.hpp)
    message(STATUS "locus: Debian's Trilinos Kokkos: include directory set to /usr/include/trilinos")
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES /usr/include/trilinos)
  endif()
endif()
