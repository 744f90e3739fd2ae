// The submission benchmark's baseline: an HTTP server whose only work per
// request is inserting the body into SQLite through the same GroupCommitter
// the store uses, answering 201 once the commit is durable. The gap between
// it and `gantry serve` is what gantry's own work costs (auth, parsing and
// validating the document, building the record and the response).
//
// It serves with gantry's http::Server, so the HTTP layer is common to both.
//
//   baseline_server DB_PATH READY_FILE
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>

#include "gantry/http/server.h"
#include "gantry/store/checkpointer.h"
#include "gantry/store/group_commit.h"
#include "gantry/store/statement.h"

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: baseline_server DB_PATH READY_FILE\n");
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  auto conn = gantry::SqliteConnection::Open(argv[1], {});
  if (!conn.ok()) {
    std::fprintf(stderr, "%s\n", conn.status().ToString().c_str());
    return 1;
  }
  if (auto s = (*conn)->Exec("CREATE TABLE IF NOT EXISTS bodies(id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
      !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  // The store's own checkpoint thread (checkpointer.h), as gantry serve has.
  auto checkpointer = gantry::Checkpointer::Start(argv[1], {});
  if (!checkpointer.ok()) {
    std::fprintf(stderr, "%s\n", checkpointer.status().ToString().c_str());
    return 1;
  }
  (*checkpointer)->Attach((*conn)->db());
  gantry::GroupCommitter committer(std::move(conn.value()), {});
  gantry::http::ServerOptions options;
  options.port = 0;
  gantry::http::Server server(options, [&committer](gantry::http::Request req, gantry::http::Responder respond) {
    auto body = std::make_shared<std::string>(std::move(req.body));
    committer.Enqueue(
        [body](gantry::SqliteConnection& c) -> gantry::Status {
          auto stmt = c.Prepare("INSERT INTO bodies(body) VALUES (?)");
          if (!stmt.ok()) return stmt.status();
          stmt->Bind(1, std::string_view(*body));
          return stmt->Run();
        },
        [respond](gantry::Status s) {
          respond(gantry::http::TextResponse(s.ok() ? 201 : 500, s.ok() ? "{}" : s.ToString()));
        });
  });
  if (auto s = server.Start(); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::ofstream(argv[2]) << "127.0.0.1:" << server.port() << "\n";
  int sig = 0;
  sigwait(&set, &sig);
  server.Stop(2s);
  return 0;
}
