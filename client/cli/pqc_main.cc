// pqc: command-line client of the pqcd daemon.
//
// Exit codes (stable, for scripts): 0 success, 1 verification failed (verify: invalid signature;
// health: not SERVING), 2 usage or input error, 3 server or transport error.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "connection_flags.h"
#include "pqcd/client/client.h"
#include "pqcd/encoding/key_encoding.h"

namespace {

using nlohmann::json;
using pqcd::client::Algorithm;

enum ExitCode { kOk = 0, kFailed = 1, kUsage = 2, kServer = 3 };

// An error that ends the command with an exit code.
struct Exit {
  int code;
  std::string message;
};

struct Global {
  pqcd::cli::ConnectionFlags connection;
  double timeout_s = 30;
  bool json = false;
  std::string in_format = "raw";
  std::string out_format;  // default: hex on stdout, raw in files
  // --format: encoding of key files (docs/encodings.md). raw: the FIPS bytes, read and written
  // per --in-format / --out-format; der / pem: SubjectPublicKeyInfo / PKCS#8, read as they are.
  std::string key_format = "raw";
};

std::string ReadAll(std::istream& in) {
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Decode(const std::string& data, const std::string& format, const std::string& what) {
  if (format == "raw") return data;
  auto r = format == "hex" ? pqcd::client::HexDecode(data) : pqcd::client::Base64Decode(data);
  if (!r.ok()) throw Exit{kUsage, what + ": " + std::string(r.status().message())};
  return *std::move(r);
}

std::string ReadBytes(const std::string& path, const std::string& what) {
  if (path.empty() || path == "-") return ReadAll(std::cin);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Exit{kUsage, "cannot read " + what + " file '" + path + "'"};
  return ReadAll(in);
}

// Reads a file ("-" = stdin) and decodes it per --in-format.
std::string ReadInput(const Global& g, const std::string& path, const std::string& what) {
  return Decode(ReadBytes(path, what), g.in_format, what);
}

// A key file: with --format der|pem the bytes as they are (the daemon decodes and checks them:
// raw, DER or PEM are all accepted there), else per --in-format.
std::string ReadKeyInput(const Global& g, const std::string& path, const std::string& what) {
  if (g.key_format == "raw") return ReadInput(g, path, what);
  return ReadBytes(path, what);
}

std::string Encode(const std::string& bytes, const std::string& format) {
  if (format == "raw") return bytes;
  if (format == "base64") return pqcd::client::Base64Encode(bytes);
  return pqcd::client::HexEncode(bytes);
}

// Writes bytes to a file (default format raw) or stdout ("-": default hex plus a newline). Secret
// outputs (private keys, seeds, shared secrets) are created with mode 0600, and an existing file is
// narrowed to 0600 before the secret is written into it.
void WriteOutput(const Global& g, const std::string& path, const std::string& bytes,
                 bool secret = false) {
  if (path.empty() || path == "-") {
    const std::string format = g.out_format.empty() ? "hex" : g.out_format;
    std::cout << Encode(bytes, format);
    if (format != "raw") std::cout << '\n';
    std::cout.flush();
    return;
  }
  const std::string format = g.out_format.empty() ? "raw" : g.out_format;
  std::string data = Encode(bytes, format);
  if (format != "raw") data += '\n';
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, secret ? 0600 : 0644);
  if (fd < 0 || (secret && ::fchmod(fd, 0600) != 0)) {
    if (fd >= 0) ::close(fd);
    throw Exit{kUsage, "cannot write '" + path + "'"};
  }
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const bool ok = done == data.size() && ::close(fd) == 0;
  if (secret) explicit_bzero(data.data(), data.size());
  if (!ok) throw Exit{kUsage, "cannot write '" + path + "'"};
}

std::string JsonBytes(const Global& g, const std::string& bytes) {
  return Encode(bytes, g.out_format == "base64" ? "base64" : "hex");
}

// The names of every algorithm of the given families (IsKem, IsDsa, IsHash), from the registry
// (help texts): an algorithm added there is listed here without a change.
std::string AlgNames(std::initializer_list<bool (*)(Algorithm)> families) {
  std::string out;
  for (Algorithm a : pqcd::client::AllAlgorithms()) {
    if (std::any_of(families.begin(), families.end(), [a](auto in) { return in(a); })) {
      if (!out.empty()) out += ", ";
      out += pqcd::client::AlgorithmName(a);
    }
  }
  return out;
}

// --prehash's help: every pre-hash (the proto's PreHash values, named by the registry).
std::string PreHashHelp() {
  std::string out = "HashML-DSA / HashSLH-DSA pre-hash (";
  for (pqcd::client::PreHash p : pqcd::client::AllPreHashes()) {
    if (p != pqcd::client::AllPreHashes().front()) out += ", ";
    out += pqcd::client::PreHashName(p);
  }
  return out + "; default: none, pure signing)";
}

// "N bytes for A, B; M bytes for C": the seed size of every algorithm with a seed form, grouped
// by size, from the registry (--seed's help), in registry order.
std::string SeedSizes() {
  std::vector<std::pair<size_t, std::string>> groups;
  for (const auto& f : pqcd::kernels::kAlgorithms) {
    if (f.seed_bytes == 0) continue;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& e) { return e.first == f.seed_bytes; });
    if (g == groups.end()) {
      groups.emplace_back(f.seed_bytes, std::string(f.name));
    } else {
      g->second += ", " + std::string(f.name);
    }
  }
  std::string out;
  for (const auto& [bytes, names] : groups) {
    if (!out.empty()) out += "; ";
    out += std::to_string(bytes) + " bytes for " + names;
  }
  return out;
}

