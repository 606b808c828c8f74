// Many clients at once through the official client: oversubscribing the KV cache, and clients
// that disconnect mid-stream.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { client, getJson, references, startServer, eventually } from './helpers.mjs';

const BLOCK = 16;
const blocks = (tokens) => Math.ceil(tokens / BLOCK);

async function metric(server, name) {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

test('64 concurrent greedy requests needing 4x the KV pool all succeed, each as its solo run', async (t) => {
  const refs = await references();
  // stories260K stores 640 bytes of K/V per token: 256 KiB is 25 blocks of 16 tokens.
  const server = await startServer(['--kv-cache-mem', '256KiB']);
  try {
    const openai = client(server);
    const prompts = Array.from({ length: 64 }, (_, i) => `${refs[i % refs.length].prompt} ${['and', 'but', 'so', 'then', 'because', 'when', 'after', 'while'][Math.floor(i / 8)]}`);
    const body = (prompt) => ({ model: 'stories260K.gguf', prompt, max_tokens: 96, temperature: 0, ignore_eos: true });
    const solo = [];
    for (const p of prompts) solo.push((await openai.completions.create(body(p))).choices[0].text);
    const stats = (await getJson(server, '/debug/stats')).body;
    const preemptionsBefore = stats.preemptions;

    const results = await Promise.all(prompts.map((p) => openai.completions.create(body(p))));
    let needed = 0;
    results.forEach((r, i) => {
      assert.equal(r.choices[0].text, solo[i], `request ${i} differs from its solo run`);
      assert.equal(r.choices[0].finish_reason, 'length');
      needed += blocks(r.usage.prompt_tokens + r.usage.completion_tokens);
    });
    assert.ok(needed >= 4 * stats.kv_blocks_total, `needed ${needed} blocks, pool ${stats.kv_blocks_total}`);
    const after = (await getJson(server, '/debug/stats')).body;
    t.diagnostic(`blocks needed ${needed}, pool ${stats.kv_blocks_total}, preemptions ${after.preemptions - preemptionsBefore}`);
    assert.ok(after.preemptions > preemptionsBefore, 'the pool was never short: no preemption happened');
    assert.equal(after.kv_blocks_used, 0);
    assert.equal(await metric(server, 'strata:num_preemptions_total'), after.preemptions);
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0);
  }
});

test('killing half of 32 streams frees their blocks and leaves the others unchanged', async (t) => {
  const refs = await references();
  const server = await startServer(['--kv-cache-mem', '16MiB']);
  try {
    const openai = client(server);
    // The 16 streams to be killed hold long prompts (about 270 tokens each, all different);
    // the 16 survivors short ones, so the blocks in use show who is still there.
    const longPrompt = (i) => Array.from({ length: 8 }, (_, k) => refs[(i + k) % refs.length].prompt).join(`. ${i} `).repeat(3);
    const shortPrompt = (i) => `${refs[i % refs.length].prompt} ${i}`;
    const victims = Array.from({ length: 16 }, (_, i) => longPrompt(i));
    const survivors = Array.from({ length: 16 }, (_, i) => shortPrompt(i));
    const body = (prompt) => ({ model: 'stories260K.gguf', prompt, max_tokens: 200, temperature: 0, ignore_eos: true });
    const tok = await fetch(`${server.url}/tokenize`, { method: 'POST', body: JSON.stringify({ prompt: victims[0] }) }).then((r) => r.json());
    assert.ok(tok.count > 200 && tok.count + 200 <= tok.max_model_len, `victim prompt has ${tok.count} tokens`);

    const solo = [];
    for (const p of survivors) solo.push((await openai.completions.create(body(p))).choices[0].text);

    // All 32 stream at once; every victim is cut after its first chunk.
    let started = 0;
    const run = async (prompt, kill) => {
      const stream = await openai.completions.create({ ...body(prompt), stream: true });
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.text ?? '';
        if (kill) {
          started += 1;
          break; // the client aborts the request: its connection closes
        }
      }
      return text;
    };
    const survivorRuns = survivors.map((p) => run(p, false));
    const victimRuns = victims.map((p) => run(p, true));
    await Promise.all(victimRuns);
    assert.equal(started, 16);
    // The server notices each disconnect and aborts: only the survivors keep running, and the
    // victims' blocks (at least 14 each for their prompts) are no longer in use.
    let snapshot = null;
    const killedAt = Date.now();
    const aborted = await eventually(async () => {
      snapshot = (await getJson(server, '/debug/stats')).body;
      return snapshot.running <= 16 && (await metric(server, 'strata:request_aborted_total')) === 16;
    });
    assert.ok(aborted, JSON.stringify(snapshot));
    t.diagnostic(`${Date.now() - killedAt} ms after the kills: ${snapshot.running} running, ${snapshot.kv_blocks_used} blocks in use; ` +
      `the victims' prompts alone held ${16 * blocks(tok.count)}`);
    assert.ok(snapshot.kv_blocks_used < 16 * blocks(tok.count), JSON.stringify(snapshot));

    const texts = await Promise.all(survivorRuns);
    texts.forEach((t, i) => assert.equal(t, solo[i], `survivor ${i} changed`));
    const end = (await getJson(server, '/debug/stats')).body;
    assert.equal(end.kv_blocks_used, 0);
    assert.equal(end.running, 0);
  } finally {
    const { code } = await server.stop();
    assert.equal(code, 0);
  }
});
