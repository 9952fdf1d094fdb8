// libFuzzer target: the key store's on-disk parsers with arbitrary bytes. It must never crash, hang
// or trip ASan/UBSan, and what it accepts must round-trip.
//
// Input layout: byte 0 selects the mode (low 3 bits); the rest is the payload.
//   0  RecordSealer::Open (a sealed key record) under a fixed test KEK
//   1  LoadKek on a private temporary file holding the payload
//   2  ParseKeyFileName(payload, legacy = bit 3): accepted legacy names must be re-made exactly;
//      accepted owner-qualified names must keep their tag and re-make with the parsed parts
//   3  DecodeManifestPayload: an accepted manifest re-encodes to bytes that decode to the same
//   4  RecordSealer::OpenBlob (the sealed manifest / rotation journal) under the fixed KEK, then
//      DecodeManifestPayload on what authenticates
//
// Seeds: `fuzz_record -write_seeds=DIR` writes valid inputs of every mode (sealed under the fixed
// KEK) and exits; run_fuzz.sh uses it together with tests/fuzz/corpus_record/.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "keystore/record_codec.h"
#include "keystore/secret_bytes.h"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/spdlog.h"

namespace {

using namespace pqcd::server;

constexpr char kManifestMagic[4] = {'P', 'Q', 'K', 'M'};

const internal::RecordSealer& Sealer() {
  static const internal::RecordSealer* sealer = [] {
    std::vector<uint8_t> kek(32, 0x5a);
    SecretBytes secret(kek.data(), kek.size());
    return new internal::RecordSealer(secret);
  }();
  return *sealer;
}

const std::string& TempKekPath() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/pqcd-fuzz-kek-XXXXXX";
    const int fd = mkstemp(templ.data());
    if (fd < 0) std::abort();
    close(fd);
    return templ;
  }();
  return path;
}

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzKeyFileName(const std::string& name, bool legacy) {
  auto parsed = internal::ParseKeyFileName(name, legacy);
  if (!parsed) return;
  Check(internal::IsValidKeyId(parsed->key_id) && parsed->version != 0);
  if (legacy) {
    Check(parsed->owner_tag.empty());
    Check(internal::MakeLegacyKeyFileName(parsed->key_id, parsed->version, parsed->kind) == name);
  } else {
    Check(parsed->kind == internal::KeyFileKind::kRecord);
    Check(parsed->owner_tag.size() == internal::kOwnerTagChars);
    Check(name == parsed->owner_tag + "." + parsed->key_id + ".v" +
                      std::to_string(parsed->version) + ".key");
  }
}

void FuzzManifest(const uint8_t* p, size_t n) {
  internal::Manifest m;
  if (!internal::DecodeManifestPayload(p, n, &m)) return;
  const auto again = internal::EncodeManifestPayload(m);
  internal::Manifest m2;
  Check(internal::DecodeManifestPayload(again.data(), again.size(), &m2));
  Check(internal::EncodeManifestPayload(m2) == again);
  Check(m2.counter == m.counter && m2.keys.size() == m.keys.size());
}

int WriteSeeds(const char* dir) {
  auto write = [&](const std::string& name, uint8_t mode, const std::vector<uint8_t>& payload) {
    std::ofstream out(std::string(dir) + "/" + name, std::ios::binary);
    out.put(static_cast<char>(mode));
    out.write(reinterpret_cast<const char*>(payload.data()),
              static_cast<std::streamsize>(payload.size()));
    return out.good();
  };
  auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  bool ok = true;
  internal::RecordMeta meta;
  meta.key_id = "k-1";
  meta.version = 3;
  meta.algorithm = 2;
  meta.created_unix_ms = 1700000000000;
  meta.owner = "unix:uid:1000";
  meta.labels = {{"env", "test"}};
  meta.public_key = std::vector<uint8_t>(40, 7);
  meta.uid = std::string(internal::kUidBytes, 'u');
  std::vector<uint8_t> sk(64, 9);
  auto sealed = Sealer().Seal(meta, SecretBytes(sk.data(), sk.size()));
  ok = ok && sealed.ok() && write("record", 0, *sealed);
  ok = ok && write("kek-hex", 1, bytes(std::string(64, 'a') + "\n"));
  ok = ok && write("kek-raw", 1, std::vector<uint8_t>(32, 1));
  ok = ok && write("name", 2, bytes(internal::MakeKeyFileName("o", "k-1", 12)));
  ok = ok && write("name-legacy", 2 | 8, bytes("k-1.v12.key"));
  ok = ok && write("name-retired", 2 | 8, bytes("k.v2.retired"));
  internal::Manifest m;
  m.counter = 7;
  m.keys[{"alice", "k"}].high_water = 3;
  m.keys[{"alice", "k"}].versions[1] = std::string(internal::kUidBytes, 'a');
  m.keys[{"alice", "k"}].versions[3] = std::string(internal::kUidBytes, 'b');
  m.keys[{"bob", "k"}].high_water = 1;
  m.keys[{"bob", "k"}].versions[1] = std::string(internal::kUidBytes, 'c');
  const auto payload = internal::EncodeManifestPayload(m);
  ok = ok && write("manifest", 3, payload);
  auto blob = Sealer().SealBlob(kManifestMagic, payload);
  ok = ok && blob.ok() && write("manifest-sealed", 4, *blob);
  return ok ? 0 : 1;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>()));
  for (int i = 1; i < *argc; ++i) {
    const char* a = (*argv)[i];
    if (std::strncmp(a, "-write_seeds=", 13) == 0) std::exit(WriteSeeds(a + 13));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  const uint8_t* p = data + 1;
  const size_t n = size - 1;
  switch (sel & 7) {
    case 0: {
      auto r = Sealer().Open(p, n);
      if (r.failure == internal::OpenFailure::kNone) {
        Check(r.meta.uid.empty() || r.meta.uid.size() == internal::kUidBytes);
      }
      break;
    }
    case 1: {
      const std::string& path = TempKekPath();
      const int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) std::abort();
      size_t off = 0;
      while (off < n) {
        const ssize_t w = write(fd, p + off, n - off);
        if (w <= 0) std::abort();
        off += static_cast<size_t>(w);
      }
      close(fd);
      auto kek = internal::LoadKek(path);
      if (kek.ok()) Check(kek->size() == 32);
      break;
    }
    case 2:
      FuzzKeyFileName(std::string(reinterpret_cast<const char*>(p), n), (sel & 8) != 0);
      break;
    case 3:
      FuzzManifest(p, n);
      break;
    case 4: {
      std::vector<uint8_t> plain;
      std::string reason;
      if (Sealer().OpenBlob(kManifestMagic, p, n, &plain, &reason) ==
          internal::OpenFailure::kNone) {
        FuzzManifest(plain.data(), plain.size());
      }
      break;
    }
    default:
      break;
  }
  return 0;
}
