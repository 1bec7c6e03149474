// netdisk in the browser: sign-in, the file browser and the upload panel.
// Plain ES modules, no framework, no build step. Every call goes to the JSON
// API (/api/v1/…) with the session cookie and the CSRF token; uploads run in
// upload-worker.js.
import { uploads } from './uploads.js';
import { thumbIcon, renderGallery, setupGallery } from './gallery.js';
import { fmtBytes } from './size.js';

// The page's size formatter, also for the modules that import it from here.
export { fmtBytes };

const $ = (id) => document.getElementById(id);
export const state = { csrf: '', user: null, cwd: '/', entries: [], sort: { key: 'name', dir: 'asc' }, selected: new Set(), quota: null, shared: new Map(),
  view: [], shown: 0, listGen: 0 };

// ---------- API ----------
export class APIError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

export async function api(method, url, body) {
  const opt = { method, credentials: 'same-origin', headers: { 'X-CSRF-Token': state.csrf, 'X-Netdisk-Web': '1' } };
  if (body !== undefined) { opt.body = JSON.stringify(body); opt.headers['Content-Type'] = 'application/json'; }
  let r;
  try {
    r = await fetch(url, opt);
  } catch (e) {
    throw new APIError(0, 'network', navigator.onLine === false ? 'You are offline.' : 'Cannot reach the server.');
  }
  if (r.status === 204) return null;
  let j = null;
  try { j = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok) {
    const err = new APIError(r.status, j && j.code || '', j && j.error || ('HTTP ' + r.status));
    if (r.status === 401 && state.user) sessionEnded();
    throw err;
  }
  return j;
}

const enc = (p) => p.split('/').map(encodeURIComponent).join('/');
const join = (dir, name) => (dir === '/' ? '' : dir) + '/' + name;
const parent = (p) => p.slice(0, p.lastIndexOf('/')) || '/';
const base = (p) => p.slice(p.lastIndexOf('/') + 1);

export function fmtDate(s) {
  const d = new Date(s);
  const now = new Date();
  const sameDay = d.toDateString() === now.toDateString();
  return sameDay ? 'Today ' + d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString([], { year: 'numeric', month: 'short', day: 'numeric' }) + ' ' + d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

export function typeOf(name, isDir) {
  if (isDir) return 'folder';
  const ext = name.includes('.') ? name.split('.').pop().toLowerCase() : '';
  if (/^(png|jpe?g|gif|webp|bmp|svg|avif|ico)$/.test(ext)) return 'image';
  if (/^(mp4|mkv|mov|webm|avi|m4v)$/.test(ext)) return 'video';
  if (/^(mp3|flac|wav|ogg|m4a|aac|opus)$/.test(ext)) return 'audio';
  if (/^(zip|tar|gz|tgz|bz2|xz|7z|rar|zst)$/.test(ext)) return 'archive';
  if (ext === 'pdf') return 'pdf';
  if (/^(js|mjs|ts|go|py|rs|c|h|cc|cpp|java|kt|rb|php|sh|json|yaml|yml|toml|xml|html|css|sql)$/.test(ext)) return 'code';
  if (/^(txt|md|csv|log|ini|conf|cfg|rst|tex)$/.test(ext)) return 'text';
  return 'file';
}

export function icon(type) {
  const s = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  const u = document.createElementNS('http://www.w3.org/2000/svg', 'use');
  u.setAttribute('href', '#t-' + type);
  s.appendChild(u);
  s.setAttribute('aria-hidden', 'true');
  return s;
}

// ---------- toast ----------
let toastTimer = 0;
export function toast(msg, isErr) {
  const t = $('toast');
  t.textContent = msg;
  t.classList.toggle('err', !!isErr);
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, isErr ? 6000 : 2200);
}

// ---------- sign-in ----------
// showSignin shows the sign-in form with msg: a notice (signed out, the
// session ended, the password changed: nothing went wrong) unless isErr,
// which only a failed sign-in is.
function showSignin(msg, isErr) {
  state.user = null;
  $('app').hidden = true;
  $('signin').hidden = false;
  // Views over the listing (the trash, a file's versions) close with the session.
  document.dispatchEvent(new Event('netdisk:signedout'));
  signinMessage(msg, isErr);
  $('signin-name').focus();
}

function signinMessage(msg, isErr) {
  const p = $('signin-error');
  p.textContent = msg || '';
  p.className = isErr ? 'form-error' : 'form-notice';
  p.setAttribute('role', isErr ? 'alert' : 'status');
}

