// TLS for the TCP listener with certificates that can be replaced while the daemon runs.
//
// At start the configured certificate chain, private key and client CA bundle are checked and
// copied into a private directory (mode 0700, under $TMPDIR or /tmp, removed at exit). gRPC's
// FileWatcherCertificateProvider watches the copies (1 s refresh), so new handshakes use whatever
// the copies hold while established connections keep theirs. Reload() (on SIGHUP) checks the
// configured files again and, only if the new set is sound (the chain and the CA bundle parse, the
// key matches the leaf certificate), atomically replaces the copies; a bad set is refused and the
// old one stays in use.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"

namespace pqcd::server {

// Checks a PEM set: the chain's first certificate and the key parse and match, and when `ca_pem`
// is not empty it holds at least one certificate and nothing else that fails to parse.
absl::Status ValidateTlsSet(const std::string& cert_pem, const std::string& key_pem,
                            const std::string& ca_pem);

// Makes TLS 1.3 the lowest version every TLS context created from now on accepts. gRPC 1.51 has
// no public setting for the minimum version of its TLS credentials, so this goes through
// OpenSSL's process-wide "system_default" TLS configuration (which every new SSL_CTX applies),
// disabling TLS 1.2 and older. Call before the server starts.
absl::Status RequireTls13ForNewTlsContexts();

class TlsFiles {
 public:
  struct Options {
    std::string cert_file;       // PEM chain, leaf first
    std::string key_file;        // PEM private key
    std::string client_ca_file;  // PEM CA bundle; "": no client certificates
  };
  static absl::StatusOr<std::unique_ptr<TlsFiles>> Create(Options options);
  ~TlsFiles();  // removes the private directory
  TlsFiles(const TlsFiles&) = delete;
  TlsFiles& operator=(const TlsFiles&) = delete;

  // Server credentials watching the copies: with a client CA, client certificates are required
  // and verified against it.
  std::shared_ptr<grpc::ServerCredentials> Credentials() const;
  // Re-reads and checks the configured files; replaces the copies only when the set is sound.
  absl::Status Reload();
  // Removes the private directory now (at exit).
  void RemoveCopies();
  const std::string& dir() const { return dir_; }

 private:
  explicit TlsFiles(Options options) : options_(std::move(options)) {}
  absl::Status InstallFromSources();

  Options options_;
  std::string dir_;
  std::mutex mu_;  // one install at a time
};

}  // namespace pqcd::server