Algorithm ParseAlg(const std::string& name) {
  auto a = pqcd::client::ParseAlgorithm(name);
  if (!a) throw Exit{kUsage, "unknown algorithm '" + name + "'"};
  return *a;
}

std::map<std::string, std::string> ParseLabels(const std::vector<std::string>& labels) {
  std::map<std::string, std::string> out;
  for (const auto& l : labels) {
    const size_t eq = l.find('=');
    if (eq == std::string::npos || eq == 0) throw Exit{kUsage, "label '" + l + "' is not k=v"};
    out[l.substr(0, eq)] = l.substr(eq + 1);
  }
  return out;
}

template <class T>
T Check(absl::StatusOr<T> r) {
  if (!r.ok()) {
    throw Exit{kServer, std::string(absl::StatusCodeToString(r.status().code())) + ": " +
                            std::string(r.status().message())};
  }
  return *std::move(r);
}

std::unique_ptr<pqcd::client::Client> Connect(const Global& g) {
  pqcd::client::ClientOptions o;
  pqcd::cli::ApplyConnectionFlags(g.connection, o);
  o.default_timeout = absl::Seconds(g.timeout_s);
  auto c = pqcd::client::Client::Create(std::move(o));
  if (!c.ok()) {
    const int code = c.status().code() == absl::StatusCode::kInvalidArgument ||
                             c.status().code() == absl::StatusCode::kNotFound
                         ? kUsage
                         : kServer;
    throw Exit{code, std::string(c.status().message())};
  }
  return *std::move(c);
}

