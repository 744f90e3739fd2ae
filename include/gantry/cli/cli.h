// The `gantry` command line: client commands (submit, status, list, cancel,
// clusters) and `serve`, which starts the daemon.
//
// Exit codes: 0 success, 1 the server said no (its message is printed),
// 2 usage error, 3 cannot reach the server.
#pragma once

namespace gantry {

int RunCli(int argc, char** argv);

}  // namespace gantry
