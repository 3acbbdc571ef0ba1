// The `launch:` section: golden vLLM command lines, placeholders, per-replica processes and the
// validation messages (pure: no processes).
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "supervisor/launch.hpp"
#include "supervisor/supervisor.hpp"
#include "supervisor/supervisor_support.hpp"

namespace warden::supervisor {
namespace {

struct Parsed {
  std::optional<LaunchSpec> spec;
  std::vector<std::string> errors;
};

Parsed parse(const std::string& yaml) {
  Parsed p;
  LaunchParseContext ctx;
  ctx.error = [&](const YAML::Node& n, const std::string& m) {
    p.errors.push_back(std::to_string(n.Mark().line + 1) + ": " + m);
  };
  p.spec = parse_launch(YAML::Load(yaml), "models[0].launch", ctx);
  return p;
}

ModelLayout dp4_model() {
  ModelLayout m;
  m.name = "qwen3-4b-dp4";
  m.served_model_name = "Qwen/Qwen3-4B-Instruct-2507";
  m.max_num_seqs = 32;
  m.data_parallel = true;
  m.dp_size = 4;
  m.urls = {{"127.0.0.1", 8000, ""}};
  return m;
}

TEST(LaunchCommand, GoldenVllmDp4) {
  auto p = parse(R"(
engine: vllm
tensor_parallel_size: 1
env: { CUDA_VISIBLE_DEVICES: "0,1,2,3" }
args: [--gpu-memory-utilization, "0.90"]
)");
  ASSERT_TRUE(p.spec) << (p.errors.empty() ? "" : p.errors.front());
  auto targets = engine_targets(dp4_model(), "/opt/lm-warden");
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].replicas, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(targets[0].name(), "qwen3-4b-dp4");
  const CommandLine c = build_command(*p.spec, targets[0]);
  std::vector<std::string> golden = {"vllm"};
  for (auto& a : supervisor_test::golden_dp4_vllm_args("8000")) {
    golden.push_back(a);
  }
  golden.insert(golden.end(), {"--gpu-memory-utilization", "0.90"});
  EXPECT_EQ(c.argv, golden);
  ASSERT_EQ(c.env.size(), 1u);
  EXPECT_EQ(c.env[0], (std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", "0,1,2,3"}));
  EXPECT_EQ(c.display(),
            "CUDA_VISIBLE_DEVICES=*** vllm serve Qwen/Qwen3-4B-Instruct-2507 --served-model-name "
            "Qwen/Qwen3-4B-Instruct-2507 --host 127.0.0.1 --port 8000 --data-parallel-size 4 "
            "--tensor-parallel-size 1 --max-num-seqs 32 --enable-prompt-tokens-details "
            "--gpu-memory-utilization 0.90");

  const EngineSpec s = engine_spec(*p.spec, targets[0]);
  EXPECT_EQ(s.health_host, "127.0.0.1");
  EXPECT_EQ(s.health_port, 8000);
  EXPECT_EQ(s.health_target, "/health");
  EXPECT_EQ(s.health_timeout, std::chrono::minutes(10));
}

TEST(LaunchCommand, VllmOverridesModelExecutableHostAndTensorParallel) {
  auto p = parse(R"(
engine: vllm
executable: /opt/venv/bin/vllm
model: /models/qwen3-4b
host: 0.0.0.0
tensor_parallel_size: 2
)");
  ASSERT_TRUE(p.spec);
  auto m = dp4_model();
  m.dp_size = 2;
  m.urls = {{"127.0.0.1", 9100, "/engine"}};
  auto targets = engine_targets(m, "");
  const CommandLine c = build_command(*p.spec, targets.at(0));
  EXPECT_EQ(c.argv.at(0), "/opt/venv/bin/vllm");
  EXPECT_EQ(c.argv.at(2), "/models/qwen3-4b");
  EXPECT_EQ(c.argv.at(6), "0.0.0.0");
  EXPECT_EQ(c.argv.at(8), "9100");
  EXPECT_EQ(c.argv.at(10), "2");
  EXPECT_EQ(c.argv.at(12), "2");
  EXPECT_EQ(engine_spec(*p.spec, targets.at(0)).health_target, "/engine/health");
}

TEST(LaunchCommand, UrlsModeRunsOneProcessPerReplicaWithPlaceholders) {
  auto p = parse(R"(
command: ["${WARDEN_BINARY}", sim, --port, "${PORT}", --served-model-name, "${SERVED_MODEL_NAME}",
          --max-num-seqs, "${MAX_NUM_SEQS}", --dp, "${DP_SIZE}", "--tag=${MODEL}/${REPLICA}", "cost=$$5"]
env: { CUDA_VISIBLE_DEVICES: "${REPLICA}" }
)");
  ASSERT_TRUE(p.spec) << (p.errors.empty() ? "" : p.errors.front());
  ModelLayout m;
  m.name = "two";
  m.served_model_name = "served";
  m.max_num_seqs = 16;
  m.urls = {{"127.0.0.1", 8101, ""}, {"127.0.0.1", 8102, ""}};
  auto targets = engine_targets(m, "/usr/bin/lm-warden");
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[1].name(), "two[1]");
  const CommandLine c = build_command(*p.spec, targets[1]);
  EXPECT_EQ(c.argv, (std::vector<std::string>{"/usr/bin/lm-warden", "sim", "--port", "8102",
                                              "--served-model-name", "served", "--max-num-seqs", "16", "--dp",
                                              "1", "--tag=two/1", "cost=$5"}));
  EXPECT_EQ(c.env.at(0).second, "1");
  EXPECT_EQ(build_command(*p.spec, targets[0]).argv.at(3), "8101");
}

TEST(LaunchCommand, DisplayQuotesWhatTheShellWouldSplit) {
  CommandLine c;
  c.argv = {"/bin/sh", "-c", "echo 'hi' there", ""};
  EXPECT_EQ(c.display(), R"(/bin/sh -c 'echo '\''hi'\'' there' '')");
}

TEST(LaunchCommand, DisplayRedactsSecretFlagValuesAndEveryEnvValue) {
  CommandLine c;
  c.argv = {
      "vllm", "serve",       "m",     "--api-key", "sekret", "--hf-token=hf_abc", "--max-num-batched-tokens",
      "8192", "--tokenizer", "tok/x", "--token"};
  c.env = {{"HF_TOKEN", "hf_env"}, {"CUDA_VISIBLE_DEVICES", "0,1"}};
  EXPECT_EQ(c.display(),
            "HF_TOKEN=*** CUDA_VISIBLE_DEVICES=*** vllm serve m --api-key *** --hf-token=*** "
            "--max-num-batched-tokens 8192 --tokenizer tok/x --token");
  // What the engine's own output is scrubbed of: secret flag values and secret-named variables only.
  EXPECT_EQ(c.secrets(), (std::vector<std::string>{"sekret", "hf_abc", "hf_env"}));
}

TEST(LaunchCommand, SecretNamesAreWordsEndingInASecretWord) {
  for (const char* name : {"--api-key", "--hf-token", "--token", "HF_TOKEN", "--db-password", "--apikey",
                           "OPENAI_API_KEY", "--client-secret", "--ssl-keyfile-passwd", "-key"}) {
    EXPECT_TRUE(is_secret_name(name)) << name;
  }
  for (const char* name : {"--max-num-batched-tokens", "--tokenizer", "--ssl-keyfile", "--port", "--keys-dir",
                           "CUDA_VISIBLE_DEVICES", ""}) {
    EXPECT_FALSE(is_secret_name(name)) << name;
  }
}

TEST(LaunchParse, DefaultsForACommand) {
  auto p = parse("command: [/bin/true]");
  ASSERT_TRUE(p.spec);
  EXPECT_EQ(p.spec->kind, EngineKind::command);
  EXPECT_EQ(p.spec->health_timeout, std::chrono::seconds(60));
  EXPECT_EQ(p.spec->restart.initial_backoff, std::chrono::seconds(1));
  EXPECT_EQ(p.spec->restart.max_backoff, std::chrono::seconds(60));
  EXPECT_EQ(p.spec->restart.max_start_failures, 3);
  EXPECT_EQ(p.spec->log_lines, 1000u);
}

TEST(LaunchParse, ReadsEveryKey) {
  auto p = parse(R"(
command: [/bin/sleep, "100"]
health_path: /ready
health_timeout: 3s
stop_grace: 250ms
log_lines: 50
restart: { initial_backoff: 100ms, max_backoff: 2s, stable_after: 1m, max_start_failures: 5 }
)");
  ASSERT_TRUE(p.spec) << (p.errors.empty() ? "" : p.errors.front());
  EXPECT_EQ(p.spec->health_path, "/ready");
  EXPECT_EQ(p.spec->health_timeout, std::chrono::seconds(3));
  EXPECT_EQ(p.spec->stop_grace, std::chrono::milliseconds(250));
  EXPECT_EQ(p.spec->log_lines, 50u);
  EXPECT_EQ(p.spec->restart.initial_backoff, std::chrono::milliseconds(100));
  EXPECT_EQ(p.spec->restart.max_backoff, std::chrono::seconds(2));
  EXPECT_EQ(p.spec->restart.stable_after, std::chrono::minutes(1));
  EXPECT_EQ(p.spec->restart.max_start_failures, 5);
}

TEST(LaunchParse, ReportsEveryProblemWithItsLine) {
  auto p = parse(R"(
engine: tgi
command: []
colour: blue
env: { "1BAD": x }
restart: { initial_backoff: soon, max_start_failures: 0 }
log_lines: many
)");
  EXPECT_FALSE(p.spec);
  const std::string all = [&] {
    std::string s;
    for (auto& e : p.errors) {
      s += e + "\n";
    }
    return s;
  }();
  EXPECT_NE(all.find("has both engine and command"), std::string::npos) << all;
  EXPECT_NE(all.find("2: models[0].launch.engine 'tgi' is not known"), std::string::npos) << all;
  EXPECT_NE(all.find("3: models[0].launch.command must be a non-empty list"), std::string::npos) << all;
  EXPECT_NE(all.find("4: unknown key 'colour' in models[0].launch"), std::string::npos) << all;
  EXPECT_NE(all.find("invalid variable name '1BAD'"), std::string::npos) << all;
  EXPECT_NE(all.find("restart.initial_backoff must be a duration"), std::string::npos) << all;
  EXPECT_NE(all.find("restart.max_start_failures must be an integer from 1 to 1000"), std::string::npos)
      << all;
  EXPECT_NE(all.find("7: models[0].launch.log_lines must be an integer"), std::string::npos) << all;
}

TEST(LaunchParse, RejectsUnknownPlaceholdersAndVllmKeysOnCommands) {
  auto p = parse(R"(
command: [/bin/echo, "${PROT}", "${PORT"]
tensor_parallel_size: 2
)");
  EXPECT_FALSE(p.spec);
  ASSERT_EQ(p.errors.size(), 3u);
  EXPECT_NE(p.errors[0].find("unknown placeholder ${PROT}; known: ${PORT}"), std::string::npos)
      << p.errors[0];
  EXPECT_NE(p.errors[1].find("unclosed '${'"), std::string::npos) << p.errors[1];
  EXPECT_NE(p.errors[2].find("tensor_parallel_size applies to engine: vllm only"), std::string::npos);
}

TEST(LaunchPlaceholders, SubstituteGivesTheTextOrWhyNot) {
  EngineTarget t;
  t.port = 8101;
  const auto port = substitute("--port=${PORT} $$5", t);
  ASSERT_TRUE(port) << port.error();
  EXPECT_EQ(*port, "--port=8101 $5");
  const auto unknown = substitute("${NOPE}", t);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().find("unknown placeholder ${NOPE}"), std::string::npos) << unknown.error();
  EXPECT_TRUE(check_placeholders("${PORT} and ${REPLICA}"));
  const auto unclosed = check_placeholders("${PORT");
  ASSERT_FALSE(unclosed);
  EXPECT_NE(unclosed.error().find("unclosed '${'"), std::string::npos) << unclosed.error();
}

TEST(LaunchParse, NeedsEngineOrCommand) {
  auto p = parse("env: {A: b}");
  EXPECT_FALSE(p.spec);
  ASSERT_FALSE(p.errors.empty());
  EXPECT_NE(p.errors[0].find("needs engine: vllm or command"), std::string::npos);
  EXPECT_FALSE(parse("[1, 2]").spec);
}

TEST(LaunchCommand, SelfExecutableIsThisTestBinary) {
  const std::string self = self_executable();
  ASSERT_FALSE(self.empty());
  EXPECT_EQ(self.front(), '/');
  EXPECT_NE(self.find("warden_supervisor_tests"), std::string::npos) << self;
}

}  // namespace
}  // namespace warden::supervisor
