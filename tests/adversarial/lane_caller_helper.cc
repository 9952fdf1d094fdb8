// A lane caller that dies with requests in flight: opens a lane on argv[1], submits slow
// requests (SLH-DSA-SHA2-128s key generation) into every slot, says "submitted" on stdout and
// exits at once, without closing anything. test_lanes_attack checks that pqcd frees the lane.
#include <unistd.h>

#include <cstdio>

#include "pqcd_lane.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s UNIX_SOCKET\n", argv[0]);
    return 2;
  }
  pqcd_lane* lane = nullptr;
  char err[256] = {};
  if (pqcd_lane_open(argv[1], 8, &lane, err, sizeof(err)) != 0) {
    std::fprintf(stderr, "%s\n", err);
    return 1;
  }
  int submitted = 0;
  for (uint32_t i = 0; i < pqcd_lane_slots(lane); ++i) {
    pqcd_lane_request rq{};
    rq.op = PQCD_LANE_KEYGEN;
    rq.algorithm = 60;  // pqc.v1.SLH_DSA_SHA2_128S
    rq.tag = i;
    if (pqcd_lane_submit(lane, &rq) == 0) ++submitted;
  }
  std::printf("submitted %d\n", submitted);
  std::fflush(stdout);
  _exit(submitted > 0 ? 0 : 1);
}
