// Lane scheduler for multi-buffer SM3.
#include "sm3/sm3_multi.h"

#include <cstring>

#include "pqcd/kernels/sm3.h"
#include "sm3/backend.h"

namespace pqcd::kernels {
namespace {

constexpr uint32_t kIv[8] = {0x7380166f, 0x4914b2b9, 0x172442d7, 0xda8a0600,
                             0xa96f30bc, 0x163138aa, 0xe38dee4d, 0xb0fb0e4e};

// One message in a lane: whole blocks come straight from the message, the last one or two padded
// blocks from `tail`.
struct Lane {
  bool busy = false;
  size_t msg = 0;
  size_t next_block = 0;
  size_t body_blocks = 0;   // blocks read from the message itself
  size_t total_blocks = 0;  // body + padded tail blocks
  alignas(64) uint8_t tail[128];
};

void StartLane(Lane& lane, size_t msg, Bytes data) {
  lane.busy = true;
  lane.msg = msg;
  lane.next_block = 0;
  lane.body_blocks = data.size() / 64;
  const size_t rest = data.size() % 64;
  const size_t tail_blocks = rest + 9 <= 64 ? 1 : 2;
  lane.total_blocks = lane.body_blocks + tail_blocks;
  std::memset(lane.tail, 0, sizeof(lane.tail));
  if (rest != 0) std::memcpy(lane.tail, data.data() + lane.body_blocks * 64, rest);
  lane.tail[rest] = 0x80;
  const uint64_t bits = uint64_t{data.size()} * 8;
  uint8_t* len_at = lane.tail + tail_blocks * 64 - 8;
  for (int i = 0; i < 8; ++i) len_at[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
}

template <size_t N>
void RunLanes(std::span<const Bytes> msgs, std::span<const MutBytes> outs,
              void (*compress)(uint32_t*, const uint8_t* const*)) {
  alignas(64) uint32_t v[8 * N];
  alignas(64) static constexpr uint8_t kDummy[64] = {};
  Lane lanes[N];
  size_t next_msg = 0;
  auto refill = [&](size_t j) {
    if (next_msg < msgs.size()) {
      StartLane(lanes[j], next_msg, msgs[next_msg]);
      for (int i = 0; i < 8; ++i) v[i * N + j] = kIv[i];
      ++next_msg;
    } else {
      lanes[j].busy = false;
    }
  };
  for (size_t j = 0; j < N; ++j) refill(j);
  for (;;) {
    const uint8_t* blocks[N];
    bool any = false;
    for (size_t j = 0; j < N; ++j) {
      Lane& l = lanes[j];
      if (!l.busy) {
        blocks[j] = kDummy;
        continue;
      }
      any = true;
      blocks[j] = l.next_block < l.body_blocks ? msgs[l.msg].data() + 64 * l.next_block
                                               : l.tail + 64 * (l.next_block - l.body_blocks);
    }
    if (!any) break;
    compress(v, blocks);
    for (size_t j = 0; j < N; ++j) {
      Lane& l = lanes[j];
      if (!l.busy || ++l.next_block < l.total_blocks) continue;
      uint8_t* out = outs[l.msg].data();
      for (int i = 0; i < 8; ++i) {
        const uint32_t w = v[i * N + j];
        out[4 * i] = static_cast<uint8_t>(w >> 24);
        out[4 * i + 1] = static_cast<uint8_t>(w >> 16);
        out[4 * i + 2] = static_cast<uint8_t>(w >> 8);
        out[4 * i + 3] = static_cast<uint8_t>(w);
      }
      refill(j);
    }
  }
  SecureZero(v, sizeof(v));
  SecureZero(lanes, sizeof(lanes));
}

}  // namespace

void sm3::portable::CompressLanes1(uint32_t* v, const uint8_t* const* blocks) {
  Sm3CompressPortable(v, blocks[0], 1);
}

void Sm3DigestBatch(std::span<const Bytes> msgs, std::span<const MutBytes> outs) {
  const sm3::Backend& be = sm3::ActiveBackend();
  const size_t lanes = msgs.size() >= 2 ? be.lanes : 1;
  if (lanes == 16) {
    RunLanes<16>(msgs, outs, be.compress_lanes);
  } else if (lanes == 8) {
    RunLanes<8>(msgs, outs, be.compress_lanes);
  } else if (lanes == 4) {
    RunLanes<4>(msgs, outs, be.compress_lanes);
  } else {
    for (size_t i = 0; i < msgs.size(); ++i) {
      Sm3Digest(msgs[i], std::span<uint8_t, Sm3::kDigestBytes>(outs[i].data(), Sm3::kDigestBytes));
    }
  }
}

}  // namespace pqcd::kernels
