// Credentials of a cluster at 127.0.0.1:port, where nothing listens (port 1
// by default): for pools and clients whose tests need no server, or need a
// request to find none. And a client of an HTTPS server a test made there.
#pragma once

#include <cstdint>
#include <string>

#include <catch2/catch.hpp>

#include "gantry/inventory/kubeconfig.h"
#include "gantry/kube/kube_client.h"

namespace gantry::testing {

inline inventory::ClusterCredentials UnreachableCluster(uint16_t port = 1) {
  inventory::ClusterCredentials creds;
  creds.server = "https://127.0.0.1:" + std::to_string(port);
  creds.host = "127.0.0.1";
  creds.port = port;
  return creds;
}

// A client of the test's HTTPS server at 127.0.0.1:port, trusting ca_pem,
// one attempt per request.
// tls_server_name: the kubeconfig's tls-server-name ("" = none).
inline std::unique_ptr<kube::KubeClient> LocalClient(uint16_t port, const std::string& ca_pem,
                                                     const std::string& tls_server_name = "") {
  inventory::ClusterCredentials creds = UnreachableCluster(port);
  creds.ca_pem = ca_pem;
  creds.tls_server_name = tls_server_name;
  kube::KubeClientOptions options;
  options.max_attempts = 1;
  auto c = kube::KubeClient::Create(creds, options);
  REQUIRE(c.ok());
  return std::move(c.value());
}

}  // namespace gantry::testing