// sessionEnded is called on a 401. It asks the server first: the 401 may be
// stale, answered to a request sent before a new sign-in.
async function sessionEnded() {
  try {
    const r = await fetch('/web/session', { credentials: 'same-origin' });
    if (r.ok) return;
  } catch (_) { /* unreachable: treat as ended */ }
  if (!state.user) return;
  showSignin('Your session has ended: sign in again. Unfinished uploads resume after you sign in.');
}

async function signin(ev) {
  ev.preventDefault();
  const btn = $('signin-submit');
  btn.disabled = true;
  signinMessage('');
  try {
    const r = await fetch('/web/login', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: $('signin-name').value.trim(), password: $('signin-pass').value }) });
    const j = await r.json().catch(() => ({}));
    if (!r.ok) {
      const wait = r.headers.get('Retry-After');
      signinMessage(r.status === 429 ? `Too many failed attempts: try again in ${wait || 'a few'} seconds.`
        : r.status === 401 ? 'Wrong user name or password.' : (j.error || 'Sign-in failed (' + r.status + ').'), true);
      return;
    }
    $('signin-pass').value = '';
    await startApp(j);
  } catch (e) {
    signinMessage('Cannot reach the server.', true);
  } finally {
    btn.disabled = false;
  }
}

async function signout() {
  try { await api('POST', '/web/logout'); } catch (_) { /* signed out anyway */ }
  uploads.signedOut();
  showSignin('You are signed out.');
}

// changePassword asks for the current password and the new one twice. The
// server ends every session of the user on success, this one included, so
// the page goes back to its sign-in form.
function changePassword() {
  const body = document.createElement('div');
  const field = (id, label, auto) => {
    const l = document.createElement('label');
    l.htmlFor = id;
    l.textContent = label;
    const i = document.createElement('input');
    i.type = 'password';
    i.id = id;
    i.autocomplete = auto;
    i.required = true;
    body.append(l, i);
    return i;
  };
  const cur = field('pw-old', 'Current password', 'current-password');
  const nw = field('pw-new', 'New password', 'new-password');
  const again = field('pw-again', 'New password again', 'new-password');
  dialog({ title: 'Change your password', body, ok: 'Change password', onOk: async () => {
    if (nw.value !== again.value) throw new Error('The new passwords do not match.');
    await api('PUT', '/api/v1/account/password', { old: cur.value, new: nw.value });
    uploads.signedOut();
    showSignin('Your password is changed: sign in with the new one. Other browsers were signed out too.');
  } });
  cur.focus();
}

async function startApp(sess) {
  state.user = sess.name;
  state.csrf = sess.csrf;
  uploads.setCSRF(sess.csrf);
  $('user-name').textContent = sess.name;
  $('avatar').textContent = sess.name.slice(0, 1);
  $('signin').hidden = true;
  $('app').hidden = false;
  const fromHash = decodeURIComponent(location.hash.slice(1) || '/');
  await go(fromHash.startsWith('/') ? fromHash : '/');
  refreshQuota();
  uploads.resumeAfterSignin();
}

// ---------- browsing ----------
// A folder is read a page at a time (LIST_PAGE entries) and shown from its
// first page on; its rows are made as they come into view (ROWS at a time),
// so a folder of 100,000 entries costs the page a few hundred rows, not
// 100,000. Sort, selection and the keys work on every entry read.
const LIST_PAGE = 1000;
const ROWS = 200;
const listURL = (path, cursor) => '/api/v1/fs/list?limit=' + LIST_PAGE + '&path=' + encodeURIComponent(path) +
  (cursor ? '&cursor=' + encodeURIComponent(cursor) : '');

