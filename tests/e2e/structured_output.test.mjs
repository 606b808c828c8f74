// Structured output through the official `openai` client against `strata serve` on stories260K:
// response_format json_schema and json_object on chat completions (streaming and not), vLLM's
// guided_* fields passed through the client unchanged, and 400s for bad schemas. Outputs are
// validated by Debian's python3-jsonschema (tests/grammar/validate_instances.py).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { client, startServer } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const VALIDATOR = path.resolve(here, '..', 'grammar', 'validate_instances.py');

const personSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 8 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    mood: { enum: ['happy', 'sad', 'calm'] },
    born: { type: 'string', format: 'date' },
  },
  required: ['name', 'age', 'mood'],
  additionalProperties: false,
};

// The failures python3-jsonschema reports for these outputs of `schema` (empty: all valid).
function invalid(schema, instances) {
  const r = spawnSync('/usr/bin/python3', [VALIDATOR], {
    input: JSON.stringify([{ name: 'e2e', schema, instances }]),
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout || '[]');
}

let server;
let openai;

before(async () => {
  server = await startServer(['--served-model-name', 'stories260K']);
  openai = client(server);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

const messages = [{ role: 'user', content: 'Describe a person.' }];

describe('response_format', () => {
  test('json_schema: every choice validates, with finish_reason stop', async () => {
    const outputs = [];
    for (const seed of [1, 2, 3]) {
      const r = await openai.chat.completions.create({
        model: 'stories260K', messages, max_tokens: 150, seed, n: 2, temperature: 1,
        response_format: { type: 'json_schema', json_schema: { name: 'person', schema: personSchema, strict: true } },
      });
      for (const c of r.choices) {
        assert.equal(c.finish_reason, 'stop');
        assert.equal(c.message.role, 'assistant');
        JSON.parse(c.message.content);
        outputs.push(c.message.content);
      }
    }
    assert.deepEqual(invalid(personSchema, outputs), []);
  });

  test('json_schema streamed: the deltas add up to a valid document', async () => {
    const stream = await openai.chat.completions.create({
      model: 'stories260K', messages, max_tokens: 150, seed: 9, stream: true,
      response_format: { type: 'json_schema', json_schema: { name: 'person', schema: personSchema } },
    });
    let text = '';
    let finish = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks += 1;
      const c = chunk.choices[0];
      if (c.delta.content) text += c.delta.content;
      if (c.finish_reason) finish = c.finish_reason;
    }
    assert.ok(chunks > 5, `${chunks} chunks`);
    assert.equal(finish, 'stop');
    assert.deepEqual(invalid(personSchema, [text]), []);
  });

  test('json_object starts an object; max_tokens first is length', async () => {
    const r = await openai.chat.completions.create({
      model: 'stories260K', messages, max_tokens: 5, response_format: { type: 'json_object' },
    });
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.equal(r.choices[0].message.content[0], '{');
    assert.equal(r.usage.completion_tokens, 5);
  });
});

describe('vLLM fields through the client', () => {
  test('guided_choice, guided_regex and guided_json on completions', async () => {
    const choices = ['alpha', 'beta gamma', 'delta'];
    const a = await openai.completions.create({ model: 'stories260K', prompt: 'Once', max_tokens: 20, guided_choice: choices });
    assert.ok(choices.includes(a.choices[0].text), a.choices[0].text);
    assert.equal(a.choices[0].finish_reason, 'stop');

    const b = await openai.completions.create({
      model: 'stories260K', prompt: 'Once', max_tokens: 40, guided_regex: '[a-z]{3,6}-[0-9]{2}',
    });
    assert.match(b.choices[0].text, /^[a-z]{3,6}-[0-9]{2}$/);

    const c = await openai.completions.create({ model: 'stories260K', prompt: 'Once', max_tokens: 150, guided_json: personSchema });
    assert.deepEqual(invalid(personSchema, [c.choices[0].text]), []);
  });

  test('llama.cpp grammar on chat', async () => {
    const r = await openai.chat.completions.create({
      model: 'stories260K', messages, max_tokens: 40, grammar: 'root ::= ("yes" | "no") ", because " [a-z]{2,8} "."',
    });
    assert.match(r.choices[0].message.content, /^(yes|no), because [a-z]{2,8}\.$/);
  });
});

describe('errors', () => {
  test('an unsupported keyword is a 400 naming the field and the keyword', async () => {
    await assert.rejects(
      openai.chat.completions.create({
        model: 'stories260K', messages, max_tokens: 10,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'integer', multipleOf: 3 } } },
      }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format' && /multipleOf/.test(e.message),
    );
    await assert.rejects(
      openai.completions.create({ model: 'stories260K', prompt: 'x', max_tokens: 5, guided_regex: '(?<=a)b' }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'guided_regex' && /lookaround/.test(e.message),
    );
  });
});
