#include "keccak/sha3_multi.h"

#include <algorithm>
#include <cstring>

#include "keccak/backend.h"
#include "keccak/keccak_multi.h"
#include "pqcd/kernels/sha3.h"

namespace pqcd::kernels {
namespace {

// One message in a lane. Each step of the scheduler is one permutation of all lanes; before it a
// lane XORs its next input block (message blocks, then the padded final block), after it a lane
// past its final block reads output (and keeps squeezing on later steps while output remains).
struct Lane {
  bool busy = false;
  size_t msg = 0;
  size_t next_block = 0;
  size_t body_blocks = 0;
  size_t out_done = 0;
  bool squeezing = false;
};

template <size_t N>
void RunLanes(const keccak::Backend& be, size_t rate, uint8_t suffix, std::span<const Bytes> msgs,
              std::span<const MutBytes> outs) {
  alignas(64) uint64_t st[25 * N];
  alignas(8) uint8_t tail[200];
  Lane lanes[N];
  size_t next_msg = 0;
  const size_t words = rate / 8;
  auto refill = [&](size_t j) {
    for (size_t i = 0; i < 25; ++i) st[i * N + j] = 0;
    if (next_msg < msgs.size()) {
      lanes[j] = Lane{true, next_msg, 0, msgs[next_msg].size() / rate, 0, false};
      ++next_msg;
    } else {
      lanes[j].busy = false;
    }
  };
  for (size_t j = 0; j < N; ++j) refill(j);
  for (;;) {
    bool any = false;
    for (size_t j = 0; j < N; ++j) {
      Lane& l = lanes[j];
      if (!l.busy) continue;
      any = true;
      if (l.squeezing) continue;  // pure squeeze step: no input
      const uint8_t* block;
      if (l.next_block < l.body_blocks) {
        block = msgs[l.msg].data() + l.next_block * rate;
      } else {
        const size_t rest = msgs[l.msg].size() - l.body_blocks * rate;
        std::memset(tail, 0, rate);
        if (rest != 0) std::memcpy(tail, msgs[l.msg].data() + l.body_blocks * rate, rest);
        tail[rest] ^= suffix;
        tail[rate - 1] ^= 0x80;
        block = tail;
      }
      for (size_t w = 0; w < words; ++w) {
        uint64_t x;
        std::memcpy(&x, block + 8 * w, 8);
        st[w * N + j] ^= x;
      }
    }
    if (!any) break;
    KeccakF1600xN(be, st, N);
    for (size_t j = 0; j < N; ++j) {
      Lane& l = lanes[j];
      if (!l.busy) continue;
      if (!l.squeezing) {
        if (l.next_block++ < l.body_blocks) continue;  // absorbed a message block
        l.squeezing = true;                            // absorbed the padded final block
      }
      const MutBytes out = outs[l.msg];
      const size_t take = std::min(rate, out.size() - l.out_done);
      for (size_t b = 0; b < take; ++b) {
        out[l.out_done + b] = static_cast<uint8_t>(st[(b / 8) * N + j] >> (8 * (b % 8)));
      }
      l.out_done += take;
      if (l.out_done == out.size()) refill(j);
    }
  }
  SecureZero(st, sizeof(st));
  SecureZero(tail, sizeof(tail));
}

}  // namespace

void KeccakDigestBatch(size_t rate, uint8_t suffix, std::span<const Bytes> msgs,
                       std::span<const MutBytes> outs) {
  const keccak::Backend& be = keccak::ActiveBackend();
  const size_t lanes = msgs.size() >= 2 ? be.lanes : 1;
  if (lanes >= 8) {
    RunLanes<8>(be, rate, suffix, msgs, outs);
  } else if (lanes >= 4) {
    RunLanes<4>(be, rate, suffix, msgs, outs);
  } else {
    for (size_t i = 0; i < msgs.size(); ++i) {
      KeccakSponge sponge(rate, suffix);
      sponge.Absorb(msgs[i]);
      sponge.Squeeze(outs[i]);
    }
  }
}

}  // namespace pqcd::kernels
