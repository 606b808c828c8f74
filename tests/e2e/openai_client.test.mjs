// The official `openai` client against `strata serve` on stories260K.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { client, getJson, references, startServer } from './helpers.mjs';

let server;
let openai;
let refs;

before(async () => {
  refs = await references();
  server = await startServer(['--served-model-name', 'stories260K']);
  openai = client(server);
});

after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

describe('models', () => {
  test('list and retrieve', async () => {
    const page = await openai.models.list();
    assert.deepEqual(page.data.map((m) => m.id), ['stories260K']);
    assert.equal(page.data[0].object, 'model');
    const m = await openai.models.retrieve('stories260K');
    assert.equal(m.id, 'stories260K');
  });
});

describe('completions', () => {
  test('greedy text equals llama.cpp', async () => {
    for (const ref of refs.slice(0, 4)) {
      const r = await openai.completions.create({ model: 'stories260K', prompt: ref.prompt, max_tokens: 64, temperature: 0 });
      assert.equal(r.object, 'text_completion');
      assert.match(r.id, /^cmpl-/);
      assert.equal(r.choices.length, 1);
      assert.equal(r.choices[0].text, ref.greedyText);
      assert.equal(r.choices[0].finish_reason, 'length');
      assert.deepEqual(
        { p: r.usage.prompt_tokens, c: r.usage.completion_tokens, t: r.usage.total_tokens },
        { p: ref.tokens.length, c: 64, t: ref.tokens.length + 64 },
      );
    }
  });

  test('token-id prompt and echo', async () => {
    const ref = refs[1];
    const r = await openai.completions.create({ model: 'stories260K', prompt: ref.tokens, max_tokens: 64, temperature: 0, echo: true });
    assert.equal(r.choices[0].text, ref.prompt + ref.greedyText);
  });

  test('streaming chunks add up to the same text, with usage last', async () => {
    const ref = refs[2];
    const stream = await openai.completions.create({
      model: 'stories260K', prompt: ref.prompt, max_tokens: 64, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks += 1;
      if (chunk.usage) {
        usage = chunk.usage;
        assert.deepEqual(chunk.choices, []);
        continue;
      }
      assert.equal(chunk.object, 'text_completion');
      text += chunk.choices[0].text;
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
    assert.ok(chunks > 10, `only ${chunks} chunks: not streamed token by token`);
    assert.equal(text, ref.greedyText);
    assert.equal(finish, 'length');
    assert.equal(usage.completion_tokens, 64);
    assert.equal(usage.prompt_tokens, ref.tokens.length);
  });

  test('n > 1 and a batch of prompts', async () => {
    const r = await openai.completions.create({
      model: 'stories260K', prompt: [refs[0].prompt, refs[3].prompt], max_tokens: 64, temperature: 0, n: 2,
    });
    assert.equal(r.choices.length, 4);
    r.choices.forEach((c, i) => {
      assert.equal(c.index, i);
      assert.equal(c.text, [refs[0], refs[3]][Math.floor(i / 2)].greedyText);
    });
    assert.equal(r.usage.completion_tokens, 4 * 64);
    assert.equal(r.usage.prompt_tokens, refs[0].tokens.length + refs[3].tokens.length);
  });

  test('stop strings end the text before the match', async () => {
    const ref = refs[0]; // ", there was a little girl named Lily. She loved ..."
    for (const stop of [['Lily'], ['little girl', 'park'], 'She loved']) {
      const r = await openai.completions.create({ model: 'stories260K', prompt: ref.prompt, max_tokens: 64, temperature: 0, stop });
      const stops = Array.isArray(stop) ? stop : [stop];
      const cut = Math.min(...stops.map((s) => ref.greedyText.indexOf(s)).filter((i) => i >= 0));
      assert.equal(r.choices[0].text, ref.greedyText.slice(0, cut), JSON.stringify(stop));
      assert.equal(r.choices[0].finish_reason, 'stop');
    }
  });

  test('the same seed gives the same samples', async () => {
    const body = { model: 'stories260K', prompt: 'Once upon a time', max_tokens: 40, temperature: 1.0, top_p: 0.95, seed: 77, n: 2 };
    const a = await openai.completions.create(body);
    const b = await openai.completions.create(body);
    assert.deepEqual(a.choices.map((c) => c.text), b.choices.map((c) => c.text));
    const c = await openai.completions.create({ ...body, seed: 78 });
    assert.notDeepEqual(a.choices.map((x) => x.text), c.choices.map((x) => x.text));
  });

  test('legacy logprobs', async () => {
    const r = await openai.completions.create({ model: 'stories260K', prompt: refs[0].prompt, max_tokens: 5, temperature: 0, logprobs: 3 });
    const lp = r.choices[0].logprobs;
    assert.equal(lp.tokens.length, 5);
    assert.equal(lp.tokens.join(''), r.choices[0].text);
    assert.equal(lp.token_logprobs.length, 5);
    assert.equal(lp.top_logprobs.length, 5);
    for (let i = 0; i < 5; i++) {
      assert.ok(lp.token_logprobs[i] <= 0);
      const top = Object.entries(lp.top_logprobs[i]);
      assert.equal(top.length, 3);
      // Greedy: the chosen token is the most likely one (the two logprobs are computed apart:
      // equal up to float rounding).
      assert.ok(Math.abs(Math.max(...top.map(([, v]) => v)) - lp.token_logprobs[i]) < 1e-5);
    }
    assert.deepEqual(lp.text_offset, [0, 1, 7, 11, 13]); // ",", " there", " was", " a", " little"
  });
});

describe('chat', () => {
  const messages = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me one.' }];

  test('non-streaming and streaming agree', async () => {
    const r = await openai.chat.completions.create({ model: 'stories260K', messages, max_tokens: 20, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.match(r.id, /^chatcmpl-/);
    assert.equal(r.choices[0].message.role, 'assistant');
    assert.equal(typeof r.choices[0].message.content, 'string');
    const tok = await fetch(`${server.url}/tokenize`, { method: 'POST', body: JSON.stringify({ messages }) }).then((x) => x.json());
    assert.equal(r.usage.prompt_tokens, tok.count);
    const stream = await openai.chat.completions.create({
      model: 'stories260K', messages, max_tokens: 20, temperature: 0, stream: true, stream_options: { include_usage: true },
    });
    let text = '';
    let role = null;
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      if (chunk.usage) usage = chunk.usage;
      for (const c of chunk.choices) {
        if (c.delta.role) role = c.delta.role;
        if (c.delta.content) text += c.delta.content;
        if (c.finish_reason) finish = c.finish_reason;
      }
    }
    assert.equal(role, 'assistant');
    assert.equal(text, r.choices[0].message.content);
    assert.equal(finish, r.choices[0].finish_reason);
    assert.equal(usage.prompt_tokens, r.usage.prompt_tokens);
    assert.equal(usage.completion_tokens, r.usage.completion_tokens);
    // The same prompt again: all of it but the last token comes from the prefix cache (by blocks).
    assert.ok(usage.prompt_tokens_details.cached_tokens > r.usage.prompt_tokens_details.cached_tokens);
  });

  test('n > 1 with a seed, logprobs in content[] format', async () => {
    const body = { model: 'stories260K', messages, max_tokens: 8, temperature: 0.9, seed: 5, n: 3, logprobs: true, top_logprobs: 2 };
    const a = await openai.chat.completions.create(body);
    const b = await openai.chat.completions.create(body);
    assert.equal(a.choices.length, 3);
    assert.deepEqual(a.choices.map((c) => c.message.content), b.choices.map((c) => c.message.content));
    for (const c of a.choices) {
      for (const entry of c.logprobs.content) {
        assert.equal(typeof entry.token, 'string');
        assert.ok(entry.logprob <= 0);
        assert.deepEqual(entry.bytes, [...Buffer.from(entry.token, 'utf8')]);
        assert.equal(entry.top_logprobs.length, 2);
      }
    }
  });
});

describe('errors', () => {
  test('invalid parameters are 400 BadRequestError naming the field', async () => {
    const cases = [
      [{ temperature: -1 }, 'temperature'], [{ top_p: 0 }, 'top_p'], [{ max_tokens: 0 }, 'max_tokens'],
      [{ n: 1000 }, 'n'], [{ presence_penalty: 3 }, 'presence_penalty'], [{ logprobs: 50 }, 'logprobs'],
      [{ logit_bias: { 99999: 1 } }, 'logit_bias'], [{ stop: [''] }, 'stop[0]'], [{ seed: 'x' }, 'seed'],
    ];
    for (const [extra, param] of cases) {
      await assert.rejects(
        openai.completions.create({ model: 'stories260K', prompt: 'x', ...extra }),
        (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === param,
        JSON.stringify(extra),
      );
    }
    await assert.rejects(
      openai.chat.completions.create({ model: 'stories260K', messages: [] }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'messages',
    );
  });

  test('an unknown model is 404, an unknown route is 404', async () => {
    await assert.rejects(
      openai.completions.create({ model: 'gpt-5', prompt: 'x' }),
      (e) => e instanceof OpenAI.NotFoundError && e.code === 'model_not_found',
    );
    const r = await getJson(server, '/v1/nothing');
    assert.equal(r.status, 404);
    assert.equal(typeof r.body.error.message, 'string');
  });

  test('a prompt longer than the context is 400', async () => {
    const long = 'Once upon a time '.repeat(700); // about 2800 tokens: over the 2048 of stories260K
    await assert.rejects(
      openai.completions.create({ model: 'stories260K', prompt: long, max_tokens: 10 }),
      (e) => e instanceof OpenAI.BadRequestError && /limit/.test(e.message),
    );
  });
});

describe('authentication', () => {
  test('every route but /health needs the key', async () => {
    const keyed = await startServer(['--api-key', 'sk-e2e-secret']);
    try {
      await assert.rejects(client(keyed, { apiKey: 'wrong' }).models.list(), (e) => e instanceof OpenAI.AuthenticationError);
      await assert.rejects(
        client(keyed, { apiKey: 'wrong' }).completions.create({ model: 'stories260K.gguf', prompt: 'x' }),
        (e) => e instanceof OpenAI.AuthenticationError && e.status === 401,
      );
      const ok = await client(keyed, { apiKey: 'sk-e2e-secret' }).completions.create({ model: 'stories260K.gguf', prompt: 'x', max_tokens: 3 });
      assert.equal(ok.choices.length, 1);
      assert.equal((await fetch(`${keyed.url}/health`)).status, 200);
      assert.equal((await fetch(`${keyed.url}/metrics`)).status, 401);
    } finally {
      await keyed.stop();
    }
  });
});
