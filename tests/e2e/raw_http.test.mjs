// Raw SSE framing with curl, body limits, and the SIGTERM drain of `strata serve`.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { client, curl, eventually, getJson, references, startServer } from './helpers.mjs';

describe('raw HTTP with curl', () => {
  let server;
  let refs;
  before(async () => {
    refs = await references();
    server = await startServer(['--max-body-bytes', '4KiB']);
  });
  after(async () => {
    const { code } = await server.stop();
    assert.equal(code, 0);
  });

  test('SSE is data: lines separated by blank lines and ends with [DONE]', () => {
    const body = JSON.stringify({ prompt: refs[0].prompt, max_tokens: 64, temperature: 0, stream: true });
    const r = curl(['-N', '-D', '-', '-H', 'Content-Type: application/json', '-d', body, `${server.url}/v1/completions`]);
    assert.equal(r.status, 0, r.stderr);
    const [head, ...rest] = r.stdout.split('\r\n\r\n');
    assert.match(head, /^HTTP\/1\.1 200 OK/);
    assert.match(head, /\r\nContent-Type: text\/event-stream/i);
    const sse = rest.join('\r\n\r\n');
    assert.ok(sse.endsWith('data: [DONE]\n\n'), JSON.stringify(sse.slice(-40)));
    const events = sse.slice(0, -'data: [DONE]\n\n'.length).split('\n\n');
    assert.equal(events.pop(), '');
    let text = '';
    for (const ev of events) {
      assert.match(ev, /^data: \{.*\}$/s);
      assert.ok(!ev.slice(6).includes('\n'), 'one JSON per line');
      const chunk = JSON.parse(ev.slice(6));
      assert.deepEqual(Object.keys(chunk).sort(), ['choices', 'created', 'id', 'model', 'object']);
      assert.deepEqual(Object.keys(chunk.choices[0]).sort(), ['finish_reason', 'index', 'logprobs', 'text']);
      text += chunk.choices[0].text;
    }
    assert.ok(events.length >= 32, `${events.length} events`);
    assert.equal(text, refs[0].greedyText);
  });

  test('a chat stream starts with the role and ends with the usage chunk', () => {
    const body = JSON.stringify({
      messages: [{ role: 'user', content: 'Hi' }], max_tokens: 6, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    const r = curl(['-N', '-H', 'Content-Type: application/json', '-d', body, `${server.url}/v1/chat/completions`]);
    const events = r.stdout.split('\n\n').filter((e) => e);
    assert.equal(events.at(-1), 'data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.replace(/^data: /, '')));
    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    assert.ok(chunks.slice(0, -1).every((c) => c.usage === null));
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.equal(chunks.at(-1).usage.completion_tokens, 6);
  });

  test('a body over --max-body-bytes is 413, malformed JSON is 400', () => {
    const big = JSON.stringify({ prompt: 'x'.repeat(5000) });
    let r = curl(['-w', '\n%{http_code}', '-H', 'Content-Type: application/json', '-d', big,
      `${server.url}/v1/completions`]);
    let [payload, code] = r.stdout.split(/\n(?=\d+$)/);
    assert.equal(code, '413');
    assert.equal(JSON.parse(payload).error.code, 'request_too_large');
    r = curl(['-w', '\n%{http_code}', '-H', 'Content-Type: application/json', '-d', '{"prompt":', `${server.url}/v1/completions`]);
    [payload, code] = r.stdout.split(/\n(?=\d+$)/);
    assert.equal(code, '400');
    assert.equal(typeof JSON.parse(payload).error.message, 'string');
  });
});

describe('llama2.c checkpoint', () => {
  test('--tokenizer serves the .bin model: greedy text equals llama2.c', async () => {
    const fs = await import('node:fs/promises');
    const { SHARED } = await import('./helpers.mjs');
    const model = `${SHARED}/models/stories260K/stories260K.bin`;
    const server = await startServer(['--tokenizer', `${SHARED}/models/stories260K/tok512.bin`], { model });
    try {
      // llama2.c `run stories260K.bin -z tok512.bin -t 0.0 -n 200`: 200 tokens after BOS.
      const expected = (await fs.readFile(`${SHARED}/reference/stories260K-llama2c-greedy200.txt`, 'utf8')).replace(/\n$/, '');
      const r = await client(server).completions.create({ model: 'stories260K.bin', prompt: '', max_tokens: 200, temperature: 0 });
      assert.equal(r.choices[0].text, expected);
      assert.equal(r.usage.prompt_tokens, 1); // BOS
    } finally {
      await server.stop();
    }
  });
});

describe('SIGTERM', () => {
  test('drains: new requests get 503, in-flight ones finish, exit 0', async () => {
    const server = await startServer(['--shutdown-timeout', '600']);
    const openai = client(server);
    const long = { model: 'stories260K.gguf', prompt: 'Once upon a time', max_tokens: 400, n: 24, ignore_eos: true, temperature: 0 };
    const inFlight = openai.completions.create(long);
    const streamed = (async () => {
      const stream = await openai.completions.create({ ...long, n: 1, stream: true, stream_options: { include_usage: true } });
      let usage = null;
      for await (const chunk of stream) usage = chunk.usage ?? usage;
      return usage.completion_tokens;
    })();
    assert.ok(await eventually(async () => (await getJson(server, '/debug/stats')).body.running >= 2));
    server.proc.kill('SIGTERM');
    assert.ok(await eventually(async () => (await fetch(`${server.url}/health`)).status === 503));
    const refused = await fetch(`${server.url}/v1/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: 'x' }),
    });
    assert.equal(refused.status, 503);
    assert.match((await refused.json()).error.message, /shutting down/);
    const r = await inFlight;
    assert.equal(r.choices.length, 24);
    assert.equal(r.usage.completion_tokens, 24 * 400);
    assert.equal(await streamed, 400);
    const { code } = await server.exited;
    assert.equal(code, 0, server.stderr());
  });

  test('requests still running at --shutdown-timeout are aborted with an error, exit 0', async () => {
    const server = await startServer(['--shutdown-timeout', '0']);
    const openai = client(server);
    const body = { model: 'stories260K.gguf', prompt: 'Once upon a time', max_tokens: 490, n: 16, ignore_eos: true };
    const pending = openai.completions.create(body).then(() => 'finished', (e) => e.status);
    assert.ok(await eventually(async () => (await getJson(server, '/debug/stats')).body.running >= 1));
    server.proc.kill('SIGTERM');
    assert.equal(await pending, 503);
    const { code } = await server.exited;
    assert.equal(code, 0, server.stderr());
  });

  test('a second signal exits at once', async () => {
    const server = await startServer(['--shutdown-timeout', '600']);
    const body = JSON.stringify({ prompt: 'x', max_tokens: 490, n: 64, ignore_eos: true });
    const c = spawn('curl', ['-sS', '-H', 'Content-Type: application/json', '-d', body, `${server.url}/v1/completions`]);
    assert.ok(await eventually(async () => (await getJson(server, '/debug/stats')).body.running >= 1));
    server.proc.kill('SIGINT');
    assert.ok(await eventually(async () => (await fetch(`${server.url}/health`)).status === 503));
    server.proc.kill('SIGINT');
    const { code } = await server.exited;
    assert.equal(code, 1);
    c.kill();
  });
});
