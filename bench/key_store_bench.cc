// key-store-bench: what one owner's key changes cost in the file key store while another owner
// holds many key versions (issue 25: the cost of a change should grow with its own owner's keys,
// not with everyone's).
//
//   key-store-bench [--crowd N,N,...] [--versions-per-key V] [--rounds R] [--dir DIR]
//
// For each crowd size N it opens a store in its own fresh directory under DIR (default: $TMPDIR
// or /tmp; removed at the end) in which the owner "crowd" holds N versions (N / V keys of V
// versions each). Then, in R rounds that visit the stores in turn (interleaved, so that drift hits
// every size alike), the owner "bystander" creates one held key and deletes it again; each is a
// sealed, fsync'ed write of the manifest and of a record. It prints, per crowd size, the median
// and the 90th percentile of the Create and the Delete in milliseconds. Run it pinned (taskset) on
// a quiet machine; the absolute figures depend on the disk's fsync.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "keystore/key_store.h"
#include "keystore/secret_bytes.h"
#include "spdlog/spdlog.h"

namespace {

namespace fs = std::filesystem;
using pqcd::server::KeyStore;
using pqcd::server::KeyStoreOptions;
using pqcd::server::SecretBytes;

[[noreturn]] void Usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "key-store-bench: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: %s [--crowd N,N,...] [--versions-per-key V] [--rounds R] [--dir DIR]\n"
               "  --crowd             versions held by the other owner, one store each "
               "(default 0,1000,10000)\n"
               "  --versions-per-key  versions per key of that owner (default 10)\n"
               "  --rounds            bystander Create+Delete rounds per store (default 200)\n"
               "  --dir               where the temporary stores go (default $TMPDIR or /tmp)\n",
               argv0);
  std::exit(why.empty() ? 0 : 2);
}

long Positive(const char* argv0, const std::string& flag, const std::string& value, bool zero_ok) {
  char* end = nullptr;
  const long v = std::strtol(value.c_str(), &end, 10);
  if (end == value.c_str() || *end != '\0' || v < (zero_ok ? 0 : 1)) {
    Usage(argv0, absl::StrCat(flag, " wants a ", zero_ok ? "non-negative" : "positive",
                              " number, not '", value, "'"));
  }
  return v;
}

SecretBytes RandomSecret() {
  SecretBytes s(32);
  for (size_t i = 0; i < s.size(); ++i) s.data()[i] = static_cast<uint8_t>(std::rand());
  return s;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct Store {
  long crowd = 0;
  fs::path dir;
  std::unique_ptr<KeyStore> ks;
  std::vector<double> create_ms, delete_ms;
};

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);  // not the store's "loaded ..." lines
  std::vector<long> crowds = {0, 1000, 10000};
  long per_key = 10, rounds = 200;
  const char* tmp = std::getenv("TMPDIR");
  fs::path base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") Usage(argv[0], "");
    if (i + 1 >= argc) Usage(argv[0], absl::StrCat(a, " needs a value"));
    const std::string v = argv[++i];
    if (a == "--crowd") {
      crowds.clear();
      for (size_t pos = 0; pos <= v.size();) {
        const size_t comma = std::min(v.find(',', pos), v.size());
        crowds.push_back(Positive(argv[0], a, v.substr(pos, comma - pos), true));
        pos = comma + 1;
      }
    } else if (a == "--versions-per-key") {
      per_key = Positive(argv[0], a, v, false);
    } else if (a == "--rounds") {
      rounds = Positive(argv[0], a, v, false);
    } else if (a == "--dir") {
      base = v;
    } else {
      Usage(argv[0], absl::StrCat("unknown option ", a));
    }
  }
  const fs::path root = base / absl::StrCat("key-store-bench-", ::getpid());
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) Usage(argv[0], absl::StrCat("cannot create ", root.string(), ": ", ec.message()));
  {
    std::ofstream kek(root / "kek.hex");
    kek << std::string(64, 'a') << "\n";
  }
  fs::permissions(root / "kek.hex", fs::perms::owner_read | fs::perms::owner_write);
  const std::vector<uint8_t> pk(32, 1);
  std::vector<Store> stores;
  int rc = 0;
  for (long crowd : crowds) {
    Store s;
    s.crowd = crowd;
    s.dir = root / absl::StrCat("crowd-", crowd, "-", stores.size());
    KeyStoreOptions o;
    o.data_dir = s.dir.string();
    o.kek_file = (root / "kek.hex").string();
    auto ks = KeyStore::Open(o);
    if (!ks.ok()) {
      std::fprintf(stderr, "key-store-bench: %s\n", std::string(ks.status().message()).c_str());
      rc = 1;
      break;
    }
    s.ks = std::move(*ks);
    for (long n = 0; n < crowd && rc == 0; ++n) {
      const std::string id = absl::StrCat("c", n / per_key);
      const auto r = n % per_key == 0 ? s.ks->Create("crowd", id, 1, pk, RandomSecret(), {})
                                      : s.ks->AddVersion("crowd", id, pk, RandomSecret());
      if (!r.ok()) {
        std::fprintf(stderr, "key-store-bench: filling: %s\n",
                     std::string(r.status().message()).c_str());
        rc = 1;
      }
    }
    std::fprintf(stderr, "store with %ld crowd versions ready\n", crowd);
    stores.push_back(std::move(s));
  }
  using Clock = std::chrono::steady_clock;
  const auto ms = [](Clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  for (long r = 0; r < rounds && rc == 0; ++r) {
    for (Store& s : stores) {
      const auto t0 = Clock::now();
      const auto c = s.ks->Create("bystander", "b", 1, pk, RandomSecret(), {});
      const auto t1 = Clock::now();
      const auto d = s.ks->Delete("bystander", "b", 0);
      const auto t2 = Clock::now();
      if (!c.ok() || !d.ok()) {
        const absl::Status st = c.ok() ? d.status() : c.status();
        std::fprintf(stderr, "key-store-bench: bystander: %s\n", std::string(st.message()).c_str());
        rc = 1;
        break;
      }
      s.create_ms.push_back(ms(t1 - t0));
      s.delete_ms.push_back(ms(t2 - t1));
    }
  }
  if (rc == 0) {
    std::printf(
        "| crowd versions | Create p50 ms | Create p90 ms | Delete p50 ms | Delete p90 ms |\n");
    std::printf("|---:|---:|---:|---:|---:|\n");
    for (const Store& s : stores) {
      std::printf("| %ld | %.2f | %.2f | %.2f | %.2f |\n", s.crowd, Percentile(s.create_ms, 0.5),
                  Percentile(s.create_ms, 0.9), Percentile(s.delete_ms, 0.5),
                  Percentile(s.delete_ms, 0.9));
    }
  }
  stores.clear();
  fs::remove_all(root, ec);
  return rc;
}
