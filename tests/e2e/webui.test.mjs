// The browser chat page of `strata serve` in headless Chromium (puppeteer-core drives Debian's
// /usr/bin/chromium; nothing is downloaded): streaming replies, stop, the conversation kept in
// localStorage, the API key prompt, and --no-webui.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import puppeteer from 'puppeteer-core';
import { client, eventually, getJson, sleep, startServer } from './helpers.mjs';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const WAIT = { timeout: 120000 }; // a bound for what must happen, never a speed requirement

async function metric(server, name, headers = {}) {
  const text = await (await fetch(`${server.url}/metrics`, { headers })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.split(' ')[1]);
}

// A fresh browser profile (own localStorage) on the page; console errors and page errors are
// collected in `errors`.
async function openPage(browser, url) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  const errors = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  const res = await page.goto(url, { waitUntil: 'load' });
  return { context, page, errors, res };
}

async function setField(page, id, value) {
  await page.$eval(`#${id}`, (el, v) => {
    el.value = v;
    el.dispatchEvent(new Event('change'));
  }, value);
}

const lastReply = (page) => page.evaluate(() => {
  const el = [...document.querySelectorAll('#messages .msg.assistant')].at(-1);
  return el ? { state: el.dataset.state, content: el.querySelector('.content').textContent, stats: el.querySelector('.stats').textContent } : null;
});

// Resolves with the last reply once it is no longer streaming.
async function replyFinished(page) {
  await page.waitForFunction(() => {
    const el = [...document.querySelectorAll('#messages .msg.assistant')].at(-1);
    return el && el.dataset.state && el.dataset.state !== 'streaming';
  }, WAIT);
  return lastReply(page);
}

// Records every text the reply's content element is given, as it is given (each textContent
// assignment replaces the text node, so each mutation record holds that moment's text).
async function recordReplyUpdates(page) {
  await page.evaluate(() => {
    window.replyUpdates = [];
    new MutationObserver((records) => {
      for (const r of records) {
        if (r.target.classList && r.target.classList.contains('content') && r.target.closest('.msg.assistant')) {
          for (const n of r.addedNodes) window.replyUpdates.push(n.data ?? n.textContent);
        }
      }
    }).observe(document.getElementById('messages'), { childList: true, subtree: true });
  });
}

