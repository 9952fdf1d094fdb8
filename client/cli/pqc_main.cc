// pqc: command-line client of the pqcd daemon.
//
// Exit codes (stable, for scripts): 0 success; 1 verification failed (verify: invalid signature;
// health: not SERVING); 2 usage or input error: what pqc refuses itself, and the daemon's answers
// INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION, OUT_OF_RANGE,
// PERMISSION_DENIED and UNAUTHENTICATED; 3 server or transport error: every other gRPC code
// (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED, CANCELLED, UNKNOWN, ...).
//
// --json: every command prints one JSON object on stdout, an error too:
// {"error": {"code": "<gRPC code name>", "message": "...", "exit": N}} (plus "hint" where pqc has
// one; code INVALID_ARGUMENT for what pqc refuses itself). The version of a held key is
// "key_version" in every output (keygen --hold, encaps/sign --key-id, the keys commands' key
// objects, whose "versions" lists every version that exists).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
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

// The exit code of an error status (the header comment's table): the caller's mistakes are 2,
// the daemon's or the transport's failures 3.
int ExitCodeOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
      return kUsage;
    default:
      return kServer;
  }
}

// An error that ends the command with an exit code. `status`: the gRPC code name (--json);
// INVALID_ARGUMENT for what pqc refuses itself.
struct Exit {
  Exit(int exit_code, std::string text) : code(exit_code), message(std::move(text)) {}
  // A failed call: its code decides the exit code.
  explicit Exit(const absl::Status& s)
      : code(ExitCodeOf(s.code())),
        message(s.message()),
        status(absl::StatusCodeToString(s.code())),
        answered(true) {}

  int code;
  std::string message;
  std::string status = "INVALID_ARGUMENT";
  bool answered = false;  // a failed call (printed with its code), not pqc's own refusal
  std::string hint;
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

std::string Decode(const std::string& data, const std::string& format, const std::string& what) {
  if (format == "raw") return data;
  auto r = format == "hex" ? pqcd::client::HexDecode(data) : pqcd::client::Base64Decode(data);
  if (!r.ok()) throw Exit{kUsage, what + ": " + std::string(r.status().message())};
  return *std::move(r);
}

bool IsStdin(const std::string& path) {
  return path.empty() || path == "-";
}

// An input: a file, or stdin for "-" (and ""). What cannot be read as one, a missing file, a
// directory, an unreadable file, is a usage error that names the file. Pipes and devices are
// read as they come.
class Input {
 public:
  Input(const std::string& path, const std::string& what)
      : name_(IsStdin(path) ? what + " from stdin" : what + " file '" + path + "'") {
    if (!IsStdin(path)) {
      fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) Fail(errno);
      owned_ = true;
    }
    struct stat st;
    const int err = ::fstat(fd_, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (err != 0) {
      if (owned_) ::close(fd_);
      Fail(err);
    }
  }
  ~Input() {
    if (owned_) ::close(fd_);
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;

  // The next piece of at most `max` bytes into *chunk; false at the end or on an error (which
  // CheckRead reports, once the call that the pieces fed has returned).
  bool Next(std::string* chunk, size_t max) {
    chunk->resize(max);
    for (;;) {
      const ssize_t n = ::read(fd_, chunk->data(), max);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error_ = errno;
        chunk->clear();
        return false;
      }
      chunk->resize(static_cast<size_t>(n));
      return n > 0;
    }
  }
  // Throws the usage error of a failed read, if there was one.
  void CheckRead() const {
    if (error_ != 0) Fail(error_);
  }
  std::string ReadAll() {
    std::string out, chunk;
    while (Next(&chunk, 1 << 16)) out += chunk;
    CheckRead();
    return out;
  }

 private:
  [[noreturn]] void Fail(int err) const {
    throw Exit{kUsage, "cannot read " + name_ + ": " + std::strerror(err)};
  }

