// The chat page of `strata serve`: the conversation lives in this browser (localStorage); each
// reply streams from POST /v1/chat/completions (fetch, Server-Sent Events) and can be stopped
// (AbortController: the connection closes and the server aborts the request). Model text is
// only ever inserted as text (textContent), never parsed as HTML.
'use strict';

const STORAGE = { conversation: 'strata.conversation', settings: 'strata.settings', apiKey: 'strata.apiKey' };
const DEFAULTS = { system: '', temperature: 0.8, top_p: 0.95, max_tokens: 512, seed: '' };
// Each setting's field and the range the server accepts (top_p must be above 0).
const NUMBER_SETTINGS = {
  temperature: { min: 0, max: 2, integer: false },
  top_p: { min: 0.01, max: 1, integer: false },
  max_tokens: { min: 1, max: 1 << 24, integer: true },
};

const $ = (id) => document.getElementById(id);
const ui = {
  model: $('model'), banner: $('banner'), messages: $('messages'), composer: $('composer'), input: $('input'),
  send: $('send'), stop: $('stop'), newChat: $('new-chat'), keyButton: $('key-button'), system: $('system'),
  seed: $('seed'), resetSettings: $('reset-settings'), keyDialog: $('key-dialog'), keyForm: $('key-form'),
  keyMessage: $('key-message'), apiKey: $('api-key'), keyForget: $('key-forget'), keyCancel: $('key-cancel'),
};

function load(key, fallback) {
  try {
    const text = localStorage.getItem(key);
    return text === null ? fallback : JSON.parse(text);
  } catch {
    return fallback; // unreadable or disabled storage: start fresh
  }
}

function save(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch (e) {
    showBanner(`Cannot save in this browser's storage: ${e.message}`);
  }
}

// Only well-formed messages survive a reload (the storage may hold anything).
function loadConversation() {
  const stored = load(STORAGE.conversation, []);
  if (!Array.isArray(stored)) return [];
  return stored.filter((m) => m && (m.role === 'user' || m.role === 'assistant') && typeof m.content === 'string')
    .map((m) => ({ role: m.role, content: m.content, stats: typeof m.stats === 'string' ? m.stats : '', error: !!m.error }));
}

const state = {
  messages: loadConversation(), // [{role, content, stats, error}]
  settings: { ...DEFAULTS, ...load(STORAGE.settings, {}) },
  apiKey: String(load(STORAGE.apiKey, '') || ''),
  model: null,
  controller: null, // the AbortController of the reply in progress
};

function showBanner(text) {
  ui.banner.textContent = text;
  ui.banner.hidden = false;
}

function hideBanner() {
  ui.banner.hidden = true;
  ui.banner.textContent = '';
}

function headers() {
  const h = { 'Content-Type': 'application/json' };
  if (state.apiKey) h.Authorization = `Bearer ${state.apiKey}`;
  return h;
}

// The message of an OpenAI-shaped error answer, or the status text.
async function errorMessage(res) {
  try {
    const body = await res.json();
    if (body && body.error && typeof body.error.message === 'string') return body.error.message;
  } catch {
    // not JSON: fall back to the status line
  }
  return res.statusText || 'request failed';
}

class HttpError extends Error {
  constructor(status, message) {
    super(`${status}: ${message}`);
    this.status = status;
  }
}

// ---- the conversation on screen -------------------------------------------------------------

function messageElement(m) {
  const el = document.createElement('div');
  el.className = `msg ${m.role}`;
  if (m.error) el.classList.add('error');
  const role = document.createElement('div');
  role.className = 'role';
  role.textContent = m.role === 'user' ? 'You' : state.model || 'Assistant';
  const content = document.createElement('div');
  content.className = 'content';
  content.textContent = m.content;
  const stats = document.createElement('div');
  stats.className = 'stats';
  stats.textContent = m.stats || '';
  el.append(role, content, stats);
  return el;
}

function nearBottom() {
  const box = ui.messages;
  return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
}

