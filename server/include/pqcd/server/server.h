// The daemon: start-up (config, logging, key store, engine, self-test, listeners, metrics),
// serving, and the drain on SIGTERM/SIGINT.
#pragma once

namespace pqcd::server {

// The whole program; returns the process exit code.
int DaemonMain(int argc, char** argv);

}  // namespace pqcd::server