  std::string name_;  // "message file '/tmp/m'", "message from stdin"
  int fd_ = STDIN_FILENO;
  bool owned_ = false;
  int error_ = 0;
};

std::string ReadBytes(const std::string& path, const std::string& what) {
  return Input(path, what).ReadAll();
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

// The inputs of one command, each named by its flag, that would read stdin: at most one may
// (two would split one stream between them, e.g. a key and an empty message).
void AtMostOneStdin(const std::vector<std::pair<std::string, bool>>& inputs) {
  std::vector<std::string> flags;
  for (const auto& [flag, reads_stdin] : inputs) {
    if (reads_stdin) flags.push_back(flag);
  }
  if (flags.size() < 2) return;
  std::string list;
  for (size_t i = 0; i < flags.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == flags.size() ? " and " : ", ") + flags[i];
  }
  throw Exit{kUsage, list + (flags.size() == 2 ? " would both" : " would all") +
                         " read stdin ('-', the default of --in and --ct): give at most one "
                         "input as '-'"};
}

// An output path that cannot be written (a directory, a missing directory) is refused before the
// call: a key made or a held key created would otherwise be lost or left behind.
void CheckOutputPath(const std::string& flag, const std::string& path) {
  if (IsStdin(path)) return;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Exit{kUsage, flag + ": '" + path + "' is a directory"};
    if (::access(path.c_str(), W_OK) != 0) {
      throw Exit{kUsage, flag + ": cannot write '" + path + "': " + std::strerror(errno)};
    }
    return;
  }
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw Exit{kUsage, flag + ": cannot write '" + path + "': " + std::strerror(errno)};
  }
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

using FamilyTest = bool (*)(Algorithm);

