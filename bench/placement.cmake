# Included from bench/CMakeLists.txt: place one job over 1,000 and 10,000
# synthetic clusters and report microseconds per decision and bytes per cluster.
add_executable(placement_bench ${CMAKE_CURRENT_LIST_DIR}/placement_bench.cc)
target_link_libraries(placement_bench PRIVATE gantry_placement)
