# Included from bench/CMakeLists.txt: the store's paged reads (the REST list
# by namespace and phase, the jobs with intents in one cluster) over 100,000
# jobs and 600,000 intents, and the WAL frames each kind of write costs.
add_executable(store_bench ${CMAKE_CURRENT_LIST_DIR}/store_bench.cc)
target_link_libraries(store_bench PRIVATE gantry_store)
# For WalWrites(), the count of WAL frames: wal_write_vfs.h is private to the store.
target_include_directories(store_bench PRIVATE ${PROJECT_SOURCE_DIR}/src/store)