// The names of every algorithm of the given families (IsKem, IsDsa, IsHash), from the registry
// (help texts, errors): an algorithm added there is listed here without a change.
std::string AlgNames(std::initializer_list<FamilyTest> families) {
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

// "N bytes for A, B; M bytes for C": the seed size of every algorithm with a seed form (of one
// family, or of all), grouped by size, from the registry, in registry order.
std::string SeedSizes(std::optional<pqcd::kernels::Family> family = std::nullopt) {
  std::vector<std::pair<size_t, std::string>> groups;
  for (const auto& f : pqcd::kernels::kAlgorithms) {
    if (f.seed_bytes == 0 || (family && f.family != *family)) continue;
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

// The registry row of an algorithm the client named.
const pqcd::kernels::AlgorithmFacts& FactsOf(Algorithm alg) {
  for (const auto& f : pqcd::kernels::kAlgorithms) {
    if (f.api_value == static_cast<int>(alg)) return f;
  }
  throw Exit{kUsage, "algorithm " + std::string(pqcd::client::AlgorithmName(alg)) +
                         " is not in this pqc's registry"};
}

// --alg of `command`: an algorithm of one of its families; anything else is refused with the
// names it takes.
Algorithm ParseAlg(const std::string& name, const std::string& command,
                   std::initializer_list<FamilyTest> families) {
  const std::string valid = " (pqc " + command + " takes " + AlgNames(families) + ")";
  auto a = pqcd::client::ParseAlgorithm(name);
  if (!a) throw Exit{kUsage, "unknown algorithm '" + name + "'" + valid};
  if (std::none_of(families.begin(), families.end(), [&](auto in) { return in(*a); })) {
    throw Exit{kUsage, "pqc " + command + " does not take " +
                           std::string(pqcd::client::AlgorithmName(*a)) + valid};
  }
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
  if (!r.ok()) throw Exit(r.status());
  return *std::move(r);
}

std::unique_ptr<pqcd::client::Client> Connect(const Global& g) {
  pqcd::client::ClientOptions o;
  pqcd::cli::ApplyConnectionFlags(g.connection, o);
  o.default_timeout = absl::Seconds(g.timeout_s);
  auto c = pqcd::client::Client::Create(std::move(o));
  if (!c.ok()) {
    Exit e(c.status());
    e.answered = false;  // refused here, before any call
    throw e;
  }
  // --lane that cannot be had: a warning, not a refusal. --lane also comes from PQC_LANE, which
  // a shell sets for every call, TCP targets included, and the library answers such calls by
  // gRPC the same way it does when a daemon offers no lane; the warning says which happened.
  const std::string& lane = (*c)->lane_status();
  if (g.connection.lane && lane != "lanes") {
    const std::string why = lane.starts_with("gRPC: ") ? lane.substr(6) : lane;
    std::cerr << "pqc: warning: --lane not used (" << why << "): calling '" << g.connection.targets
              << "' by gRPC\n";
  }
  return *std::move(c);
}

// --format der|pem needs the algorithm's standard encoding (the hybrids have none). Checked
// before a key is made, so that no key is generated, or held, whose files cannot be written.
void CheckKeyFormat(const Global& g, Algorithm alg) {
  if (g.key_format == "raw" || pqcd::encoding::HasStandardEncoding(FactsOf(alg).id)) return;
  throw Exit{kUsage, "--format " + g.key_format + ": " +
                         std::string(pqcd::client::AlgorithmName(alg)) +
                         " has no standard key encoding (use --format raw)"};
}

// --format der|pem for a key the daemon returned raw: the public key (pk non-empty) as
// SubjectPublicKeyInfo, else the private key as PKCS#8: the seed form where the algorithm's
// PKCS#8 has one (ML-KEM, ML-DSA: the LAMPS recommendation), the private key itself where it has
// none (SLH-DSA, RFC 9909).
std::string EncodeKey(const Global& g, Algorithm alg, const std::string& pk, const std::string& sk,
                      const std::string& seed) {
  if (g.key_format == "raw") return pk.empty() ? sk : pk;
  const pqcd::kernels::AlgorithmId id = FactsOf(alg).id;
  const auto format = *pqcd::encoding::ParseKeyFormat(g.key_format);
  auto bytes = [](const std::string& s) {
    return pqcd::encoding::ByteView(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  if (!pk.empty()) {
    auto out = pqcd::encoding::EncodePublicKey(id, bytes(pk), format);
    if (!out.ok()) throw Exit{kUsage, "--format: " + std::string(out.status().message())};
    return std::string(out->begin(), out->end());
  }
  auto out = pqcd::encoding::EncodeGeneratedPrivateKey(id, bytes(seed), bytes(sk), format);
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

  void Add(CLI::App* cmd, const std::string& flag, const std::string& help) {
    auto* f = cmd->add_option(flag, file, help);
    auto* id = cmd->add_option("--key-id", key_id, "use the key held by the daemon under this id");
    cmd->add_option("--key-version", version, "version of the held key (0 = newest)");
    f->excludes(id);
    id->excludes(f);
  }
  bool held() const { return !key_id.empty(); }
  bool reads_stdin() const { return !held() && file == "-"; }
  pqcd::client::Key Get(const Global& g, const std::string& what) const {
    if (held()) return pqcd::client::Key::Held(key_id, version);
    if (file.empty()) throw Exit{kUsage, "give the " + what + " (file) or --key-id"};
    return pqcd::client::Key::Raw(ReadKeyInput(g, file, what));
  }
};

// --priv's help: the private key forms and the seed sizes of the family, from the registry.
std::string PrivateKeyHelp(pqcd::kernels::Family family) {
  return "private key file ('-' = stdin): the expanded private key, or its seed (" +
         SeedSizes(family) + "), raw (per --in-format) or PKCS#8 with --format der|pem";
}

// A held key's information; its version is "key_version" here as in every JSON output.
json KeyInfoJson(const Global& g, const pqcd::client::KeyInfo& k) {
  return json{{"key_id", k.key_id},
              {"key_version", k.version},
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
  std::cout << "key_id: " << k.key_id << "\nkey_version: " << k.version
            << "\nalgorithm: " << pqcd::client::AlgorithmName(k.algorithm)
            << "\ncreated: " << absl::FormatTime(absl::RFC3339_sec, k.created, absl::UTCTimeZone())
            << "\nowner: " << k.owner << "\npublic_key: " << JsonBytes(g, k.public_key) << '\n';
}

// The context of sign / verify (--context or --context-hex), within the algorithm's limit.
std::string ContextOf(Algorithm alg, const std::string& text, const std::string& hex) {
  std::string context = hex.empty() ? text : Decode(hex, "hex", "--context-hex");
  const size_t max = FactsOf(alg).max_context_bytes;
  if (context.size() > max) {
    throw Exit{kUsage, std::string(hex.empty() ? "--context" : "--context-hex") + ": at most " +
                           std::to_string(max) + " bytes for " +
                           std::string(pqcd::client::AlgorithmName(alg)) + ", got " +
                           std::to_string(context.size())};
  }
  return context;
}

pqcd::client::PreHash ParsePh(const std::string& name) {
  if (name.empty()) return pqcd::client::PreHash::kNone;
  auto p = pqcd::client::ParsePreHash(name);
  if (!p) throw Exit{kUsage, "unknown pre-hash '" + name + "'"};
  return *p;
}

// --owner of the keys commands: the API's owner field ("" = the caller's own keys).
pqcd::client::Owner OwnerOf(const std::string& owner) {
  return owner.empty() ? pqcd::client::Owner::Caller() : pqcd::client::Owner::Of(owner);
}

// The hint of an error that says the daemon was not reached.
std::string HintFor(const Global& g, const Exit& e) {
  const std::string where =
      "give the daemon's address with --target HOST:PORT|unix:PATH or the "
      "PQC_TARGET environment variable";
  if (e.status == "UNAVAILABLE") {
    // A plaintext client against a TLS listener sees its connection closed during the HTTP/2
    // handshake ("Socket closed", "Connection reset"): the daemon is there, but speaks TLS.
    const bool tcp = g.connection.targets.rfind("unix:", 0) != 0;
    const bool closed = e.message.find("Socket closed") != std::string::npos ||
                        e.message.find("Connection reset") != std::string::npos;
    if (tcp && closed && !g.connection.tls && g.connection.ca.empty()) {
      return "the daemon at '" + g.connection.targets +
             "' closed the connection: if it serves TLS (--tls-cert), connect with --tls and "
             "--ca FILE (and --cert/--key for mTLS); else " +
             where;
    }
    return "no pqcd could be reached at '" + g.connection.targets +
           "' (or it is shutting down): " + where;
  }
  if (e.status == "DEADLINE_EXCEEDED") {
    std::ostringstream t;
    t << g.timeout_s;
    return "no answer from '" + g.connection.targets + "' within --timeout " + t.str() +
           " s: a busy daemon needs a longer --timeout; one that is not there, " + where;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  Global g;
  CLI::App app{
      "pqc: command-line client of the pqcd post-quantum crypto daemon (KEMs, signatures, hashes; "
      "each command's --alg help lists its algorithms).\n"
      "Exit codes: 0 ok; 1 verification failed / not serving; 2 usage or input error: refused by "
      "pqc, or answered INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION, "
      "OUT_OF_RANGE, PERMISSION_DENIED or UNAUTHENTICATED by the daemon; 3 server or transport "
      "error: every other code (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, RESOURCE_EXHAUSTED, "
      "CANCELLED, UNKNOWN, ...).\n"
      "--json: one JSON object on stdout, also for an error: {\"error\": {\"code\": <gRPC code "
      "name>, \"message\": ..., \"exit\": N}}; a held key's version is \"key_version\" in every "
      "output.",
      "pqc"};
  app.require_subcommand(1);
  app.fallthrough();
  pqcd::cli::AddConnectionFlags(app, g.connection, "--target,-t", "PQC_TARGET");
  app.add_flag("--lane", g.connection.lane,
               "with a unix: target: send KeyGen, Encaps, Decaps, Sign, Verify and Hash through "
               "the daemon's shared-memory lane (docs/lanes.md); by gRPC, with a warning on "
               "stderr, when the target is not unix: or the daemon offers no lane")
      ->envname("PQC_LANE");
  app.add_option("--timeout", g.timeout_s, "deadline of each call, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--json", g.json,
               "print results, and errors, as one JSON object on stdout (bytes in hex, or base64 "
               "with --out-format)");
  app.add_option("--in-format", g.in_format, "encoding of input files and stdin")
      ->check(CLI::IsMember({"raw", "hex", "base64"}))
      ->capture_default_str();
  app.add_option("--out-format", g.out_format,
                 "encoding of outputs (default: hex on stdout, raw in files)")
      ->check(CLI::IsMember({"raw", "hex", "base64"}));
  app.add_option("--format", g.key_format,
                 "encoding of key files: raw, der or pem (SubjectPublicKeyInfo / PKCS#8; ML-KEM, "
                 "ML-DSA and SLH-DSA)")
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
  keygen->add_flag("--hold", kg.hold,
                   "keep the private key in the daemon; print its key id (not with --priv-out or "
                   "--seed-out)");
  keygen->add_option("--key-id", kg.key_id, "name of the held key (--hold; default: generated)");
  keygen->add_option("--label", kg.labels, "label k=v of the held key (--hold; repeatable)");
  keygen->add_option("--pub-out", kg.pub_out, "write the public key to this file");
  keygen->add_option("--priv-out", kg.priv_out, "write the (expanded) private key to this file");
  keygen->add_option("--seed-out", kg.seed_out, "write the private seed to this file");
  keygen->callback([&] {
    action = [&] {
      pqcd::client::KeyGenOp op;
      op.algorithm = ParseAlg(kg.alg, "keygen", {pqcd::client::IsKem, pqcd::client::IsDsa});
      if (!kg.seed.empty()) op.seed = Decode(kg.seed, "hex", "--seed");
      // Everything that could fail after the key is made is checked first: a key made and lost,
      // or held and never reported, is worse than a refusal.
      if (kg.hold && (!kg.priv_out.empty() || !kg.seed_out.empty())) {
        throw Exit{kUsage, std::string(kg.priv_out.empty() ? "--seed-out" : "--priv-out") +
                               ": with --hold the private key stays in the daemon (write only "
                               "--pub-out)"};
      }
      if (!kg.hold && (!kg.key_id.empty() || !kg.labels.empty())) {
        throw Exit{kUsage, std::string(kg.key_id.empty() ? "--label" : "--key-id") +
                               " names a held key: add --hold"};
      }
      if (!kg.pub_out.empty() || !kg.priv_out.empty()) CheckKeyFormat(g, op.algorithm);
      CheckOutputPath("--pub-out", kg.pub_out);
      CheckOutputPath("--priv-out", kg.priv_out);
      CheckOutputPath("--seed-out", kg.seed_out);
      op.hold = kg.hold;
      op.key_id = kg.key_id;
      op.labels = ParseLabels(kg.labels);
      auto client = Connect(g);
      auto kp = Check(client->KeyGen(op));
      if (!kg.pub_out.empty()) {
        WriteKey(g, kg.pub_out, EncodeKey(g, kp.algorithm, kp.public_key, {}, {}));
      }
      if (!kg.priv_out.empty()) {
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
  en.key.Add(encaps, "--pub", "encapsulation (public) key file ('-' = stdin)");
  encaps->add_option("--ct-out", en.ct_out, "write the ciphertext here (default: stdout)");
  encaps->add_option("--ss-out", en.ss_out, "write the shared secret here (default: stdout)");
  encaps->footer("With --key-id it also prints the held key's version used (key_version).");
  encaps->callback([&] {
    action = [&] {
      pqcd::client::EncapsOp op{ParseAlg(en.alg, "encaps", {pqcd::client::IsKem}),
                                en.key.Get(g, "public key")};
      CheckOutputPath("--ct-out", en.ct_out);
      CheckOutputPath("--ss-out", en.ss_out);
      auto client = Connect(g);
      auto r = Check(client->Encaps(op));
      if (!en.ct_out.empty()) WriteOutput(g, en.ct_out, r.ciphertext);
      if (!en.ss_out.empty()) WriteOutput(g, en.ss_out, r.shared_secret, /*secret=*/true);
      if (g.json) {
        json j{{"ciphertext", JsonBytes(g, r.ciphertext)},
               {"shared_secret", JsonBytes(g, r.shared_secret)}};
        if (en.key.held()) j["key_version"] = r.key_version;
        std::cout << j.dump(2) << '\n';
      } else {
        if (en.ct_out.empty()) std::cout << "ciphertext: " << JsonBytes(g, r.ciphertext) << '\n';
        if (en.ss_out.empty()) {
          std::cout << "shared_secret: " << JsonBytes(g, r.shared_secret) << '\n';
        }
        if (en.key.held()) std::cout << "key_version: " << r.key_version << '\n';
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
  de.key.Add(decaps, "--priv", PrivateKeyHelp(pqcd::kernels::Family::kKem));
  decaps->add_option("--ct", de.ct, "ciphertext file ('-' = stdin)")->capture_default_str();
  decaps->add_option("--out,-o", de.out, "write the shared secret here (default: stdout)");
  decaps->callback([&] {
    action = [&] {
      const Algorithm alg = ParseAlg(de.alg, "decaps", {pqcd::client::IsKem});
      AtMostOneStdin({{"--priv", de.key.reads_stdin()}, {"--ct", IsStdin(de.ct)}});
      CheckOutputPath("--out", de.out);
      pqcd::client::DecapsOp op{alg, de.key.Get(g, "private key"),
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
  sg.key.Add(sign, "--priv", PrivateKeyHelp(pqcd::kernels::Family::kDsa));
  sign->add_option("--in,-i", sg.in, "message file ('-' = stdin)")->capture_default_str();
  sign->add_option("--out,-o", sg.out, "write the signature here (default: stdout)");
  sign->add_option("--context", sg.context, "context string (0..255 bytes)");
  sign->add_option("--context-hex", sg.context_hex, "context as hex");
  sign->add_flag("--deterministic", sg.deterministic, "deterministic variant (rnd = 0^32)");
  sign->add_option("--prehash", sg.prehash, PreHashHelp());
  sign->add_flag("--external-mu", sg.external_mu, "the input is the 64-byte mu");
  sign->footer(
      "With --key-id it also prints the held key's version used, key_version: N (on stderr when "
      "the signature itself goes to stdout; in the object with --json).");
  sign->callback([&] {
    action = [&] {
      pqcd::client::SignOp op;
      op.algorithm = ParseAlg(sg.alg, "sign", {pqcd::client::IsDsa});
      AtMostOneStdin({{"--priv", sg.key.reads_stdin()}, {"--in", IsStdin(sg.in)}});
      op.context = ContextOf(op.algorithm, sg.context, sg.context_hex);
      CheckOutputPath("--out", sg.out);
      op.key = sg.key.Get(g, "private key");
      op.message = ReadInput(g, sg.in, "message");
      op.deterministic = sg.deterministic;
      op.pre_hash = ParsePh(sg.prehash);
      op.external_mu = sg.external_mu;
      auto client = Connect(g);
      auto r = Check(client->Sign(op));
      if (g.json) {
        json j{{"signature", JsonBytes(g, r.signature)}};
        if (sg.key.held()) j["key_version"] = r.key_version;
        std::cout << j.dump(2) << '\n';
        if (!sg.out.empty()) WriteOutput(g, sg.out, r.signature);
      } else {
        WriteOutput(g, sg.out, r.signature);
        if (sg.key.held()) {
          // stdout carries the signature alone when it goes there.
          (IsStdin(sg.out) ? std::cerr : std::cout) << "key_version: " << r.key_version << '\n';
        }
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
  vf.key.Add(verify, "--pub", "public key file ('-' = stdin)");
  verify->add_option("--sig,-s", vf.sig, "signature file ('-' = stdin)")->required();
  verify->add_option("--in,-i", vf.in, "message file ('-' = stdin)")->capture_default_str();
  verify->add_option("--context", vf.context, "context string (0..255 bytes)");
  verify->add_option("--context-hex", vf.context_hex, "context as hex");
  verify->add_option("--prehash", vf.prehash, PreHashHelp());
  verify->add_flag("--external-mu", vf.external_mu, "the input is the 64-byte mu");
  verify->callback([&] {
    action = [&] {
      pqcd::client::VerifyOp op;
      op.algorithm = ParseAlg(vf.alg, "verify", {pqcd::client::IsDsa});
      AtMostOneStdin(
          {{"--pub", vf.key.reads_stdin()}, {"--sig", IsStdin(vf.sig)}, {"--in", IsStdin(vf.in)}});
      op.context = ContextOf(op.algorithm, vf.context, vf.context_hex);
      op.key = vf.key.Get(g, "public key");
      op.signature = ReadInput(g, vf.sig, "signature");
      op.message = ReadInput(g, vf.in, "message");
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
      const Algorithm alg = ParseAlg(hs.alg, "hash", {pqcd::client::IsHash});
      CheckOutputPath("--out", hs.out);
      pqcd::client::HashResult r;
      if (text_opt->count() > 0) {
        auto client = Connect(g);
        r = Check(client->Hash({alg, hs.text, hs.length}));
      } else if (g.in_format == "raw") {
        Input in(hs.in, "input");
        auto client = Connect(g);
        auto streamed = client->HashStream(
            alg, [&](std::string* chunk) { return in.Next(chunk, 1 << 20); }, hs.length);
        in.CheckRead();  // a read error ended the stream early: not the file's digest
        r = Check(std::move(streamed));
      } else {
        const std::string data = ReadInput(g, hs.in, "input");
        auto client = Connect(g);
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
  const std::string owner_help =
      "the identity whose key this is (--admin identities only; e.g. unix:uid:1000, "
      "tls:dns:NAME; default: the caller's own)";
  auto* keys = app.add_subcommand("keys", "manage keys held by the daemon");
  keys->require_subcommand(1);
  std::vector<std::string> list_labels;
  std::string owner;
  bool all_owners = false;
  auto* klist = keys->add_subcommand("list", "list held keys (the caller's own by default)");
  klist->add_option("--label", list_labels, "only keys with this label k=v (repeatable)");
  auto* list_owner = klist->add_option(
      "--owner", owner,
      "list this identity's keys (--admin identities only; default: the caller's own)");
  auto* list_all = klist->add_flag("--all-owners", all_owners,
                                   "list every identity's keys (--admin identities only)");
  list_owner->excludes(list_all);
  list_all->excludes(list_owner);
  klist->callback([&] {
    action = [&] {
      auto client = Connect(g);
      auto ks = Check(client->ListKeys(all_owners ? pqcd::client::Owner::All() : OwnerOf(owner),
                                       ParseLabels(list_labels)));
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
  kget->add_option("--key-version,--version", kversion, "version (0 = newest)");
  kget->add_option("--owner", owner, owner_help);
  kget->callback([&] {
    action = [&] {
      auto client = Connect(g);
      const pqcd::client::KeyInfo info = Check(client->GetPublicKey(OwnerOf(owner), kid, kversion));
      if (g.key_format != "raw") {
        // Only the public key, as SubjectPublicKeyInfo (PEM text, or DER per --out-format).
        CheckKeyFormat(g, info.algorithm);
        WriteKey(g, "-", EncodeKey(g, info.algorithm, info.public_key, {}, {}));
        return kOk;
      }
      PrintKeyInfo(g, info);
      return kOk;
    };
  });
  auto* kdel = keys->add_subcommand("delete", "delete a held key (all versions, or --key-version)");
  kdel->add_option("key_id", kid, "key id")->required();
  kdel->add_option("--key-version,--version", kversion, "only this version");
  kdel->add_option("--owner", owner, owner_help);
  kdel->callback([&] {
    action = [&] {
      auto client = Connect(g);
      const uint32_t n = Check(client->DeleteKey(OwnerOf(owner), kid, kversion));
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
  kimp->add_option("--priv", im.priv,
                   "private key file ('-' = stdin): the expanded private key, or its seed (" +
                       SeedSizes() + "), raw (per --in-format) or PKCS#8 with --format der|pem")
      ->required();
  kimp->add_option(
      "--pub", im.pub,
      "public key file (optional: derived from the private key; must match when given)");
  kimp->add_option("--key-id", im.key_id, "name of the key (default: generated)");
  kimp->add_option("--label", im.labels, "label k=v (repeatable)");
  kimp->add_option("--owner", owner,
                   "import the key for this identity (--admin identities only; default: the "
                   "caller)");
  kimp->callback([&] {
    action = [&] {
      pqcd::client::ImportKeyOp op;
      op.algorithm = ParseAlg(im.alg, "keys import", {pqcd::client::IsKem, pqcd::client::IsDsa});
      AtMostOneStdin({{"--priv", IsStdin(im.priv)}, {"--pub", im.pub == "-"}});
      op.private_key = ReadKeyInput(g, im.priv, "private key");
      if (!im.pub.empty()) op.public_key = ReadKeyInput(g, im.pub, "public key");
      op.key_id = im.key_id;
      op.labels = ParseLabels(im.labels);
      op.owner = owner;
      auto client = Connect(g);
      PrintKeyInfo(g, Check(client->ImportKey(op)));
      return kOk;
    };
  });
  auto* krot = keys->add_subcommand("rotate", "create a new version of a held key");
  krot->add_option("key_id", kid, "key id")->required();
  krot->add_option("--owner", owner, owner_help);
  krot->callback([&] {
    action = [&] {
      auto client = Connect(g);
      PrintKeyInfo(g, Check(client->RotateKey(OwnerOf(owner), kid)));
      return kOk;
    };
  });

  // health
  std::string service;
  double wait_s = 0;
  auto* health = app.add_subcommand("health",
                                    "ask the daemon's grpc.health.v1 status (exit 0 SERVING, 1 "
                                    "not serving, 2 unknown --service, 3 unreachable)");
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

  // An error: text on stderr, or with --json one object on stdout (the header comment).
  const auto report = [&](Exit e) {
    if (e.hint.empty()) e.hint = HintFor(g, e);
    if (g.json) {
      json err{{"code", e.status}, {"message", e.message}, {"exit", e.code}};
      if (!e.hint.empty()) err["hint"] = e.hint;
      std::cout << json{{"error", err}}.dump(2) << '\n';
      return e.code;
    }
    std::cerr << "pqc: " << (e.answered ? e.status + ": " : "error: ") << e.message << '\n';
    if (!e.hint.empty()) std::cerr << "pqc: hint: " << e.hint << '\n';
    return e.code;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (g.json) return report(Exit{kUsage, e.what()});
    (void)app.exit(e);
    return kUsage;
  }
  if (!action) return kUsage;
  try {
    return action();
  } catch (const Exit& e) {
    return report(e);
  }
}