export async function go(path) {
  const gen = ++state.listGen;
  let next = '';
  try {
    const [r, sh] = await Promise.all([api('GET', listURL(path)),
      api('GET', '/api/v1/user-shares').catch(() => null)]);
    if (gen !== state.listGen) return; // another folder was asked for meanwhile
    state.cwd = r.path || path;
    state.entries = r.entries || [];
    next = r.next || '';
    // Entries of other users' shares, wherever the user put them: marked
    // with their owner ("Shared with me").
    state.shared = new Map(((sh && sh.sharedWithMe) || []).map(m => [m.path, m]));
  } catch (e) {
    if (e.status === 401) return;
    if (path !== '/') { toast(e.message, true); return go('/'); }
    toast(e.message, true);
    state.entries = [];
  }
  state.selected.clear();
  state.shown = 0;
  if (location.hash.slice(1) !== encodeURIComponent(state.cwd)) history.replaceState(null, '', '#' + encodeURIComponent(state.cwd));
  renderCrumbs();
  render();
  // The rest of the folder, page by page: shown again after pages 2, 4, 8…
  // and the last (each showing sorts every entry read so far).
  for (let pages = 1; next && gen === state.listGen; pages++) {
    let r;
    try {
      r = await api('GET', listURL(state.cwd, next));
    } catch (e) {
      if (gen === state.listGen && e.status !== 401) toast(e.message, true);
      return;
    }
    if (gen !== state.listGen) return;
    for (const n of r.entries || []) state.entries.push(n);
    next = r.next || '';
    if (!next || (pages & (pages + 1)) === 0) render();
  }
}

export const refresh = () => go(state.cwd);

function renderCrumbs() {
  const nav = $('crumbs');
  nav.textContent = '';
  const parts = state.cwd === '/' ? [] : state.cwd.slice(1).split('/');
  const mk = (label, p, last) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    if (last) b.setAttribute('aria-current', 'page');
    b.onclick = () => go(p);
    b.dataset.path = p;
    b.addEventListener('dragover', (e) => { e.preventDefault(); });
    return b;
  };
  nav.appendChild(mk('My drive', '/', parts.length === 0));
  let acc = '';
  parts.forEach((part, i) => {
    acc += '/' + part;
    const s = document.createElement('span');
    s.className = 'sep';
    s.textContent = '›';
    nav.appendChild(s);
    nav.appendChild(mk(part, acc, i === parts.length - 1));
  });
  $('drop-target').textContent = state.cwd === '/' ? 'My drive' : base(state.cwd);
}

// One collator for every comparison: localeCompare with options builds one
// per call, which made sorting a large folder take seconds.
const byName = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

function sorted() {
  const { key, dir } = state.sort;
  const m = dir === 'asc' ? 1 : -1;
  return [...state.entries].sort((a, b) => {
    if (a.isDir !== b.isDir) return a.isDir ? -1 : 1; // folders first, as every file manager
    let c = 0;
    if (key === 'size') c = a.size - b.size;
    else if (key === 'mtime') c = Date.parse(a.mtime) - Date.parse(b.mtime);
    if (c === 0) c = byName.compare(a.name, b.name);
    return c * m;
  });
}

function render() {
  const tbody = $('rows');
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.path : null;
  tbody.textContent = '';
  state.view = sorted();
  const upTo = Math.max(state.shown, ROWS);
  state.shown = 0;
  appendRows(upTo, focused);
  fillWindow();
  $('empty').hidden = state.entries.length > 0;
  $('files').querySelector('thead').hidden = state.entries.length === 0;
  for (const b of document.querySelectorAll('.sort')) {
    if (b.dataset.sort === state.sort.key) b.dataset.dir = state.sort.dir; else delete b.dataset.dir;
  }
  renderGallery(state.view);
  renderSelection();
}

// fillWindow makes rows until the last one is well below the window's
// bottom (or there are no more). A hidden table (search results, the
// gallery) has no bottom to reach: it gets rows when it shows again.
function fillWindow() {
  const tbody = $('rows');
  if (!tbody.offsetParent) return;
  while (state.shown < state.view.length) {
    const last = tbody.lastElementChild;
    if (last && last.getBoundingClientRect().bottom > window.innerHeight + 800) return;
    appendRows(state.shown + ROWS);
  }
}