function scrollToBottom() {
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

function renderAll() {
  ui.messages.replaceChildren(...state.messages.map(messageElement));
  scrollToBottom();
}

function persistConversation(messages = state.messages) {
  save(STORAGE.conversation, messages);
}

function setBusy(busy) {
  ui.send.disabled = busy;
  ui.stop.hidden = !busy;
  ui.stop.disabled = !busy;
}

// ---- settings -------------------------------------------------------------------------------

function showSettings() {
  const s = state.settings;
  ui.system.value = s.system;
  for (const name of Object.keys(NUMBER_SETTINGS)) $(name).value = String(s[name]);
  ui.seed.value = s.seed === '' ? '' : String(s.seed);
}

function readNumber(name) {
  const { min, max, integer } = NUMBER_SETTINGS[name];
  const v = Number($(name).value);
  if ($(name).value.trim() === '' || !Number.isFinite(v)) return DEFAULTS[name];
  const clamped = Math.min(max, Math.max(min, integer ? Math.round(v) : v));
  return clamped;
}

function readSettings() {
  const s = { system: ui.system.value };
  for (const name of Object.keys(NUMBER_SETTINGS)) s[name] = readNumber(name);
  const seed = ui.seed.value.trim();
  s.seed = seed !== '' && Number.isSafeInteger(Number(seed)) ? Number(seed) : '';
  state.settings = s;
  save(STORAGE.settings, s);
  showSettings(); // shows what is used (clamped, rounded)
}

function requestBody() {
  const s = state.settings;
  // The reply being written (the last message) is left out; so are replies that failed.
  const history = state.messages.slice(0, -1).filter((m) => !m.error).map(({ role, content }) => ({ role, content }));
  const messages = s.system.trim() ? [{ role: 'system', content: s.system }, ...history] : history;
  const body = {
    messages, stream: true, stream_options: { include_usage: true },
    temperature: s.temperature, top_p: s.top_p, max_tokens: s.max_tokens,
  };
  if (s.seed !== '') body.seed = s.seed;
  return body;
}

// ---- streaming ------------------------------------------------------------------------------

// Reads a text/event-stream body and calls onEvent with each JSON event. Resolves true at
// "data: [DONE]", false when the body ends without it. Lines may end with LF, CRLF or CR.
async function readEvents(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let heldCR = ''; // a CR at the end of a read may be the first half of a CRLF
  for (;;) {
    const { value, done } = await reader.read();
    let text = heldCR + decoder.decode(value, { stream: !done });
    heldCR = !done && text.endsWith('\r') ? '\r' : '';
    if (heldCR) text = text.slice(0, -1);
    buffer += text.replace(/\r\n?/g, '\n');
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split('\n').filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).replace(/^ /, '')).join('\n');
      if (data === '') continue; // a comment or keep-alive
      if (data === '[DONE]') return true;
      onEvent(JSON.parse(data));
    }
    if (done) return false;
  }
}

// What the stats line under a reply says: tokens, decode speed (tokens after the first over
// the time from the first to the last token, as the browser received them), time to first token.
function statsText(t, outcome) {
  const parts = [];
  if (outcome === 'stopped') parts.push(`stopped after ${((performance.now() - t.start) / 1000).toFixed(1)} s`);
  if (t.tokens !== null) parts.push(`${t.tokens} token${t.tokens === 1 ? '' : 's'}`);
  if (t.tokens !== null && t.tokens > 1 && t.last > t.first) {
    parts.push(`${(((t.tokens - 1) * 1000) / (t.last - t.first)).toFixed(1)} tok/s`);
  }
  if (t.first) parts.push(`first token after ${Math.round(t.first - t.start)} ms`);
  if (t.finish === 'length') parts.push('stopped at max tokens');
  return parts.join(' · ');
}

async function send(text) {
  if (state.controller) return;
  hideBanner();
  readSettings();
  state.messages.push({ role: 'user', content: text, stats: '', error: false });
  const reply = { role: 'assistant', content: '', stats: '', error: false };
  state.messages.push(reply);
  persistConversation(state.messages.slice(0, -1));
  renderAll();
  const el = ui.messages.lastElementChild;
  const contentEl = el.querySelector('.content');
  el.classList.add('pending');
  el.dataset.state = 'streaming';

  const controller = new AbortController();
  state.controller = controller;
  setBusy(true);
  const timing = { start: performance.now(), first: 0, last: 0, tokens: null, finish: null };
  let outcome = 'done';
  let failure = null;
  try {
    const res = await fetch('v1/chat/completions', {
      method: 'POST', headers: headers(), body: JSON.stringify(requestBody()), signal: controller.signal,
    });
    if (!res.ok) throw new HttpError(res.status, await errorMessage(res));
    const complete = await readEvents(res, (chunk) => {
      if (chunk.error) throw new Error(chunk.error.message || 'the server reported an error');
      const choice = chunk.choices && chunk.choices[0];
      const delta = choice && choice.delta && choice.delta.content;
      if (typeof delta === 'string' && delta !== '') {
        const now = performance.now();
        if (!timing.first) timing.first = now;
        timing.last = now;
        const follow = nearBottom();
        reply.content += delta;
        contentEl.textContent = reply.content;
        el.classList.remove('pending');
        if (follow) scrollToBottom();
      }
      if (choice && choice.finish_reason) timing.finish = choice.finish_reason;
      if (chunk.usage) timing.tokens = chunk.usage.completion_tokens;
    });
    if (!complete) throw new Error('the stream ended before the reply was complete');
  } catch (e) {
    if (controller.signal.aborted) {
      outcome = 'stopped';
    } else {
      outcome = 'error';
      failure = e;
      controller.abort(); // closes the connection if the stream is still open
    }
  }
  state.controller = null;
  setBusy(false);
  finishReply(el, reply, timing, outcome, failure, text);
}

