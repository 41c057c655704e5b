/**
 * The Codex image's own configuration (images/agent-codex/codex/) against the recipes: every model
 * the codex harness may run has a catalog entry of ours, and every entry keeps Codex's own acting
 * tools off. A model without an entry would get Codex's fallback metadata, another tool surface.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadRecipes } from '../../core/node/recipes';

const dir = join(__dirname, '../../images/agent-codex/codex');
const catalog = JSON.parse(readFileSync(join(dir, 'models.json'), 'utf8')) as { models: Record<string, unknown>[] };
const config = readFileSync(join(dir, 'config.toml'), 'utf8');

describe('the Codex image: model catalog and config', () => {
  it('has a catalog entry for every model recipes/harnesses.json lists for codex', () => {
    // The ladder and the panels may name only these (recipes are validated at load).
    const slugs = catalog.models.map((entry) => entry.slug);
    for (const model of loadRecipes().harnesses.codex!.models)
      assert.ok(slugs.includes(model), `models.json has no entry for "${model}" (entries: ${slugs.join(', ')})`);
  });

  for (const entry of catalog.models) {
    it(`${String(entry.slug)}: no shell, no apply_patch, MCP tools up front, the classic request shape`, () => {
      assert.equal(entry.shell_type, 'disabled');
      assert.equal(entry.apply_patch_tool_type, null);
      assert.equal(entry.supports_search_tool, false, 'MCP tools are declared up front, not behind tool_search');
      assert.equal(entry.use_responses_lite, false);
      assert.equal(entry.tool_mode, undefined, 'no code mode');
      assert.deepEqual(entry.experimental_supported_tools, []);
      assert.equal(entry.model_messages, null, "Codex's own instructions template is not used (model_instructions_file is)");
      for (const key of ['include_skills_usage_instructions', 'include_plugin_usage_instructions', 'include_apps_usage_instructions'])
        assert.equal(entry[key], false, key);
    });
  }

  it('config.toml points at the catalog, the instructions and the tool gateway, with Codex’s shell off', () => {
    for (const line of [
      'model_catalog_json = "/opt/tarmac/codex/models.json"',
      'model_instructions_file = "/opt/tarmac/codex/instructions.md"',
      'sandbox_mode = "read-only"',
      'approval_policy = "never"',
      'web_search = "disabled"',
      'shell_tool = false',
      'unified_exec = false',
      'hooks = false',
      'args = ["/opt/tarmac/shared/tarmac-mcp"]',
      'default_tools_approval_mode = "approve"',
      'env_key = "TARMAC_MODEL_GATEWAY_KEY"',
      'wire_api = "responses"',
    ]) {
      assert.ok(config.split('\n').includes(line), `config.toml has the line ${line}`);
    }
  });
});
