// The upload panel: one row per file, fed by upload-worker.js. The worker
// does the work (seed 000); this module shows it — hashing and sending as two
// bars, speed, time left, "instant", errors with Retry, what is still going
// on top — and remembers unfinished uploads in localStorage so that, after
// the tab was closed, choosing the same file again resumes from the server's
// chunk bitmap.
import { fmtBytes, icon, typeOf, toast } from './app.js';

const $ = (id) => document.getElementById(id);
const KEY = 'netdisk.unfinished';

class Row {
  constructor(id, name, path, size) {
    this.id = id; this.name = name; this.path = path; this.size = size;
    this.state = 'queued'; this.hashed = 0; this.sent = 0; this.skipped = 0; this.resumed = 0; this.retries = 0;
    this.samples = []; this.instant = false; this.error = '';
    this.el = document.createElement('li');
    this.el.className = 'up';
    this.el.dataset.path = path;
    this.el.append(icon(typeOf(name, false)));
    this.el.firstChild.classList.add('t');
    this.nameEl = document.createElement('div');
    this.nameEl.className = 'up-name';
    this.nameEl.textContent = name;
    this.nameEl.title = path;
    this.btns = document.createElement('div');
    this.btns.className = 'up-btns';
    this.meta = document.createElement('div');
    this.meta.className = 'up-meta';
    const bars = document.createElement('div');
    bars.className = 'up-bars';
    this.hashBar = document.createElement('div');
    this.hashBar.className = 'bar hash';
    this.hashBar.title = 'Hashing';
    this.hashBar.appendChild(document.createElement('span'));
    this.sendBar = document.createElement('div');
    this.sendBar.className = 'bar send';
    this.sendBar.title = 'Sending';
    this.sendBar.appendChild(document.createElement('span'));
    bars.append(this.hashBar, this.sendBar);
    this.el.append(this.nameEl, this.btns, this.meta, bars);
  }

  button(label, text, fn) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = text;
    b.title = label;
    b.setAttribute('aria-label', label + ' ' + this.name);
    b.className = 'up-' + label.toLowerCase();
    b.onclick = fn;
    this.btns.appendChild(b);
  }

  speed() {
    const s = this.samples;
    if (s.length < 2) return 0;
    const a = s[0], b = s[s.length - 1];
    return b.t > a.t ? (b.v - a.v) / ((b.t - a.t) / 1000) : 0;
  }

  render(panel) {
    const el = this.el;
    el.dataset.state = this.state;
    el.dataset.sent = this.sent;
    el.dataset.hashed = this.hashed;
    el.dataset.resumed = this.resumed;
    el.dataset.retries = this.retries;
    el.dataset.inflight = this.inflight || 0;
    el.dataset.instant = this.instant ? '1' : '';
    el.dataset.code = this.state === 'error' ? this.code || '' : '';
    const size = this.size || 1;
    this.hashBar.firstChild.style.width = (this.state === 'done' ? 100 : Math.min(100, this.hashed / size * 100)) + '%';
    this.sendBar.firstChild.style.width = (this.state === 'done' ? 100 : Math.min(100, (this.sent + this.skipped) / size * 100)) + '%';
    let text = '';
    switch (this.state) {
      case 'queued': text = 'Waiting · ' + fmtBytes(this.size); break;
      case 'running': {
        const parts = [];
        if (this.hashed < this.size) parts.push('Hashing ' + Math.floor(this.hashed / size * 100) + '%');
        parts.push('Sent ' + fmtBytes(this.sent + this.skipped) + ' of ' + fmtBytes(this.size));
        const sp = this.speed();
        if (sp > 0) {
          parts.push(fmtBytes(sp) + '/s');
          const left = (this.size - this.sent - this.skipped) / sp;
          if (isFinite(left) && left > 0) parts.push(fmtTime(left) + ' left');
        }
        if (this.resumed) parts.push('resumed ' + this.resumed + ' chunks');
        if (this.retriesNote) parts.push(this.retriesNote);
        text = parts.join(' · ');
        break;
      }
      case 'paused': text = 'Paused · ' + fmtBytes(this.sent + this.skipped) + ' of ' + fmtBytes(this.size); break;
      case 'done': text = this.instant ? 'Instant upload · no bytes sent' : 'Uploaded · ' + fmtBytes(this.size) + (this.resumed ? ' · resumed ' + this.resumed + ' chunks' : ''); break;
      case 'error': text = this.error; break;
      case 'cancelled': text = 'Cancelled'; break;
      case 'interrupted': text = 'Interrupted · choose the same file again to resume'; break;
    }
    this.meta.textContent = text;
    if (this.state === 'done' && this.instant) {
      const b = document.createElement('span');
      b.className = 'badge';
      b.textContent = 'instant';
      this.meta.prepend(b, ' ');
    }
    // Buttons are rebuilt only when the state changes: progress messages
    // arrive many times a second, and a button replaced under the pointer
    // would swallow the click.
    if (this.btnState === this.state) return;
    this.btnState = this.state;
    this.btns.textContent = '';
    if (this.state === 'running') this.button('Pause', '❚❚', () => panel.post({ type: 'pause', id: this.id }));
    if (this.state === 'paused') this.button('Resume', '▶', () => panel.post({ type: 'resume', id: this.id }));
    if (this.state === 'error') this.button('Retry', '↻', () => panel.retry(this));
    if (this.state === 'interrupted') this.button('Choose', '📂', () => panel.choose(this));
    if (['queued', 'running', 'paused', 'error'].includes(this.state)) this.button('Cancel', '✕', () => panel.cancel(this));
    else this.button('Dismiss', '✕', () => panel.dismiss(this));
  }
}

