// The environment of one headless Claude Code pointed at an LM Warden: its own HOME and config, the
// warden's model for every role, the engine's window (so it compacts before the engine's limit; a model
// name it does not know otherwise counts as 1M tokens), and nothing sent elsewhere. Shared by
// scripts/agents-load.mjs and tests/js/agents.test.mjs.
import path from 'node:path';

export function claudeEnv(home, { model, contextWindow, url, maxOutputTokens }) {
  const env = {
    PATH: process.env.PATH,
    HOME: home,
    CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: 'dummy',
    ANTHROPIC_MODEL: model,
    ANTHROPIC_SMALL_FAST_MODEL: model,
    ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
    ANTHROPIC_DEFAULT_SONNET_MODEL: model,
    CLAUDE_CODE_MAX_CONTEXT_TOKENS: String(contextWindow),
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_ERROR_REPORTING: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_BUG_COMMAND: '1',
    CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
    CLAUDE_CODE_ENABLE_TELEMETRY: '0',
  };
  if (maxOutputTokens) {
    env.CLAUDE_CODE_MAX_OUTPUT_TOKENS = String(maxOutputTokens);
  }
  return env;
}
