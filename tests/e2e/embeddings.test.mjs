// The official `openai` client's embeddings.create against `strata serve --embeddings`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { client, references, startServer } from './helpers.mjs';

let server;
let openai;
let refs;

before(async () => {
  refs = await references();
  server = await startServer(['--served-model-name', 'stories260K', '--embeddings']);
  openai = client(server);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

// What the server's base64 string holds: little-endian float32 values.
function decodeBase64(s) {
  const b = Buffer.from(s, 'base64');
  return Array.from({ length: b.length / 4 }, (_, i) => b.readFloatLE(4 * i));
}

describe('embeddings', () => {
  test('float: one unit vector per input, in order, with usage', async () => {
    const input = refs.slice(0, 3).map((r) => r.prompt);
    const r = await openai.embeddings.create({ model: 'stories260K', input, encoding_format: 'float' });
    assert.equal(r.object, 'list');
    assert.equal(r.model, 'stories260K');
    assert.equal(r.data.length, 3);
    r.data.forEach((d, i) => {
      assert.equal(d.object, 'embedding');
      assert.equal(d.index, i);
      assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-5);
    });
    const tokens = refs.slice(0, 3).reduce((n, ref) => n + ref.tokens.length, 0);
    assert.deepEqual(r.usage, { prompt_tokens: tokens, total_tokens: tokens });
  });

  test('base64 decodes to the same float32 values', async () => {
    const input = refs[0].prompt;
    const f = await openai.embeddings.create({ model: 'stories260K', input, encoding_format: 'float' });
    const b = await openai.embeddings.create({ model: 'stories260K', input, encoding_format: 'base64' });
    assert.equal(typeof b.data[0].embedding, 'string');
    assert.deepEqual(decodeBase64(b.data[0].embedding), f.data[0].embedding.map(Math.fround));
    // Without encoding_format the client asks for base64 and decodes it itself.
    const d = await openai.embeddings.create({ model: 'stories260K', input });
    assert.deepEqual(Array.from(d.data[0].embedding), f.data[0].embedding.map(Math.fround));
  });

  test('token-id input equals the text it tokenizes to', async () => {
    const ref = refs[1];
    const t = await openai.embeddings.create({ model: 'stories260K', input: ref.prompt, encoding_format: 'float' });
    const ids = await openai.embeddings.create({ model: 'stories260K', input: ref.tokens, encoding_format: 'float' });
    t.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - ids.data[0].embedding[i]) < 1e-6));
  });

  test('dimensions other than the model size is a 400', async () => {
    await assert.rejects(
      openai.embeddings.create({ model: 'stories260K', input: 'x', dimensions: 3 }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'dimensions',
    );
  });
});