// appendRows makes the rows of state.view up to upTo (exclusive); false
// when every row is made already.
function appendRows(upTo, focused) {
  const tbody = $('rows');
  const end = Math.min(upTo, state.view.length);
  if (state.shown >= end) return false;
  for (const n of state.view.slice(state.shown, end)) {
    const tr = document.createElement('tr');
    tr.tabIndex = 0;
    tr.dataset.path = n.path;
    tr.dataset.name = n.name;
    tr.dataset.dir = n.isDir ? '1' : '';
    if (state.selected.has(n.path)) tr.classList.add('sel');
    const tdc = document.createElement('td');
    tdc.className = 'c-check';
    const cb = document.createElement('input');
    cb.type = 'checkbox';
    cb.checked = state.selected.has(n.path);
    cb.tabIndex = -1;
    cb.setAttribute('aria-label', 'Select ' + n.name);
    cb.onclick = (e) => { e.stopPropagation(); toggle(n.path, cb.checked); };
    tdc.appendChild(cb);
    const tdn = document.createElement('td');
    tdn.className = 'c-name';
    const wrap = document.createElement('div');
    wrap.className = 'name';
    wrap.appendChild(thumbIcon(n, icon(typeOf(n.name, n.isDir)), 64));
    const a = document.createElement('a');
    a.href = n.isDir ? '#' + encodeURIComponent(n.path) : '/dav' + enc(n.path);
    a.textContent = n.name;
    a.title = n.name;
    a.tabIndex = -1;
    a.onclick = (e) => { e.preventDefault(); open(n); };
    wrap.appendChild(a);
    const sh = state.shared.get(n.path);
    if (sh) {
      const badge = document.createElement('span');
      badge.className = 'shared-badge';
      badge.textContent = 'Shared by ' + sh.owner + (sh.write ? '' : ' · read-only');
      badge.title = 'Shared with me by ' + sh.owner + (sh.write ? '; you may change it' : '; read-only');
      wrap.appendChild(badge);
    }
    tdn.appendChild(wrap);
    const tds = document.createElement('td');
    tds.className = 'c-size';
    tds.textContent = n.isDir ? '—' : fmtBytes(n.size);
    const tdm = document.createElement('td');
    tdm.className = 'c-mod';
    tdm.textContent = fmtDate(n.mtime);
    tr.append(tdc, tdn, tds, tdm);
    tr.onclick = (e) => {
      if (e.ctrlKey || e.metaKey) toggle(n.path, !state.selected.has(n.path));
      else { state.selected.clear(); toggle(n.path, true); }
    };
    tr.ondblclick = () => open(n);
    tbody.appendChild(tr);
    if (focused === n.path) tr.focus();
  }
  state.shown = end;
  return true;
}

function toggle(path, on) {
  if (on) state.selected.add(path); else state.selected.delete(path);
  for (const tr of $('rows').children) {
    const s = state.selected.has(tr.dataset.path);
    tr.classList.toggle('sel', s);
    tr.querySelector('input').checked = s;
  }
  renderSelection();
}

function renderSelection() {
  const n = state.selected.size;
  $('selbar').hidden = n === 0;
  $('sel-count').textContent = n === 1 ? '1 selected' : n + ' selected';
  $('act-rename').hidden = n !== 1;
  // A folder has no versions: its content is its entries.
  const one = n === 1 ? selectedNodes()[0] : null;
  $('act-versions').hidden = !one || one.isDir;
  // Another user's share is theirs to share.
  const notMine = selectedNodes().some(e => state.shared.has(e.path));
  $('act-share').hidden = n !== 1 || notMine;
  $('act-share-user').hidden = n !== 1 || notMine;
  $('check-all').checked = n > 0 && n === state.entries.length;
  $('check-all').indeterminate = n > 0 && n < state.entries.length;
}

function selectedNodes() { return state.entries.filter(e => state.selected.has(e.path)); }

export function open(n) {
  if (n.isDir) return go(n.path);
  const t = typeOf(n.name, false);
  if (t === 'image' || t === 'text' || t === 'code') return preview(n, t);
  download(n);
}