// rank orders the panel: what is still going (running, paused, queued) on
// top, where the user looks for it, then what needs the user (failed,
// interrupted), then what is over (finished, cancelled).
function rank(state) {
  if (['running', 'paused', 'queued'].includes(state)) return 0;
  if (state === 'error' || state === 'interrupted') return 1;
  return 2;
}

function fmtTime(s) {
  if (s < 60) return Math.ceil(s) + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
  return Math.floor(s / 3600) + ' h ' + Math.round(s % 3600 / 60) + ' min';
}

class Panel {
  constructor() {
    this.rows = new Map();
    this.next = 1;
    this.worker = null;
    this.csrf = '';
    this.onFinished = () => {};
    this.onStarted = () => {};
    this.onSignedOut = () => {};
  }

  ensureWorker() {
    if (this.worker) return;
    this.worker = new Worker('/static/upload-worker.js');
    this.worker.onmessage = (e) => this.onMessage(e.data);
    this.worker.onerror = (e) => toast('The upload engine failed: ' + (e.message || 'unknown error'), true);
    this.worker.postMessage({ type: 'csrf', csrf: this.csrf });
  }

  post(m) { this.ensureWorker(); this.worker.postMessage(m); }

  setCSRF(c) { this.csrf = c; if (this.worker) this.worker.postMessage({ type: 'csrf', csrf: c }); }

  show() {
    $('uploads').hidden = false;
    if (!this.wired) {
      this.wired = true;
      $('uploads-toggle').onclick = () => {
        const c = $('uploads').classList.toggle('collapsed');
        $('uploads-toggle').setAttribute('aria-expanded', String(!c));
      };
      $('uploads-clear').onclick = () => { for (const r of [...this.rows.values()]) if (r.state === 'done' || r.state === 'cancelled') this.dismiss(r); };
    }
  }

  // order sorts the rows by rank; going rows keep the order they were
  // added in (the order they run), the others show the newest outcome
  // first. Only a row whose place changes is moved: a button under the
  // pointer stays where it is.
  order() {
    const rows = [...this.rows.values()].sort((a, b) => rank(a.state) - rank(b.state) ||
      (rank(a.state) === 0 ? a.seq - b.seq : b.settled - a.settled));
    const list = $('uploads-list');
    rows.forEach((r, i) => { if (list.children[i] !== r.el) list.insertBefore(r.el, list.children[i] || null); });
  }

  settle(row) { row.settled = this.next++; }

  title() {
    const all = [...this.rows.values()];
    const active = all.filter(r => ['queued', 'running', 'paused'].includes(r.state)).length;
    const errs = all.filter(r => r.state === 'error').length;
    $('uploads-title').textContent = active ? `Uploading ${active} file${active > 1 ? 's' : ''}` + (errs ? ` · ${errs} failed` : '')
      : errs ? `${errs} upload${errs > 1 ? 's' : ''} failed` : `Uploads · ${all.filter(r => r.state === 'done').length} done`;
    if (!all.length) $('uploads').hidden = true;
  }

