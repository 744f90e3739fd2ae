// An HTTPS server on 127.0.0.1 with gantry-sim's certificates, answering
// with a test's handler: for what a cluster's API server may send that
// gantry-sim does not (header-only; Catch2's REQUIRE inside).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "certs.h"
#include "gantry/http/server.h"

namespace gantry::testing {

class TlsCluster {
 public:
  // name goes into the certificates' names.
  TlsCluster(const std::string& name, http::Handler handler, sim::LeafValidity validity = {}) {
    auto certs = sim::MakeClusterCerts(name, false, validity);
    REQUIRE(certs.ok());
    certs_ = *certs;
    http::ServerOptions options;
    options.address = "127.0.0.1";
    options.tls = http::TlsServerOptions{certs_.cert_pem, certs_.key_pem};
    server_ = std::make_unique<http::Server>(options, std::move(handler));
    REQUIRE(server_->Start().ok());
  }
  ~TlsCluster() { server_->Stop(std::chrono::milliseconds(0)); }
  TlsCluster(const TlsCluster&) = delete;
  TlsCluster& operator=(const TlsCluster&) = delete;

  uint16_t port() const { return server_->port(); }
  const std::string& ca_pem() const { return certs_.ca_pem; }

 private:
  sim::ClusterCerts certs_;
  std::unique_ptr<http::Server> server_;
};

}  // namespace gantry::testing