function download(n) {
  const a = document.createElement('a');
  a.href = n.isDir ? '/web/zip?path=' + encodeURIComponent(n.path) : '/dav' + enc(n.path);
  a.download = n.isDir ? n.name + '.zip' : n.name;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

const TEXT_PREVIEW_MAX = 1 << 20;
async function preview(n, t) {
  const dlg = $('preview');
  const body = $('preview-body');
  body.textContent = '';
  $('preview-name').textContent = n.name;
  $('preview-dl').href = '/dav' + enc(n.path);
  $('preview-dl').download = n.name;
  if (t === 'image') {
    const img = document.createElement('img');
    img.src = '/dav' + enc(n.path);
    img.alt = n.name;
    body.appendChild(img);
  } else {
    const pre = document.createElement('pre');
    pre.textContent = 'Loading…';
    body.appendChild(pre);
    dlg.showModal();
    try {
      const r = await fetch('/dav' + enc(n.path), { headers: { Range: 'bytes=0-' + (TEXT_PREVIEW_MAX - 1), 'X-Netdisk-Web': '1' } });
      if (!r.ok) throw new Error('HTTP ' + r.status);
      let text = await r.text();
      if (n.size > TEXT_PREVIEW_MAX) text += '\n\n… (preview shows the first ' + fmtBytes(TEXT_PREVIEW_MAX) + ')';
      pre.textContent = text;
    } catch (e) {
      pre.textContent = 'Cannot load the preview: ' + e.message;
    }
  }
  if (!dlg.open) dlg.showModal();
}

// ---------- dialogs ----------
export function dialog({ title, body, ok = 'OK', danger = false, input, onOk }) {
  const dlg = $('dlg');
  $('dlg-title').textContent = title;
  const b = $('dlg-body');
  b.textContent = '';
  if (typeof body === 'string') { const p = document.createElement('p'); p.textContent = body; b.appendChild(p); } else if (body) b.appendChild(body);
  let field = null;
  if (input !== undefined) {
    field = document.createElement('input');
    field.type = 'text';
    field.id = 'dlg-input';
    field.value = input.value || '';
    field.setAttribute('aria-label', input.label || title);
    field.autocomplete = 'off';
    b.appendChild(field);
  }
  $('dlg-error').textContent = '';
  const okb = $('dlg-ok');
  okb.textContent = ok;
  okb.className = 'btn btn-primary' + (danger ? ' btn-danger' : '');
  $('dlg-form').onsubmit = async (e) => {
    e.preventDefault();
    okb.disabled = true;
    try {
      await onOk(field ? field.value.trim() : undefined);
      dlg.close();
    } catch (err) {
      $('dlg-error').textContent = err.message;
    } finally {
      okb.disabled = false;
    }
  };
  $('dlg-cancel').onclick = () => dlg.close();
  dlg.showModal();
  if (field) {
    field.focus();
    const dot = field.value.lastIndexOf('.');
    field.setSelectionRange(0, input.selectName && dot > 0 ? dot : field.value.length);
  } else okb.focus();
}

function checkName(name) {
  if (!name) throw new Error('Enter a name.');
  if (name.includes('/') || name === '.' || name === '..') throw new Error('A name cannot contain "/" or be "." or "..".');
}

function mkdir() {
  dialog({ title: 'New folder', ok: 'Create', input: { value: 'New folder', label: 'Folder name' }, onOk: async (name) => {
    checkName(name);
    await api('POST', '/api/v1/fs/mkdir', { path: join(state.cwd, name) });
    await refresh();
    toast('Folder created');
  } });
}

// shareWithUser opens the Share-with-user dialog for the one selected item:
// a user name, or group:NAME, and whether they may change it.
function shareWithUser() {
  const [n] = selectedNodes();
  if (!n) return;
  const body = document.createElement('div');
  const p = document.createElement('p');
  p.textContent = 'Share "' + n.name + '" with a user (or group:NAME). It appears in their files.';
  const lab = document.createElement('label');
  lab.className = 'check';
  const cb = document.createElement('input');
  cb.type = 'checkbox';
  cb.id = 'share-write';
  lab.append(cb, document.createTextNode(' Allow changes'));
  body.append(p, lab);
  dialog({ title: 'Share', ok: 'Share', body, input: { value: '', label: 'User name' }, onOk: async (who) => {
    if (!who) throw new Error('Enter a user name.');
    const req = { path: n.path, write: cb.checked };
    if (who.startsWith('group:')) req.group = who.slice(6); else req.user = who;
    const s = await api('POST', '/api/v1/user-shares', req);
    toast('Shared with ' + (req.group ? 'group ' : '') + s.to + (s.write ? ' (can change it)' : ' (read-only)'));
  } });
}

function rename() {
  const [n] = selectedNodes();
  if (!n) return;
  dialog({ title: 'Rename', ok: 'Rename', input: { value: n.name, label: 'New name', selectName: !n.isDir }, onOk: async (name) => {
    checkName(name);
    if (name === n.name) return;
    await api('POST', '/api/v1/fs/move', { from: n.path, to: join(parent(n.path), name) });
    await refresh();
  } });
}

// share makes a public link to the one selected item (docs/API.md "Public
// links") with the options asked, then shows its URL, which the server
// never shows again, with a button that copies it.
function share() {
  const [n] = selectedNodes();
  if (!n) return;
  const body = document.createElement('div');
  const row = (id, label, el) => {
    const l = document.createElement('label');
    l.htmlFor = id;
    l.textContent = label;
    el.id = id;
    body.append(l, el);
    return el;
  };
  const input = (type) => { const i = document.createElement('input'); i.type = type; return i; };
  const pw = row('share-password', 'Password (optional)', input('password'));
  pw.autocomplete = 'new-password';
  const exp = row('share-expires', 'Last day (optional)', input('date'));
  const max = row('share-max', 'Maximum downloads (optional)', input('number'));
  max.min = '1';
  let perm = null;
  if (n.isDir) {
    perm = document.createElement('select');
    for (const [v, t] of [['read', 'View and download'], ['upload', 'Upload only (file drop)'], ['read-write', 'View, upload, rename and delete']]) {
      const o = document.createElement('option');
      o.value = v;
      o.textContent = t;
      perm.appendChild(o);
    }
    row('share-perm', 'Anyone with the link can', perm);
  }
  dialog({ title: `A public link to “${n.name}”`, body, ok: 'Create link', onOk: async () => {
    const req = { path: n.path };
    if (pw.value) req.password = pw.value;
    if (exp.value) {
      // Through the day chosen, in the browser's time zone.
      const d = new Date(exp.value + 'T00:00:00');
      d.setDate(d.getDate() + 1);
      req.expires = d.toISOString();
    }
    if (max.value) req.maxDownloads = parseInt(max.value, 10);
    if (perm) req.permission = perm.value;
    const l = await api('POST', '/api/v1/links', req);
    // After this dialog has closed: the next one reuses it.
    setTimeout(() => showLink(location.origin + l.url), 0);
  } });
  pw.focus();
}

function showLink(url) {
  const body = document.createElement('div');
  const p = document.createElement('p');
  p.textContent = 'Anyone with this link can open it. It is shown this once: copy it now.';
  const field = document.createElement('input');
  field.type = 'text';
  field.readOnly = true;
  field.id = 'share-url';
  field.value = url;
  field.setAttribute('aria-label', 'Link');
  const copy = document.createElement('button');
  copy.type = 'button';
  copy.className = 'btn';
  copy.id = 'share-copy';
  copy.textContent = 'Copy link';
  copy.onclick = async () => {
    try {
      await navigator.clipboard.writeText(url);
    } catch (_) {
      // No clipboard permission (plain HTTP off loopback): the old way.
      field.select();
      document.execCommand('copy');
    }
    copy.textContent = 'Copied';
  };
  body.append(p, field, copy);
  dialog({ title: 'Link created', body, ok: 'Done', onOk: async () => {} });
  field.select();
}

function move() {
  const nodes = selectedNodes();
  if (!nodes.length) return;
  dialog({ title: nodes.length === 1 ? `Move “${nodes[0].name}”` : `Move ${nodes.length} items`, ok: 'Move',
    body: 'Destination folder (it is created if missing):', input: { value: state.cwd, label: 'Destination folder' },
    onOk: async (dest) => {
      if (!dest.startsWith('/')) dest = '/' + dest;
      dest = dest.replace(/\/+$/, '') || '/';
      for (const n of nodes) {
        if (dest === n.path || dest.startsWith(n.path + '/')) throw new Error(`“${n.name}” cannot move into itself.`);
      }
      if (dest !== '/') await api('POST', '/api/v1/fs/mkdir', { path: dest, parents: true });
      for (const n of nodes) {
        if (parent(n.path) === dest) continue; // already there
        await api('POST', '/api/v1/fs/move', { from: n.path, to: join(dest, n.name) });
      }
      await refresh();
      toast(nodes.length === 1 ? 'Moved' : `Moved ${nodes.length} items`);
    } });
}

function remove() {
  const nodes = selectedNodes();
  if (!nodes.length) return;
  const body = document.createElement('div');
  const p = document.createElement('p');
  // A delete goes to the owner's trash (the Trash view, `netdisk trash restore`, the API).
  const link = document.createElement('a');
  link.href = '#';
  link.dataset.openTrash = '';
  link.textContent = 'trash';
  p.append((nodes.some(n => n.isDir) ? 'Folders go with everything in them. ' : '') + 'Deleted items wait in your ', link, ', where they can be restored, until it is emptied.');
  const ul = document.createElement('ul');
  for (const n of nodes.slice(0, 8)) { const li = document.createElement('li'); li.textContent = n.name; ul.appendChild(li); }
  if (nodes.length > 8) { const li = document.createElement('li'); li.textContent = `and ${nodes.length - 8} more`; ul.appendChild(li); }
  if (nodes.length > 1) body.append(ul);
  body.append(p);
  dialog({ title: nodes.length === 1 ? `Delete “${nodes[0].name}”?` : `Delete ${nodes.length} items?`, ok: 'Delete', danger: true, body,
    onOk: async () => {
      for (const n of nodes) await api('DELETE', '/api/v1/fs?path=' + encodeURIComponent(n.path) + '&recursive=true');
      await refresh();
      refreshQuota();
      toast(nodes.length === 1 ? 'Deleted' : `Deleted ${nodes.length} items`);
    } });
}

// ---------- quota ----------
export async function refreshQuota() {
  try {
    const q = await api('GET', '/api/v1/quota');
    state.quota = q;
    const total = q.total;
    const fin = q.finished, up = q.uploading;
    const bar = document.querySelector('.quota-bar');
    if (total > 0) {
      bar.hidden = false;
      document.querySelector('.q-fin').style.width = Math.min(100, fin / total * 100) + '%';
      document.querySelector('.q-up').style.width = Math.min(100 - Math.min(100, fin / total * 100), up / total * 100) + '%';
      bar.setAttribute('aria-valuenow', Math.round((fin + up) / total * 100));
      $('quota-text').textContent = `${fmtBytes(fin)} of ${fmtBytes(total)} used` + (up ? ` · ${fmtBytes(up)} uploading` : '') + ` · ${fmtBytes(Math.max(0, q.free))} free`;
    } else {
      // No limit: a bar would only look full or empty; the text says it all.
      bar.hidden = true;
      $('quota-text').textContent = `${fmtBytes(fin)} used` + (up ? ` · ${fmtBytes(up)} uploading` : '') + ' · no limit';
    }
  } catch (_) { /* the bar keeps its last figures */ }
}

// ---------- drag and drop ----------
async function filesFromDrop(dt) {
  const out = [];
  const items = dt.items ? [...dt.items] : [];
  const entries = items.map(i => i.webkitGetAsEntry && i.webkitGetAsEntry()).filter(Boolean);
  if (!entries.length) {
    for (const f of dt.files) out.push({ file: f, rel: f.name });
    return out;
  }
  const walk = async (entry, prefix) => {
    if (entry.isFile) {
      const f = await new Promise((res, rej) => entry.file(res, rej));
      out.push({ file: f, rel: prefix + f.name });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
        if (!batch.length) break;
        for (const e of batch) await walk(e, prefix + entry.name + '/');
      }
      if (!out.some(x => x.rel.startsWith(prefix + entry.name + '/'))) out.push({ dir: prefix + entry.name });
    }
  };
  for (const e of entries) await walk(e, '');
  return out;
}

