# `cmake --install BUILD --prefix PREFIX`: liblocus, its headers, the apps,
# the decks, and an exported package so that a user's own app builds with
#   find_package(locus REQUIRED)   target_link_libraries(app PRIVATE locus::locus)
# (examples/consumer is such an app; CTest's install.consumer builds it).
include(CMakePackageConfigHelpers)
set(LOCUS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/locus)

install(TARGETS locus EXPORT locusTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(layer IN LISTS LOCUS_LAYERS)  # every layer's public headers, into one include/locus
  if(EXISTS ${PROJECT_SOURCE_DIR}/core/${layer}/include/locus)
    install(DIRECTORY core/${layer}/include/locus DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endforeach()
install(TARGETS heat3d poisson5pt spmv tensor_contract RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY inputs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/locus/inputs)
install(EXPORT locusTargets NAMESPACE locus:: DESTINATION ${LOCUS_CMAKE_DIR})
configure_package_config_file(cmake/locusConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/locusConfig.cmake
                              INSTALL_DESTINATION ${LOCUS_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/locusConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/locusConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/locusConfigVersion.cmake
              cmake/LocusKokkosFix.cmake
        DESTINATION ${LOCUS_CMAKE_DIR})