describe('web UI', () => {
  let browser;
  before(async () => {
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless=new', '--no-sandbox'] });
  });
  after(async () => {
    await browser.close();
  });

  describe('without an API key', () => {
    let server;
    before(async () => {
      server = await startServer();
    });
    after(async () => {
      const { code } = await server.stop();
      assert.equal(code, 0);
    });

    test('the page and its files are served with their types', async () => {
      for (const [route, type] of [['/', 'text/html'], ['/index.html', 'text/html'], ['/webui/app.js', 'text/javascript'],
        ['/webui/style.css', 'text/css'], ['/webui/favicon.svg', 'image/svg+xml']]) {
        const res = await fetch(`${server.url}${route}`);
        assert.equal(res.status, 200, route);
        assert.ok(res.headers.get('content-type').startsWith(type), `${route}: ${res.headers.get('content-type')}`);
      }
    });

    test('a message gets a streamed reply, equal to the same request without streaming', async (t) => {
      const { context, page, errors, res } = await openPage(browser, `${server.url}/`);
      try {
        assert.equal(res.status(), 200);
        await page.waitForFunction(() => document.getElementById('model').textContent === 'stories260K.gguf', WAIT);
        await setField(page, 'temperature', '0');
        await setField(page, 'max_tokens', '48');
        await setField(page, 'system', 'You tell short stories.');
        await recordReplyUpdates(page);
        const requests = [];
        page.on('request', (r) => {
          if (r.url().endsWith('/v1/chat/completions')) requests.push(JSON.parse(r.postData()));
        });
        const question = 'Once upon a time';
        await page.type('#input', question);
        await page.keyboard.press('Enter'); // Enter sends
        const reply = await replyFinished(page);
        assert.equal(reply.state, 'done', JSON.stringify(reply));
        assert.ok(reply.content.length > 0);
        // tok/s needs two tokens that arrived at different times: on a loaded machine the
        // browser may get the whole reply at once.
        assert.match(reply.stats, /^\d+ tokens (?:· [\d.]+ tok\/s )?· first token after \d+ ms/);
        assert.equal(requests.length, 1);
        assert.equal(requests[0].stream, true);
        // The server's own answer, without streaming, to the same messages (greedy).
        const expected = await client(server).chat.completions.create({
          messages: [{ role: 'system', content: 'You tell short stories.' }, { role: 'user', content: question }],
          temperature: 0, max_tokens: 48,
        });
        assert.equal(reply.content, expected.choices[0].message.content);
        assert.equal(Number(reply.stats.match(/(\d+) tokens/)[1]), expected.usage.completion_tokens);
        // It arrived in pieces (as the browser read them), each a prefix of the whole.
        const updates = (await page.evaluate(() => window.replyUpdates)).filter((t) => t !== '');
        t.diagnostic(`${updates.length} updates of the reply on the page`);
        for (const u of updates) assert.ok(reply.content.startsWith(u), JSON.stringify(u));
        assert.equal(updates.at(-1), reply.content);
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });

    test('text is shown as text, the conversation survives a reload, New chat clears it', async () => {
      const { context, page, errors } = await openPage(browser, `${server.url}/`);
      try {
        await setField(page, 'max_tokens', '8');
        const question = '<img src=x onerror="window.injected=1"><b>bold</b>';
        await page.type('#input', question);
        await page.click('#send');
        const reply = await replyFinished(page);
        assert.equal(reply.state, 'done');
        const shown = await page.$eval('#messages .msg.user .content', (el) => el.textContent);
        assert.equal(shown, question);
        assert.equal(await page.$('#messages img, #messages b'), null);
        await page.reload({ waitUntil: 'load' });
        const kept = await page.$$eval('#messages .msg .content', (els) => els.map((e) => e.textContent));
        assert.deepEqual(kept, [question, reply.content]);
        assert.equal(await page.$eval('#max_tokens', (el) => el.value), '8'); // settings are kept too
        assert.equal(await page.evaluate(() => window.injected), undefined);
        await page.click('#new-chat');
        assert.equal(await page.$$eval('#messages .msg', (els) => els.length), 0);
        assert.deepEqual(JSON.parse(await page.evaluate(() => localStorage.getItem('strata.conversation'))), []);
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });

    test('Stop ends the reply and the server aborts the request', async (t) => {
      const { context, page, errors } = await openPage(browser, `${server.url}/`);
      try {
        await page.waitForFunction(() => document.getElementById('model').textContent === 'stories260K.gguf', WAIT);
        await setField(page, 'max_tokens', '400');
        await setField(page, 'temperature', '1');
        // Stop is pressed as soon as the first text of the reply shows.
        await page.evaluate(() => {
          new MutationObserver(() => {
            const el = [...document.querySelectorAll('#messages .msg.assistant')].at(-1);
            const stop = document.getElementById('stop');
            if (el && el.dataset.state === 'streaming' && el.querySelector('.content').textContent && !stop.hidden) stop.click();
          }).observe(document.getElementById('messages'), { childList: true, subtree: true });
        });
        // A reply may end on its own before the stop reaches the server (the model is tiny
        // and fast): then another is asked for; one must be stopped mid-generation.
        let stopped = null;
        for (let attempt = 0; attempt < 8 && !stopped; ++attempt) {
          const aborted = await metric(server, 'strata:request_aborted_total');
          await page.type('#input', `Tell me a long story number ${attempt}`);
          await page.click('#send');
          const reply = await replyFinished(page);
          assert.ok(reply.state === 'stopped' || reply.state === 'done', JSON.stringify(reply));
          if (reply.state !== 'stopped') continue;
          assert.match(reply.stats, /^stopped after [\d.]+ s/);
          // The server notices the closed connection: the request ends, nothing keeps running.
          assert.ok(await eventually(async () => {
            const stats = (await getJson(server, '/debug/stats')).body;
            return stats.http_in_flight === 0 && stats.running === 0 && stats.waiting === 0;
          }), 'the request did not end');
          if ((await metric(server, 'strata:request_aborted_total')) === aborted + 1) stopped = reply;
          t.diagnostic(`attempt ${attempt}: stopped after ${reply.content.length} characters`);
        }
        assert.ok(stopped, 'no reply was stopped while the server was still generating it');
        assert.match(server.stderr(), /client disconnected(?: mid-stream)?; aborted chatcmpl-/);
        // The stopped reply does not grow any more; the page is ready for the next message.
        await sleep(1000);
        assert.equal((await lastReply(page)).content, stopped.content);
        assert.equal(await page.$eval('#stop', (el) => el.hidden), true);
        assert.equal(await page.$eval('#send', (el) => el.disabled), false);
        assert.deepEqual(errors, []);
      } finally {
        await context.close();
      }
    });
  });

  describe('with --api-key', () => {
    let server;
    before(async () => {
      server = await startServer(['--api-key', 'test-key']);
    });
    after(async () => {
      const { code } = await server.stop();
      assert.equal(code, 0);
    });

    test('the page loads without the key, asks for it, sends it, and says so on 401', async () => {
      const { context, page, errors, res } = await openPage(browser, `${server.url}/`);
      try {
        assert.equal(res.status(), 200);
        await page.waitForFunction(() => document.getElementById('key-dialog').open, WAIT);
        assert.match(await page.$eval('#key-message', (el) => el.textContent), /needs an API key/);
        // A wrong key is refused, and the page says so.
        await page.type('#api-key', 'wrong-key');
        await page.click('#key-save');
        await page.waitForFunction(() => document.getElementById('key-dialog').open
          && /refused/.test(document.getElementById('key-message').textContent), WAIT);
        // The right one is kept and used.
        await page.$eval('#api-key', (el) => { el.value = ''; });
        await page.type('#api-key', 'test-key');
        await page.click('#key-save');
        await page.waitForFunction(() => document.getElementById('model').textContent === 'stories260K.gguf', WAIT);
        assert.equal(await page.$eval('#key-dialog', (el) => el.open), false);
        assert.equal(JSON.parse(await page.evaluate(() => localStorage.getItem('strata.apiKey'))), 'test-key');
        await setField(page, 'max_tokens', '8');
        await page.type('#input', 'Hello');
        await page.click('#send');
        const reply = await replyFinished(page);
        assert.equal(reply.state, 'done', JSON.stringify(reply));
        assert.ok(reply.content.length > 0);
        // A chat request with a wrong key: a clear 401 message, the question back in the box.
        await page.evaluate(() => localStorage.setItem('strata.apiKey', JSON.stringify('stale-key')));
        await page.reload({ waitUntil: 'load' });
        await page.waitForFunction(() => document.getElementById('key-dialog').open, WAIT);
        await page.click('#key-cancel');
        await page.type('#input', 'Hello again');
        await page.click('#send');
        await page.waitForFunction(() => !document.getElementById('banner').hidden, WAIT);
        assert.match(await page.$eval('#banner', (el) => el.textContent), /refused this API key \(401 Unauthorized\)/);
        assert.equal(await page.$eval('#key-dialog', (el) => el.open), true);
        assert.equal(await page.$eval('#input', (el) => el.value), 'Hello again');
        // The only console errors are the browser's own notes on the refused (401) requests.
        assert.ok(errors.length > 0 && errors.every((e) => /401/.test(e)), JSON.stringify(errors));
      } finally {
        await context.close();
      }
    });

    test('the API routes still need the key', async () => {
      assert.equal((await fetch(`${server.url}/v1/models`)).status, 401);
      assert.equal((await fetch(`${server.url}/v1/models`, { headers: { Authorization: 'Bearer test-key' } })).status, 200);
      assert.equal((await fetch(`${server.url}/webui/nothing.js`)).status, 401);
    });
  });

  test('--no-webui: GET / is 404, the API still serves', async () => {
    const server = await startServer(['--no-webui']);
    try {
      for (const route of ['/', '/index.html', '/webui/app.js']) assert.equal((await fetch(`${server.url}${route}`)).status, 404, route);
      assert.equal((await fetch(`${server.url}/v1/models`)).status, 200);
      assert.doesNotMatch(server.stderr(), /chat page:/);
    } finally {
      const { code } = await server.stop();
      assert.equal(code, 0);
    }
  });
});
