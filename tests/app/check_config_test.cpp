// `lm-warden check-config FILE`: the real binary on valid and broken files.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>

#include "support/certs.hpp"
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace {

using test_support::ChildProcess;
using test_support::TempDir;

struct Checked {
  int code = -1;
  std::string out;
  std::string err;
};

Checked check(const std::string& path) {
  ChildProcess p({WARDEN_BINARY, "check-config", path});
  Checked c;
  c.code = p.wait_exit(std::chrono::seconds(20)).value_or(-1);
  c.out = p.stdout_text();
  c.err = p.stderr_text();
  return c;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

TEST(CheckConfig, TheExampleConfigIsValidInOneLine) {
  const std::string path = std::string(WARDEN_SOURCE_DIR) + "/config/warden.example.yaml";
  const Checked c = check(path);
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(c.out.find("lm-warden check-config: " + path + " is valid ("), 0U) << c.out;
  EXPECT_EQ(c.out.find('\n'), c.out.size() - 1) << "one line: " << c.out;
  EXPECT_EQ(c.err, "");
}

TEST(CheckConfig, EveryErrorIsReportedWithItsLineAndTheExitCodeIsOne) {
  TempDir dir;
  const std::string path = dir.file("w.yaml");
  write(path,
        "listen: 127.0.0.1:8080\n"
        "models:\n"
        "  - name: a\n"
        "    colour: blue\n"
        "    max_num_seqs: -3\n"
        "    replicas: { urls: [http://127.0.0.1:8001] }\n");
  const Checked c = check(path);
  EXPECT_EQ(c.code, 1);
  EXPECT_EQ(c.out, "");
  EXPECT_NE(c.err.find(path + ":4:"), std::string::npos) << c.err;  // the unknown key
  EXPECT_NE(c.err.find(path + ":5:"), std::string::npos) << c.err;  // the bad number
  EXPECT_NE(c.err.find("is not valid (2 errors)"), std::string::npos) << c.err;
}

TEST(CheckConfig, ReadsOnlyTheFileNotTheStateDirectoryNorTheEngines) {
  TempDir dir;
  const std::string path = dir.file("w.yaml");
  // A state directory that cannot be created and an engine nothing answers on: serve would fail on the
  // first and mark the second unhealthy; the check reads the file only.
  write(path,
        "state_dir: /proc/no-such-dir/state\n"
        "models:\n"
        "  - name: a\n"
        "    replicas: { urls: [http://127.0.0.1:1] }\n");
  const Checked c = check(path);
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("(1 model, 1 replica, listen 127.0.0.1:8080)"), std::string::npos) << c.out;
}

TEST(CheckConfig, AMissingFileOrBrokenYamlIsAnError) {
  TempDir dir;
  const Checked missing = check(dir.file("absent.yaml"));
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("cannot be read"), std::string::npos) << missing.err;
  const std::string path = dir.file("broken.yaml");
  write(path, "models: [\n  - name: a\n");
  const Checked broken = check(path);
  EXPECT_EQ(broken.code, 1);
  EXPECT_NE(broken.err.find(path + ":"), std::string::npos) << broken.err;
}

}  // namespace

// The TLS files are read and checked as at a start: a key that does not belong to its certificate, and a
// CA file that is not there, each reported with the section's line.
TEST(CheckConfig, TlsFilesAreCheckedWithTheirSectionsLine) {
  TempDir dir;
  const auto cert = test_support::make_certificate(dir.path, "a");
  const auto other = test_support::make_certificate(dir.path, "b");
  const std::string path = dir.file("w.yaml");
  write(path, "tls: { cert_file: " + cert.cert + ", key_file: " + cert.key +
                  " }\nmodels:\n  - name: a\n    replicas: { urls: [https://localhost:8001] }\n");
  Checked c = check(path);
  EXPECT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("listen 127.0.0.1:8080 with TLS"), std::string::npos) << c.out;
  write(path, "tls: { cert_file: " + cert.cert + ", key_file: " + other.key +
                  " }\nupstream_tls: { ca_file: " + dir.file("missing.pem") +
                  " }\nmodels:\n  - name: a\n    replicas: { urls: [https://localhost:8001] }\n");
  c = check(path);
  EXPECT_EQ(c.code, 1);
  EXPECT_NE(
      c.err.find(path + ":1:6: tls: the key " + other.key + " does not match the certificate " + cert.cert),
      std::string::npos)
      << c.err;
  EXPECT_NE(c.err.find(path + ":2:15: upstream_tls: cannot read the CA file"), std::string::npos) << c.err;
}
