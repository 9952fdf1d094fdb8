#include "pqcd/kernels/random.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace pqcd::kernels {
namespace {

class OsRandomSource final : public RandomSource {
 public:
  absl::Status Generate(MutBytes out) override {
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t got = getrandom(out.data() + done, out.size() - done, 0);
      if (got < 0) {
        if (errno == EINTR) continue;
        return absl::UnavailableError(std::string("getrandom failed: ") + std::strerror(errno));
      }
      done += static_cast<size_t>(got);
    }
    return absl::OkStatus();
  }
};

}  // namespace

RandomSource& OsRandom() {
  static OsRandomSource source;
  return source;
}

SeededRandom::SeededRandom(Bytes seed) {
  static constexpr uint8_t kLabel[] = "pqcd seeded random v1";
  xof_.Absorb(Bytes(kLabel, sizeof(kLabel) - 1));
  xof_.Absorb(seed);
  xof_.Finalize();
}

SeededRandom::SeededRandom(uint64_t seed) {
  static constexpr uint8_t kLabel[] = "pqcd seeded random v1";
  uint8_t bytes[8];
  std::memcpy(bytes, &seed, sizeof(bytes));
  xof_.Absorb(Bytes(kLabel, sizeof(kLabel) - 1));
  xof_.Absorb(Bytes(bytes, sizeof(bytes)));
  xof_.Finalize();
}

absl::Status SeededRandom::Generate(MutBytes out) {
  xof_.Squeeze(out);
  return absl::OkStatus();
}

}  // namespace pqcd::kernels
