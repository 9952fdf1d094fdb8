// Test helper for the all-identities memory attack (test_memory.cc): a fresh process, started by
// the test after setuid, so that the daemon sees one more Unix identity attacking.
//
//   pqcd_flood_helper SOCKET CALLS
//
// Connects to pqcd's Unix socket, opens CALLS Batch calls that each ask for ~16 MiB of SHAKE256
// output and never takes their answers (never_reading_client.h), prints "sent", and holds the
// connection until its standard input ends (the test closes it), which ends the calls.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "never_reading_client.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: " << argv[0] << " SOCKET CALLS\n";
    return 2;
  }
  const int calls = std::atoi(argv[2]);
  if (calls <= 0) {
    std::cerr << "CALLS must be a positive number, not " << argv[2] << "\n";
    return 2;
  }
  pqcd::testing::NeverReadingClient client(pqcd::testing::NeverReadingClient::ConnectUnix(argv[1]));
  if (!client.connected()) {
    std::cerr << "cannot connect to " << argv[1] << "\n";
    return 1;
  }
  const std::string batch = pqcd::testing::HugeBatch();
  for (int i = 0; i < calls; ++i) client.Call("/pqc.v1.Crypto/Batch", batch);
  std::cout << "sent" << std::endl;
  char c;
  while (::read(0, &c, 1) > 0) {
  }
  return 0;
}
