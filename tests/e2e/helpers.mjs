// Starts the real `strata serve` on a free loopback port and stops it again.
//
// Environment: STRATA_BIN (the strata executable; default build/release/strata from the
// repository root) and STRATA_SHARED (the fixtures; default ../shared next to the repository).
import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
export const STRATA_BIN = process.env.STRATA_BIN || path.join(root, 'build', 'release', 'strata');
export const SHARED = process.env.STRATA_SHARED || path.resolve(root, '..', 'shared');
export const MODEL = path.join(SHARED, 'models', 'stories260K', 'stories260K.gguf');

// The llama.cpp greedy references of stories260K: {prompt, tokens, greedy_text}.
export async function references() {
  const fs = await import('node:fs/promises');
  const text = await fs.readFile(path.join(SHARED, 'reference', 'stories260K.jsonl'), 'utf8');
  return text.trim().split('\n').map((line) => {
    const { prompt, tokens, greedy_text: greedyText } = JSON.parse(line);
    return { prompt, tokens, greedyText };
  });
}

// Spawns `strata serve -m MODEL --port 0 ...args` (stories260K by default) and resolves once it
// is ready. Returns {url, baseURL, proc, stderr(), exited, stop()}.
export function startServer(args = [], { timeoutMs = 120000, model = MODEL } = {}) {
  const proc = spawn(STRATA_BIN, ['serve', '-m', model, '--host', '127.0.0.1', '--port', '0', '--threads', '1', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`strata serve did not become ready:\n${stderr}`));
    }, timeoutMs);
    proc.stderr.on('data', (d) => {
      stderr += d.toString();
      const m = stderr.match(/ready: (http:\/\/127\.0\.0\.1:\d+)\/v1/);
      if (m) {
        clearTimeout(timer);
        resolve({
          url: m[1],
          baseURL: `${m[1]}/v1`,
          proc,
          exited,
          stderr: () => stderr,
          async stop() {
            if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
            return exited;
          },
        });
      }
    });
    exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`strata serve exited (${code}) before ready:\n${stderr}`));
    });
  });
}

// The official client against a server (no retries: the tests check each answer).
export function client(server, options = {}) {
  return new OpenAI({ baseURL: server.baseURL, apiKey: 'none', maxRetries: 0, timeout: 120000, ...options });
}

export async function getJson(server, route, headers = {}) {
  const res = await fetch(`${server.url}${route}`, { headers });
  return { status: res.status, body: await res.json() };
}

// Runs curl; returns {status, stdout, stderr}. `-sS` plus whatever is given.
export function curl(args) {
  const r = spawnSync('curl', ['-sS', ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls `pred` (async) every 10 ms for up to `ms`: a bound on waiting for something that must
// happen, generous enough for a loaded machine (never a speed requirement).
export async function eventually(pred, ms = 120000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await pred()) return true;
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
}