async function enqueue(list) {
  const dir = state.cwd;
  for (const x of list) {
    if (x.dir) { await api('POST', '/api/v1/fs/mkdir', { path: join(dir, x.dir), parents: true }).catch((e) => toast(e.message, true)); continue; }
    uploads.add(x.file, join(dir, x.rel));
  }
  if (list.some(x => x.dir)) refresh();
}

function setupDrop() {
  const zone = document.body;
  let depth = 0;
  zone.addEventListener('dragenter', (e) => { if (!state.user || !hasFiles(e)) return; e.preventDefault(); depth++; $('app').classList.add('dragging'); });
  zone.addEventListener('dragover', (e) => { if (!state.user || !hasFiles(e)) return; e.preventDefault(); e.dataTransfer.dropEffect = 'copy'; });
  zone.addEventListener('dragleave', () => { if (--depth <= 0) { depth = 0; $('app').classList.remove('dragging'); } });
  zone.addEventListener('drop', async (e) => {
    if (!state.user) return;
    e.preventDefault();
    depth = 0;
    $('app').classList.remove('dragging');
    enqueue(await filesFromDrop(e.dataTransfer));
  });
}
const hasFiles = (e) => e.dataTransfer && [...(e.dataTransfer.types || [])].includes('Files');

// ---------- keyboard ----------
function setupKeys() {
  window.addEventListener('scroll', fillWindow, { passive: true });
  window.addEventListener('resize', fillWindow);
  document.addEventListener('keydown', (e) => {
    // In the trash the listing's keys have nothing to act on.
    if (!state.user || document.querySelector('dialog[open]') || !$('trash-view').hidden) return;
    const tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea') return;
    const rows = [...$('rows').children];
    const tr = e.target.closest && e.target.closest('tr[data-path]');
    const node = tr && state.entries.find(n => n.path === tr.dataset.path);
    const idx = tr ? rows.indexOf(tr) : -1;
    switch (e.key) {
      case 'ArrowDown': case 'j':
        e.preventDefault();
        if (idx === rows.length - 1 && appendRows(state.shown + ROWS)) rows.push(...[...$('rows').children].slice(rows.length));
        (rows[idx + 1] || rows[0])?.focus(); break;
      case 'ArrowUp': case 'k':
        e.preventDefault(); (rows[idx - 1] || rows[rows.length - 1])?.focus(); break;
      case 'Enter':
        if (node) { e.preventDefault(); open(node); } break;
      case ' ':
        if (node) { e.preventDefault(); toggle(node.path, !state.selected.has(node.path)); } break;
      case 'Backspace':
        if (state.cwd !== '/') { e.preventDefault(); go(parent(state.cwd)); } break;
      case 'Delete':
        if (node && !state.selected.size) toggle(node.path, true);
        remove(); break;
      case 'F2':
        if (node) { state.selected.clear(); toggle(node.path, true); }
        rename(); break;
      case 'v': case 'V':
        // A file's versions (versions.js owns the panel; a folder has none).
        if (node && !node.isDir && !e.ctrlKey && !e.metaKey) { e.preventDefault(); state.selected.clear(); toggle(node.path, true); $('act-versions').click(); } break;
      case 'a':
        if (e.ctrlKey || e.metaKey) { e.preventDefault(); state.entries.forEach(n => state.selected.add(n.path)); render(); } break;
      case 'Escape':
        state.selected.clear(); render(); break;
      case 'n': case 'N':
        if (!e.ctrlKey && !e.metaKey) { e.preventDefault(); mkdir(); } break;
      case 'u': case 'U':
        if (!e.ctrlKey && !e.metaKey) { e.preventDefault(); $('pick-files').click(); } break;
    }
  });
}

