# Included from bench/CMakeLists.txt: CPU microseconds per submitted job
# document (ParseJobDocument, and ParseJobDocument + SpecToJsonText()).
# Linked with jemalloc, as the daemon is: the path is allocation-heavy, so the
# allocator changes the figures.
add_executable(job_parse_bench ${CMAKE_CURRENT_LIST_DIR}/job_parse_bench.cc)
target_link_libraries(job_parse_bench PRIVATE gantry_job PkgConfig::JEMALLOC)
# CPU microseconds per watch event line (ParseWatchLine, and nlohmann's plain parse).
add_executable(watch_line_bench ${CMAKE_CURRENT_LIST_DIR}/watch_line_bench.cc)
target_link_libraries(watch_line_bench PRIVATE gantry_kube PkgConfig::JEMALLOC)
