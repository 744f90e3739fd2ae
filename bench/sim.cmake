# Included from bench/CMakeLists.txt: requests/s one simulated cluster serves
# for create + get traffic over HTTPS while watches receive every change.
add_executable(sim_bench ${CMAKE_CURRENT_LIST_DIR}/sim_bench.cc)
target_link_libraries(sim_bench PRIVATE gantry_sim gantry_http)