// ---------- start ----------
function wire() {
  $('signin-form').addEventListener('submit', signin);
  $('signout').onclick = signout;
  $('passwd').onclick = changePassword;
  $('btn-mkdir').onclick = mkdir;
  $('act-rename').onclick = rename;
  $('act-share').onclick = share;
  $('act-share-user').onclick = shareWithUser;
  $('act-move').onclick = move;
  $('act-delete').onclick = remove;
  $('act-download').onclick = () => selectedNodes().forEach(download);
  $('act-clear').onclick = () => { state.selected.clear(); render(); };
  $('check-all').onchange = (e) => { state.selected.clear(); if (e.target.checked) state.entries.forEach(n => state.selected.add(n.path)); render(); };
  for (const b of document.querySelectorAll('.sort')) {
    b.onclick = () => {
      const k = b.dataset.sort;
      state.sort = { key: k, dir: state.sort.key === k && state.sort.dir === 'asc' ? 'desc' : 'asc' };
      render();
    };
  }
  for (const id of ['btn-upload', 'btn-upload-dir']) {
    $(id).addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); $(id).querySelector('input').click(); } });
  }
  $('pick-files').onchange = (e) => { enqueue([...e.target.files].map(f => ({ file: f, rel: f.name }))); e.target.value = ''; };
  $('pick-dir').onchange = (e) => { enqueue([...e.target.files].map(f => ({ file: f, rel: f.webkitRelativePath || f.name }))); e.target.value = ''; };
  $('preview-close').onclick = () => $('preview').close();
  window.addEventListener('hashchange', () => {
    const p = decodeURIComponent(location.hash.slice(1) || '/');
    if (state.user && p !== state.cwd) go(p);
  });
  setupGallery({ state, open, icon, typeOf }, render);
  setupDrop();
  setupKeys();
  // Many files finishing together refresh the listing once.
  let refreshTimer = 0;
  uploads.onFinished = () => {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => { refresh(); refreshQuota(); }, 150);
  };
  uploads.onStarted = () => refreshQuota();
  uploads.onSignedOut = () => { if (state.user) sessionEnded(); };
}

async function boot() {
  wire();
  try {
    const r = await fetch('/web/session', { credentials: 'same-origin' });
    if (r.ok) return startApp(await r.json());
  } catch (_) { /* fall through to sign-in */ }
  showSignin('');
}

boot();
