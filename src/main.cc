// gantry: one binary, both the daemon (`gantry serve`) and its client.
#include "gantry/cli/cli.h"

int main(int argc, char** argv) { return gantry::RunCli(argc, argv); }
