// Tool calling through the official `openai` client against `strata serve` on stories260K with
// --chat-template-file (Qwen 2.5's template: Hermes <tool_call> syntax, and Mistral Nemo's:
// [TOOL_CALLS]): forced calls non-streaming and streaming (the client's own stream helper
// accumulates delta.tool_calls), arguments validated by python3-jsonschema, a tool-result turn,
// and 400s the client surfaces as BadRequestError.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { SHARED, client, startServer } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const VALIDATOR = path.resolve(here, '..', 'grammar', 'validate_instances.py');

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather in a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 6 }, unit: { enum: ['c', 'f'] } },
        required: ['city', 'unit'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'Adds two integers',
      parameters: {
        type: 'object',
        properties: { a: { type: 'integer', minimum: -50, maximum: 50 }, b: { type: 'integer', minimum: 0, maximum: 9 } },
        required: ['a', 'b'],
        additionalProperties: false,
      },
    },
  },
];
const schemaOf = (name) => tools.find((t) => t.function.name === name).function.parameters;

// Every call names a tool and its arguments validate against that tool's schema.
function assertValidCalls(calls, only) {
  assert.ok(Array.isArray(calls) && calls.length > 0, JSON.stringify(calls));
  const cases = calls.map((c) => {
    assert.equal(c.type, 'function');
    assert.ok(typeof c.id === 'string' && c.id.length > 0);
    if (only) assert.equal(c.function.name, only);
    return { name: c.function.name, schema: schemaOf(c.function.name), instances: [c.function.arguments] };
  });
  const r = spawnSync('/usr/bin/python3', [VALIDATOR], { input: JSON.stringify(cases), encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout || '[]'), [], JSON.stringify(calls));
}

const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];

for (const template of ['Qwen-Qwen2.5-7B-Instruct.jinja', 'mistralai-Mistral-Nemo-Instruct-2407.jinja']) {
  describe(`tool calls with ${template}`, () => {
    let server;
    let openai;
    before(async () => {
      server = await startServer([
        '--served-model-name', 'stories260K', '--chat-template-file', path.join(SHARED, 'templates', template),
      ]);
      openai = client(server);
    });
    after(async () => {
      const { code } = await server.stop();
      assert.equal(code, 0, server.stderr());
    });

    test('tool_choice required: one valid call, finish_reason tool_calls', async () => {
      const r = await openai.chat.completions.create({
        model: 'stories260K', messages, tools, tool_choice: 'required', parallel_tool_calls: false,
        max_tokens: 200, seed: 3, temperature: 1,
      });
      const choice = r.choices[0];
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content, null);
      assert.equal(choice.message.tool_calls.length, 1);
      assertValidCalls(choice.message.tool_calls);
    });

    test('named function, streamed: the client accumulates the same call', async () => {
      const params = {
        model: 'stories260K', messages, tools, tool_choice: { type: 'function', function: { name: 'add' } },
        max_tokens: 200, seed: 5, temperature: 1,
      };
      const whole = await openai.chat.completions.create(params);
      const stream = openai.chat.completions.stream({ ...params, stream: true });
      let argumentDeltas = 0;
      stream.on('tool_calls.function.arguments.delta', () => { argumentDeltas += 1; });
      const final = await stream.finalChatCompletion();
      const streamed = final.choices[0];
      assert.equal(streamed.finish_reason, 'tool_calls');
      assertValidCalls(streamed.message.tool_calls, 'add');
      assert.ok(argumentDeltas >= 1);
      assert.deepEqual(
        streamed.message.tool_calls.map((c) => c.function),
        whole.choices[0].message.tool_calls.map((c) => c.function),
      );
    });

    test('a conversation with a tool result is answered', async () => {
      const first = await openai.chat.completions.create({
        model: 'stories260K', messages, tools, tool_choice: 'required', parallel_tool_calls: false,
        max_tokens: 200, seed: 11, temperature: 1,
      });
      const call = first.choices[0].message.tool_calls[0];
      const r = await openai.chat.completions.create({
        model: 'stories260K', tools, max_tokens: 8,
        messages: [...messages, first.choices[0].message, { role: 'tool', tool_call_id: call.id, content: 'sunny' }],
      });
      assert.equal(r.choices[0].message.role, 'assistant');
    });

    test('bad tool fields are 400s', async () => {
      await assert.rejects(
        openai.chat.completions.create({
          model: 'stories260K', messages, tools, tool_choice: { type: 'function', function: { name: 'missing' } },
        }),
        (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice.function.name',
      );
      await assert.rejects(
        openai.chat.completions.create({ model: 'stories260K', messages, tool_choice: 'required' }),
        (e) => e instanceof OpenAI.BadRequestError && e.param === 'tool_choice',
      );
    });
  });
}