// --format der|pem for a key the daemon returned raw: the public key (pk non-empty) as
// SubjectPublicKeyInfo, else the private key as PKCS#8 (seed form when there is a seed).
std::string EncodeKey(const Global& g, pqcd::client::Algorithm alg, const std::string& pk,
                      const std::string& sk, const std::string& seed) {
  if (g.key_format == "raw") return pk.empty() ? sk : pk;
  const int api = static_cast<int>(alg);
  const pqcd::kernels::AlgorithmFacts* facts = nullptr;
  for (const auto& f : pqcd::kernels::kAlgorithms) {
    if (f.api_value == api) facts = &f;
  }
  if (facts == nullptr) throw Exit{kUsage, "--format: unknown algorithm"};
  const auto format = *pqcd::encoding::ParseKeyFormat(g.key_format);
  auto bytes = [](const std::string& s) {
    return pqcd::encoding::ByteView(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  if (!pk.empty()) {
    auto out = pqcd::encoding::EncodePublicKey(facts->id, bytes(pk), format);
    if (!out.ok()) throw Exit{kUsage, "--format: " + std::string(out.status().message())};
    return std::string(out->begin(), out->end());
  }
  auto out = seed.empty() ? pqcd::encoding::EncodePrivateKey(facts->id, {}, bytes(sk), format)
                          : pqcd::encoding::EncodePrivateKey(facts->id, bytes(seed), {}, format);
  if (!out.ok()) throw Exit{kUsage, "--format: " + std::string(out.status().message())};
  return std::string(reinterpret_cast<const char*>(out->data()), out->size());
}

// A key output: PEM is text, written as it is; DER and raw follow --out-format.
void WriteKey(const Global& g, const std::string& path, const std::string& bytes,
              bool secret = false) {
  if (g.key_format != "pem") return WriteOutput(g, path, bytes, secret);
  Global text = g;
  text.out_format = "raw";
  WriteOutput(text, path, bytes, secret);
}

// The key of an operation: a file or a held key id.
struct KeyArgs {
  std::string file;
  std::string key_id;
  uint32_t version = 0;

  void Add(CLI::App* cmd, const std::string& flag, const std::string& what) {
    auto* f = cmd->add_option(flag, file, what + " file ('-' = stdin)");
    auto* id = cmd->add_option("--key-id", key_id, "use the key held by the daemon under this id");
    cmd->add_option("--key-version", version, "version of the held key (0 = newest)");
    f->excludes(id);
    id->excludes(f);
  }
  pqcd::client::Key Get(const Global& g, const std::string& what) const {
    if (!key_id.empty()) return pqcd::client::Key::Held(key_id, version);
    if (file.empty()) throw Exit{kUsage, "give the " + what + " (file) or --key-id"};
    return pqcd::client::Key::Raw(ReadKeyInput(g, file, what));
  }
};

json KeyInfoJson(const Global& g, const pqcd::client::KeyInfo& k) {
  return json{{"key_id", k.key_id},
              {"version", k.version},
              {"versions", k.versions},
              {"algorithm", std::string(pqcd::client::AlgorithmName(k.algorithm))},
              {"created", absl::FormatTime(absl::RFC3339_sec, k.created, absl::UTCTimeZone())},
              {"owner", k.owner},
              {"labels", k.labels},
              {"public_key", JsonBytes(g, k.public_key)}};
}

void PrintKeyInfo(const Global& g, const pqcd::client::KeyInfo& k) {
  if (g.json) {
    std::cout << KeyInfoJson(g, k).dump(2) << '\n';
    return;
  }
  std::cout << "key_id: " << k.key_id << "\nversion: " << k.version
            << "\nalgorithm: " << pqcd::client::AlgorithmName(k.algorithm)
            << "\ncreated: " << absl::FormatTime(absl::RFC3339_sec, k.created, absl::UTCTimeZone())
            << "\nowner: " << k.owner << "\npublic_key: " << JsonBytes(g, k.public_key) << '\n';
}

std::string ContextOf(const std::string& text, const std::string& hex) {
  if (!hex.empty()) return Decode(hex, "hex", "--context-hex");
  return text;
}

pqcd::client::PreHash ParsePh(const std::string& name) {
  if (name.empty()) return pqcd::client::PreHash::kNone;
  auto p = pqcd::client::ParsePreHash(name);
  if (!p) throw Exit{kUsage, "unknown pre-hash '" + name + "'"};
  return *p;
}

}  // namespace

int main(int argc, char** argv) {
  Global g;
  CLI::App app{
      "pqc: command-line client of the pqcd post-quantum crypto daemon (KEMs, signatures, hashes; "
      "each command's --alg help lists its algorithms).\n"
      "Exit codes: 0 ok, 1 verification failed / not serving, 2 usage or input error, "
      "3 server or transport error.",
      "pqc"};
  app.require_subcommand(1);
  app.fallthrough();
  pqcd::cli::AddConnectionFlags(app, g.connection, "--target,-t", "PQC_TARGET");
  app.add_flag("--lane", g.connection.lane,
               "with a unix: target: send KeyGen, Encaps, Decaps, Sign, Verify and Hash through "
               "the daemon's shared-memory lane (docs/lanes.md); gRPC when it offers none")
      ->envname("PQC_LANE");
  app.add_option("--timeout", g.timeout_s, "deadline of each call, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--json", g.json,
               "print results as JSON (bytes in hex, or base64 with --out-format)");
  app.add_option("--in-format", g.in_format, "encoding of input files and stdin")
      ->check(CLI::IsMember({"raw", "hex", "base64"}))
      ->capture_default_str();
  app.add_option("--out-format", g.out_format,
                 "encoding of outputs (default: hex on stdout, raw in files)")
      ->check(CLI::IsMember({"raw", "hex", "base64"}));
  app.add_option("--format", g.key_format,
                 "encoding of key files: raw, der or pem (SubjectPublicKeyInfo / PKCS#8)")
      ->check(CLI::IsMember({"raw", "der", "pem"}))
      ->capture_default_str();

  std::function<int()> action;

  // keygen
  struct {
    std::string alg, seed, key_id, pub_out, priv_out, seed_out;
    bool hold = false;
    std::vector<std::string> labels;
  } kg;
  auto* keygen = app.add_subcommand("keygen", "generate a KEM or signature key pair");
  keygen->add_option("--alg,-a", kg.alg, AlgNames({pqcd::client::IsKem, pqcd::client::IsDsa}))
      ->required();
  keygen->add_option("--seed", kg.seed,
                     "deterministic key generation from this seed, in hex: " + SeedSizes());
  keygen->add_flag("--hold", kg.hold, "keep the private key in the daemon; print its key id");
  keygen->add_option("--key-id", kg.key_id, "name of the held key (default: generated)");
  keygen->add_option("--label", kg.labels, "label k=v of the held key (repeatable)");
  keygen->add_option("--pub-out", kg.pub_out, "write the public key to this file");
  keygen->add_option("--priv-out", kg.priv_out, "write the (expanded) private key to this file");
  keygen->add_option("--seed-out", kg.seed_out, "write the private seed to this file");
  keygen->callback([&] {
    action = [&] {
      pqcd::client::KeyGenOp op;
      op.algorithm = ParseAlg(kg.alg);
      if (!kg.seed.empty()) op.seed = Decode(kg.seed, "hex", "--seed");
      op.hold = kg.hold;
      op.key_id = kg.key_id;
      op.labels = ParseLabels(kg.labels);
      auto client = Connect(g);
      auto kp = Check(client->KeyGen(op));
      if (!kg.pub_out.empty()) {
        WriteKey(g, kg.pub_out, EncodeKey(g, kp.algorithm, kp.public_key, {}, {}));
      }
      if (!kg.priv_out.empty()) {
        // PKCS#8 in the seed form when there is a seed (the LAMPS recommendation).
        WriteKey(g, kg.priv_out, EncodeKey(g, kp.algorithm, {}, kp.private_key, kp.seed),
                 /*secret=*/true);
      }
      if (!kg.seed_out.empty()) WriteOutput(g, kg.seed_out, kp.seed, /*secret=*/true);
      if (g.json) {
        json j{{"algorithm", std::string(pqcd::client::AlgorithmName(kp.algorithm))},
               {"public_key", JsonBytes(g, kp.public_key)}};
        if (!kp.key_id.empty()) {
          j["key_id"] = kp.key_id;
          j["key_version"] = kp.key_version;
        } else {
          j["private_key"] = JsonBytes(g, kp.private_key);
          j["seed"] = JsonBytes(g, kp.seed);
        }
        std::cout << j.dump(2) << '\n';
      } else if (!kp.key_id.empty()) {
        std::cout << "key_id: " << kp.key_id << "\nkey_version: " << kp.key_version << '\n';
        if (kg.pub_out.empty()) std::cout << "public_key: " << JsonBytes(g, kp.public_key) << '\n';
      } else if (kg.pub_out.empty() && kg.priv_out.empty() && kg.seed_out.empty()) {
        std::cout << "public_key: " << JsonBytes(g, kp.public_key)
                  << "\nprivate_key: " << JsonBytes(g, kp.private_key)
                  << "\nseed: " << JsonBytes(g, kp.seed) << '\n';
      }
      return kOk;
    };
  });

  // encaps
  struct {
    std::string alg, ct_out, ss_out;
    KeyArgs key;
  } en;
  auto* encaps = app.add_subcommand("encaps", "encapsulate a fresh shared secret (KEM)");
  encaps->add_option("--alg,-a", en.alg, AlgNames({pqcd::client::IsKem}))->required();
  en.key.Add(encaps, "--pub", "encapsulation (public) key");
  encaps->add_option("--ct-out", en.ct_out, "write the ciphertext here (default: stdout)");
  encaps->add_option("--ss-out", en.ss_out, "write the shared secret here (default: stdout)");
  encaps->callback([&] {
    action = [&] {
      pqcd::client::EncapsOp op{ParseAlg(en.alg), en.key.Get(g, "public key")};
      auto client = Connect(g);
      auto r = Check(client->Encaps(op));
      if (!en.ct_out.empty()) WriteOutput(g, en.ct_out, r.ciphertext);
      if (!en.ss_out.empty()) WriteOutput(g, en.ss_out, r.shared_secret, /*secret=*/true);
      if (g.json) {
        std::cout << json{{"ciphertext", JsonBytes(g, r.ciphertext)},
                          {"shared_secret", JsonBytes(g, r.shared_secret)}}
                         .dump(2)
                  << '\n';
      } else if (en.ct_out.empty() || en.ss_out.empty()) {
        if (en.ct_out.empty()) std::cout << "ciphertext: " << JsonBytes(g, r.ciphertext) << '\n';
        if (en.ss_out.empty()) {
          std::cout << "shared_secret: " << JsonBytes(g, r.shared_secret) << '\n';
        }
      }
      return kOk;
    };
  });

  // decaps
  struct {
    std::string alg, ct = "-", out;
    KeyArgs key;
  } de;
  auto* decaps = app.add_subcommand("decaps", "decapsulate a ciphertext (KEM)");
  decaps->add_option("--alg,-a", de.alg, AlgNames({pqcd::client::IsKem}))->required();
  de.key.Add(decaps, "--priv", "decapsulation (private) key or 64-byte seed");
  decaps->add_option("--ct", de.ct, "ciphertext file ('-' = stdin)")->capture_default_str();
  decaps->add_option("--out,-o", de.out, "write the shared secret here (default: stdout)");
  decaps->callback([&] {
    action = [&] {
      pqcd::client::DecapsOp op{ParseAlg(de.alg), de.key.Get(g, "private key"),
                                ReadInput(g, de.ct, "ciphertext")};
      auto client = Connect(g);
      auto r = Check(client->Decaps(op));
      if (g.json) {
        std::cout << json{{"shared_secret", JsonBytes(g, r.shared_secret)}}.dump(2) << '\n';
        if (!de.out.empty()) WriteOutput(g, de.out, r.shared_secret, /*secret=*/true);
      } else {
        WriteOutput(g, de.out, r.shared_secret, /*secret=*/true);
      }
      return kOk;
    };
  });

  // sign
  struct {
    std::string alg, in = "-", out, context, context_hex, prehash;
    bool deterministic = false, external_mu = false;
    KeyArgs key;
  } sg;
  auto* sign = app.add_subcommand("sign", "sign a message (pure, or pre-hashed with --prehash)");
  sign->add_option("--alg,-a", sg.alg, AlgNames({pqcd::client::IsDsa}))->required();
  sg.key.Add(sign, "--priv", "private key or 32-byte seed");
  sign->add_option("--in,-i", sg.in, "message file ('-' = stdin)")->capture_default_str();
  sign->add_option("--out,-o", sg.out, "write the signature here (default: stdout)");
  sign->add_option("--context", sg.context, "context string (0..255 bytes)");
  sign->add_option("--context-hex", sg.context_hex, "context as hex");
  sign->add_flag("--deterministic", sg.deterministic, "deterministic variant (rnd = 0^32)");
  sign->add_option("--prehash", sg.prehash, PreHashHelp());
  sign->add_flag("--external-mu", sg.external_mu, "the input is the 64-byte mu");
  sign->callback([&] {
    action = [&] {
      pqcd::client::SignOp op;
      op.algorithm = ParseAlg(sg.alg);
      op.key = sg.key.Get(g, "private key");
      op.message = ReadInput(g, sg.in, "message");
      op.context = ContextOf(sg.context, sg.context_hex);
      op.deterministic = sg.deterministic;
      op.pre_hash = ParsePh(sg.prehash);
      op.external_mu = sg.external_mu;
      auto client = Connect(g);
      auto r = Check(client->Sign(op));
      if (g.json) {
        std::cout << json{{"signature", JsonBytes(g, r.signature)}}.dump(2) << '\n';
        if (!sg.out.empty()) WriteOutput(g, sg.out, r.signature);
      } else {
        WriteOutput(g, sg.out, r.signature);
      }
      return kOk;
    };
  });

  // verify
  struct {
    std::string alg, in = "-", sig, context, context_hex, prehash;
    bool external_mu = false;
    KeyArgs key;
  } vf;
  auto* verify = app.add_subcommand("verify", "verify a signature (exit 0 valid, 1 invalid)");
  verify->add_option("--alg,-a", vf.alg, AlgNames({pqcd::client::IsDsa}))->required();
  vf.key.Add(verify, "--pub", "public key");
  verify->add_option("--sig,-s", vf.sig, "signature file")->required();
  verify->add_option("--in,-i", vf.in, "message file ('-' = stdin)")->capture_default_str();
  verify->add_option("--context", vf.context, "context string (0..255 bytes)");
  verify->add_option("--context-hex", vf.context_hex, "context as hex");
  verify->add_option("--prehash", vf.prehash, PreHashHelp());
  verify->add_flag("--external-mu", vf.external_mu, "the input is the 64-byte mu");
  verify->callback([&] {
    action = [&] {
      pqcd::client::VerifyOp op;
      op.algorithm = ParseAlg(vf.alg);
      op.key = vf.key.Get(g, "public key");
      op.signature = ReadInput(g, vf.sig, "signature");
      op.message = ReadInput(g, vf.in, "message");
      op.context = ContextOf(vf.context, vf.context_hex);
      op.pre_hash = ParsePh(vf.prehash);
      op.external_mu = vf.external_mu;
      auto client = Connect(g);
      auto r = Check(client->Verify(op));
      if (g.json) {
        std::cout << json{{"valid", r.valid}}.dump(2) << '\n';
      } else {
        std::cout << (r.valid ? "valid" : "invalid") << '\n';
      }
      return r.valid ? kOk : kFailed;
    };
  });

  // hash
  struct {
    std::string alg, in = "-", out, text;
    bool has_text = false;
    uint32_t length = 0;
  } hs;
  auto* hash = app.add_subcommand("hash", "hash a file or stdin (streamed, any size)");
  hash->add_option("--alg,-a", hs.alg, AlgNames({pqcd::client::IsHash}))->required();
  hash->add_option("--in,-i", hs.in, "input file ('-' = stdin)")->capture_default_str();
  auto* text_opt = hash->add_option("--text", hs.text, "hash this string instead of a file");
  hash->add_option("--length,-l", hs.length, "SHAKE output length in bytes");
  hash->add_option("--out,-o", hs.out, "write the digest here (default: stdout)");
  hash->callback([&] {
    action = [&] {
      const Algorithm alg = ParseAlg(hs.alg);
      auto client = Connect(g);
      pqcd::client::HashResult r;
      if (text_opt->count() > 0) {
        r = Check(client->Hash({alg, hs.text, hs.length}));
      } else if (g.in_format == "raw") {
        std::ifstream file;
        std::istream* in = &std::cin;
        if (!hs.in.empty() && hs.in != "-") {
          file.open(hs.in, std::ios::binary);
          if (!file) throw Exit{kUsage, "cannot read input file '" + hs.in + "'"};
          in = &file;
        }
        r = Check(client->HashStream(alg, *in, hs.length));
      } else {
        const std::string data = ReadInput(g, hs.in, "input");
        size_t pos = 0;
        r = Check(client->HashStream(
            alg,
            [&](std::string* chunk) {
              if (pos >= data.size() && pos > 0) return false;
              *chunk = data.substr(pos, 1 << 20);
              pos += std::max<size_t>(chunk->size(), 1);
              return true;
            },
            hs.length));
      }
      if (g.json) {
        std::cout << json{{"algorithm", std::string(pqcd::client::AlgorithmName(alg))},
                          {"digest", JsonBytes(g, r.digest)}}
                         .dump(2)
                  << '\n';
        if (!hs.out.empty()) WriteOutput(g, hs.out, r.digest);
      } else {
        WriteOutput(g, hs.out, r.digest);
      }
      return kOk;
    };
  });

  // keys
  auto* keys = app.add_subcommand("keys", "manage keys held by the daemon");
  keys->require_subcommand(1);
  std::vector<std::string> list_labels;
  auto* klist = keys->add_subcommand("list", "list held keys");
  klist->add_option("--label", list_labels, "only keys with this label k=v (repeatable)");
  klist->callback([&] {
    action = [&] {
      auto client = Connect(g);
      auto ks = Check(client->ListKeys(ParseLabels(list_labels)));
      if (g.json) {
        json arr = json::array();
        for (const auto& k : ks) arr.push_back(KeyInfoJson(g, k));
        std::cout << json{{"keys", arr}}.dump(2) << '\n';
      } else {
        for (const auto& k : ks) {
          std::cout << k.key_id << '\t' << pqcd::client::AlgorithmName(k.algorithm) << "\tv"
                    << k.version << '\t' << k.owner << '\n';
        }
      }
      return kOk;
    };
  });
  std::string kid;
  uint32_t kversion = 0;
  auto* kget = keys->add_subcommand("get", "show a held key and its public key");
  kget->add_option("key_id", kid, "key id")->required();
  kget->add_option("--version", kversion, "version (0 = newest)");
  kget->callback([&] {
    action = [&] {
      auto client = Connect(g);
      const pqcd::client::KeyInfo info = Check(client->GetPublicKey(kid, kversion));
      if (g.key_format != "raw") {
        // Only the public key, as SubjectPublicKeyInfo (PEM text, or DER per --out-format).
        WriteKey(g, "-", EncodeKey(g, info.algorithm, info.public_key, {}, {}));
        return kOk;
      }
      PrintKeyInfo(g, info);
      return kOk;
    };
  });
  auto* kdel = keys->add_subcommand("delete", "delete a held key (all versions, or --version)");
  kdel->add_option("key_id", kid, "key id")->required();
  kdel->add_option("--version", kversion, "only this version");
  kdel->callback([&] {
    action = [&] {
      auto client = Connect(g);
      const uint32_t n = Check(client->DeleteKey(kid, kversion));
      if (g.json) {
        std::cout << json{{"deleted_versions", n}}.dump(2) << '\n';
      } else {
        std::cout << "deleted_versions: " << n << '\n';
      }
      return kOk;
    };
  });
  struct {
    std::string alg, priv, pub, key_id;
    std::vector<std::string> labels;
  } im;
  auto* kimp = keys->add_subcommand("import", "import a private key into the daemon");
  kimp->add_option("--alg,-a", im.alg, AlgNames({pqcd::client::IsKem, pqcd::client::IsDsa}))
      ->required();
  kimp->add_option("--priv", im.priv, "private key or seed file ('-' = stdin)")->required();
  kimp->add_option(
      "--pub", im.pub,
      "public key file (optional: derived from the private key; must match when given)");
  kimp->add_option("--key-id", im.key_id, "name of the key (default: generated)");
  kimp->add_option("--label", im.labels, "label k=v (repeatable)");
  kimp->callback([&] {
    action = [&] {
      pqcd::client::ImportKeyOp op;
      op.algorithm = ParseAlg(im.alg);
      op.private_key = ReadKeyInput(g, im.priv, "private key");
      if (!im.pub.empty()) op.public_key = ReadKeyInput(g, im.pub, "public key");
      op.key_id = im.key_id;
      op.labels = ParseLabels(im.labels);
      auto client = Connect(g);
      PrintKeyInfo(g, Check(client->ImportKey(op)));
      return kOk;
    };
  });
  auto* krot = keys->add_subcommand("rotate", "create a new version of a held key");
  krot->add_option("key_id", kid, "key id")->required();
  krot->callback([&] {
    action = [&] {
      auto client = Connect(g);
      PrintKeyInfo(g, Check(client->RotateKey(kid)));
      return kOk;
    };
  });

  // health
  std::string service;
  double wait_s = 0;
  auto* health = app.add_subcommand("health",
                                    "ask the daemon's grpc.health.v1 status "
                                    "(exit 0 SERVING, 1 not serving, 3 unreachable)");
  health->add_option("--service", service, "service name (default: the whole server)");
  health->add_option("--wait", wait_s, "wait up to this many seconds for SERVING");
  health->callback([&] {
    action = [&] {
      auto client = Connect(g);
      if (wait_s > 0) (void)client->WaitForServing(absl::Seconds(wait_s));
      const auto h = Check(client->Health(service));
      const std::string name(pqcd::client::HealthStatusName(h));
      if (g.json) {
        std::cout << json{{"status", name}}.dump(2) << '\n';
      } else {
        std::cout << name << '\n';
      }
      return h == pqcd::client::HealthStatus::kServing ? kOk : kFailed;
    };
  });

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    (void)app.exit(e);
    return kUsage;
  }
  if (!action) return kUsage;
  try {
    return action();
  } catch (const Exit& e) {
    std::cerr << "pqc: " << (e.code == kUsage ? "error: " : "") << e.message << '\n';
    return e.code;
  }
}
