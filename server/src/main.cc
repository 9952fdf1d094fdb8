// pqcd: the post-quantum cryptography daemon.
#include "pqcd/server/server.h"

int main(int argc, char** argv) {
  return pqcd::server::DaemonMain(argc, argv);
}
