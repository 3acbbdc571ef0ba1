// A Codex home pointed at an LM Warden: ~/.codex/config.toml with the warden as the model provider (the
// Responses API), no retries, no update check, no analytics. Shared by scripts/agents-load.mjs and
// tests/js/agents.test.mjs. Returns the environment to run `codex` with.
import fs from 'node:fs';
import path from 'node:path';

// `idleTimeoutMs`: the provider's stream_idle_timeout_ms (Codex's own default otherwise).
export function writeCodexHome(home, { model, contextWindow, url, idleTimeoutMs }) {
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
${idleTimeoutMs ? `stream_idle_timeout_ms = ${idleTimeoutMs}\n` : ''}
[analytics]
enabled = false

[feedback]
enabled = false
`,
  );
  return { PATH: process.env.PATH, HOME: home, CODEX_HOME: codexHome, WARDEN_API_KEY: 'dummy' };
}
