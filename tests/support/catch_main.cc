// The main of every test binary (Catch2 v2's, built here for one setting).
//
// Catch2 v2's console reporter asserts, and the test binary aborts, when it
// prints the name of a failing test case or section whose ": " comes past
// the console width (TextFlow indents the name's next lines to just after
// it). Names here say what they check and run long: at Catch's default of
// 80 columns a failing test aborted instead of reporting, and left the
// processes it started behind. tests/check_test_names.sh keeps every name
// within this width.
#define CATCH_CONFIG_MAIN
#define CATCH_CONFIG_CONSOLE_WIDTH 160
#include <catch2/catch.hpp>
