// The flags that say where the daemon is and how to reach it, shared by pqc and pqc-load so that
// both spell them, mean them and apply them the same way: --target (several comma-separated:
// round robin), --tls, --ca, --cert, --key, --server-name. Header-only: the CLI11 options and
// their translation into the client library's ClientOptions.
#pragma once

#include <CLI/CLI.hpp>
#include <sstream>
#include <string>

#include "pqcd/client/client.h"

namespace pqcd::cli {

struct ConnectionFlags {
  std::string targets = "127.0.0.1:50051";  // host:port or unix:PATH, comma-separated
  bool tls = false;
  std::string ca, cert, key, server_name;
  bool lane = false;  // --lane (pqc): crypto calls over the daemon's shared-memory lane
};

// Adds the options to `app`. `target_names`: the target option's names ("--target,-t");
// `target_env`: the environment variable it also reads ("" for none).
inline void AddConnectionFlags(CLI::App& app, ConnectionFlags& f, const std::string& target_names,
                               const std::string& target_env) {
  CLI::Option* target =
      app.add_option(target_names, f.targets,
                     "daemon address: host:port or unix:PATH (several, comma-separated: round "
                     "robin)")
          ->capture_default_str();
  if (!target_env.empty()) target->envname(target_env);
  app.add_flag("--tls", f.tls, "use TLS (implied by --ca/--cert)");
  app.add_option("--ca", f.ca, "PEM file of the CA that signed the daemon's certificate");
  app.add_option("--cert", f.cert, "client certificate (PEM) for mTLS");
  app.add_option("--key", f.key, "client private key (PEM) for mTLS");
  app.add_option("--server-name", f.server_name, "name to check in the daemon's certificate");
}

// The targets and TLS settings into `o` (its other settings are left as they are).
inline void ApplyConnectionFlags(const ConnectionFlags& f, pqcd::client::ClientOptions& o) {
  o.targets.clear();
  std::stringstream ss(f.targets);
  for (std::string t; std::getline(ss, t, ',');) {
    if (!t.empty()) o.targets.push_back(t);
  }
  o.tls.enabled = f.tls || !f.ca.empty() || !f.cert.empty();
  o.tls.ca_file = f.ca;
  o.tls.cert_file = f.cert;
  o.tls.key_file = f.key;
  o.tls.server_name = f.server_name;
  if (f.lane) o.lane.enabled = true;
}

}  // namespace pqcd::cli