function finishReply(el, reply, timing, outcome, failure, text) {
  el.classList.remove('pending');
  el.dataset.state = outcome;
  if (failure && failure.status === 401) {
    // Nothing was generated: the question goes back into the box, to be sent again with a key.
    state.messages.splice(-2, 2);
    persistConversation();
    renderAll();
    if (!ui.input.value) ui.input.value = text;
    const message = state.apiKey ? 'The server refused this API key (401 Unauthorized).'
      : 'The server needs an API key (401 Unauthorized).';
    showBanner(message);
    askForKey(message, true);
    return;
  }
  if (failure) {
    reply.error = true;
    reply.stats = `Error ${failure.message}`;
    el.classList.add('error');
    showBanner(reply.stats);
  } else {
    reply.stats = statsText(timing, outcome);
  }
  el.querySelector('.stats').textContent = reply.stats;
  persistConversation();
}

// ---- the model and the API key ------------------------------------------------------------

async function connect() {
  ui.model.textContent = 'connecting…';
  let res;
  try {
    res = await fetch('v1/models', { headers: headers() });
  } catch (e) {
    ui.model.textContent = 'offline';
    showBanner(`Cannot reach the server: ${e.message}`);
    return;
  }
  if (res.status === 401) {
    ui.model.textContent = 'API key needed';
    askForKey(state.apiKey ? 'The server refused this API key (401 Unauthorized). Enter the right one.'
      : 'This server needs an API key (the one given to strata serve --api-key).', !!state.apiKey);
    return;
  }
  if (!res.ok) {
    ui.model.textContent = 'unavailable';
    showBanner(`GET /v1/models: ${res.status} ${await errorMessage(res)}`);
    return;
  }
  const body = await res.json();
  state.model = body && Array.isArray(body.data) && body.data[0] ? String(body.data[0].id) : null;
  ui.model.textContent = state.model || 'no model';
  for (const role of ui.messages.querySelectorAll('.msg.assistant .role')) role.textContent = state.model || 'Assistant';
  hideBanner();
}

function askForKey(message, isError) {
  ui.keyMessage.textContent = message;
  ui.keyMessage.classList.toggle('error', isError);
  ui.apiKey.value = state.apiKey;
  if (!ui.keyDialog.open) ui.keyDialog.showModal();
  ui.apiKey.focus();
}

function setKey(key) {
  state.apiKey = key;
  if (key) save(STORAGE.apiKey, key);
  else localStorage.removeItem(STORAGE.apiKey);
  ui.keyDialog.close();
  connect();
}

// ---- wiring ---------------------------------------------------------------------------------

ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = ui.input.value;
  if (!text.trim() || state.controller) return;
  ui.input.value = '';
  send(text);
});
ui.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    ui.composer.requestSubmit();
  }
});
ui.stop.addEventListener('click', () => {
  if (state.controller) state.controller.abort();
});
ui.newChat.addEventListener('click', () => {
  if (state.controller) state.controller.abort();
  state.messages = [];
  persistConversation();
  renderAll();
  hideBanner();
  ui.input.focus();
});
for (const field of [ui.system, ui.seed, ...Object.keys(NUMBER_SETTINGS).map($)]) {
  field.addEventListener('change', readSettings);
}
ui.resetSettings.addEventListener('click', () => {
  state.settings = { ...DEFAULTS };
  save(STORAGE.settings, state.settings);
  showSettings();
});
ui.keyButton.addEventListener('click', () => askForKey('The API key of this server (empty: none).', false));
ui.keyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  setKey(ui.apiKey.value.trim());
});
ui.keyForget.addEventListener('click', () => setKey(''));
ui.keyCancel.addEventListener('click', () => ui.keyDialog.close());

showSettings();
renderAll();
setBusy(false);
connect();