  add(file, path) {
    this.show();
    // An interrupted row for the same path and size is this upload resuming.
    for (const r of this.rows.values()) if (r.state === 'interrupted' && r.path === path && r.size === file.size) this.dismiss(r);
    const id = 'u' + this.next++;
    const row = new Row(id, file.name, path, file.size);
    row.file = file;
    row.seq = this.next;
    this.rows.set(id, row);
    $('uploads-list').appendChild(row.el);
    row.render(this);
    this.order();
    this.title();
    remember(path, file);
    this.post({ type: 'add', id, file, path });
  }

  retry(row) {
    row.state = 'queued'; row.error = ''; row.retriesNote = '';
    row.render(this);
    this.order();
    this.title();
    this.post({ type: 'retry', id: row.id });
  }

  cancel(row) { this.post({ type: 'cancel', id: row.id }); }

  dismiss(row) {
    row.el.remove();
    this.rows.delete(row.id);
    if (row.state === 'interrupted') forget(row.path);
    this.title();
  }

  choose(row) {
    const inp = document.createElement('input');
    inp.type = 'file';
    inp.onchange = () => {
      const f = inp.files[0];
      if (!f) return;
      if (f.size !== row.size) { toast(`That file is ${fmtBytes(f.size)}, the interrupted one was ${fmtBytes(row.size)}: it cannot resume.`, true); return; }
      this.add(f, row.path);
    };
    inp.click();
  }

  onMessage(m) {
    const row = this.rows.get(m.id);
    if (!row) return;
    switch (m.type) {
      case 'state':
        row.state = m.state;
        if (m.state === 'running') row.samples = [];
        break;
      case 'session':
        this.onStarted();
        break;
      case 'progress': {
        row.hashed = m.hashed; row.sent = m.sent; row.skipped = m.skipped; row.resumed = m.resumed; row.retries = m.retries;
        const now = performance.now();
        row.samples.push({ t: now, v: m.sent });
        while (row.samples.length > 2 && now - row.samples[0].t > 5000) row.samples.shift();
        break;
      }
      case 'event':
        if (m.counters) row.inflight = m.counters.inFlight;
        if (m.kind === 'ChunkRetry') { row.retries++; row.retriesNote = `retrying (${m.attempt}): ${m.error}`; }
        if (m.kind === 'ChunkDone') row.retriesNote = '';
        break;
      case 'done':
        row.state = 'done'; row.instant = m.instant;
        this.settle(row);
        forget(row.path);
        this.onFinished(row);
        break;
      case 'error':
        row.state = 'error'; row.error = m.message; row.code = m.code;
        this.settle(row);
        this.onFinished(row);
        if (m.code === 'unauthenticated') this.onSignedOut();
        break;
      case 'cancelled':
        row.state = 'cancelled';
        this.settle(row);
        forget(row.path);
        this.onFinished(row);
        break;
    }
    row.render(this);
    if (m.type !== 'progress' && m.type !== 'event') this.order();
    this.title();
  }

  // After a sign-in: uploads stopped by the session's end go on, and
  // uploads the closed tab left unfinished are listed for resuming.
  resumeAfterSignin() {
    for (const r of this.rows.values()) if (r.state === 'error' && r.code === 'unauthenticated') this.retry(r);
    for (const u of load()) {
      if ([...this.rows.values()].some(r => r.path === u.path)) continue;
      this.show();
      const row = new Row('i' + this.next++, u.name, u.path, u.size);
      row.state = 'interrupted';
      this.settle(row);
      this.rows.set(row.id, row);
      $('uploads-list').appendChild(row.el);
      row.render(this);
    }
    this.order();
    this.title();
  }

  signedOut() {
    for (const r of this.rows.values()) if (['queued', 'running', 'paused'].includes(r.state)) this.post({ type: 'pause', id: r.id });
  }
}

function load() {
  try { return JSON.parse(localStorage.getItem(KEY) || '[]'); } catch (_) { return []; }
}
function remember(path, file) {
  const l = load().filter(u => u.path !== path);
  l.push({ path, name: file.name, size: file.size, lastModified: file.lastModified });
  localStorage.setItem(KEY, JSON.stringify(l));
}
function forget(path) { localStorage.setItem(KEY, JSON.stringify(load().filter(u => u.path !== path))); }

export const uploads = new Panel();
