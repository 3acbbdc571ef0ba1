// A Codex home pointed at an LM Warden: ~/.codex/config.toml with the warden as the model provider (the
// Responses API), no retries, no update check, no analytics. Shared by scripts/agents-load.mjs and
// tests/js/agents.test.mjs. Returns the environment to run `codex` with.
import fs from 'node:fs';
import path from 'node:path';

export function writeCodexHome(home, { model, contextWindow, url }) {
  const codexHome = path.join(home, '.codex');
  fs.mkdirSync(codexHome, { recursive: true });
  fs.writeFileSync(
    path.join(codexHome, 'config.toml'),
    `model = "${model}"
model_provider = "warden"
model_context_window = ${contextWindow}
check_for_update_on_startup = false

[model_providers.warden]
name = "LM Warden"
base_url = "${url}/v1"
wire_api = "responses"
env_key = "WARDEN_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false
`,
  );
  return { PATH: process.env.PATH, HOME: home, CODEX_HOME: codexHome, WARDEN_API_KEY: 'dummy' };
}
