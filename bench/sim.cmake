# Included from bench/CMakeLists.txt: requests/s one simulated cluster serves
# for create + get traffic over HTTPS while watches receive every change.
add_executable(sim_bench ${CMAKE_CURRENT_LIST_DIR}/sim_bench.cc)
target_link_libraries(sim_bench PRIVATE gantry_sim gantry_http)
# The CPU of a bare HTTPS round trip, sent as the engine sends them to
# servers run as gantry-sim runs them: the floor under the dispatch figures.
add_executable(transport_floor ${CMAKE_CURRENT_LIST_DIR}/transport_floor.cc)
target_link_libraries(transport_floor PRIVATE gantry_sim gantry_http Threads::Threads)
