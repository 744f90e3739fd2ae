# Included from bench/CMakeLists.txt: the dispatch benchmark's load generator
# (bench/dispatch_bench.sh runs it against gantry serve and gantry-sim).
add_executable(dispatch_loadgen ${CMAKE_CURRENT_LIST_DIR}/dispatch_loadgen.cc)
target_link_libraries(dispatch_loadgen PRIVATE gantry_http SQLite::SQLite3 nlohmann_json::nlohmann_json fmt::fmt
                                               Threads::Threads)
