// The writing part of a public link's page (server/public.go): a file drop
// (an upload-only link: the page shows only its upload area), or a
// read-write folder (the listing gains upload, Rename and Delete).
//
// Uploads run the drive's upload Worker (upload-worker.js) in link mode:
// the link's own endpoints under /s/TOKEN/api/, every chunk sent, resumable.
// What this browser sent, and what it left unfinished (with its session's
// id, the only way back to it), is kept in localStorage per link: the page
// never shows what else is in a drop's folder. Every name is someone's
// input and is shown through textContent only.
import { fmtBytes } from './size.js';

const $ = (id) => document.getElementById(id);
const root = $('drop');
const base = root.dataset.base;
const dir = root.dataset.dir || '';
const rw = root.dataset.mode === 'rw';
const KEY = 'netdisk.link:' + base;
const KEEP = 200; // sent files remembered per link

function load() {
  try {
    const v = JSON.parse(localStorage.getItem(KEY) || '{}');
    return { sent: v.sent || [], pending: v.pending || [] };
  } catch (_) { return { sent: [], pending: [] }; }
}
function save(st) {
  st.sent = st.sent.slice(-KEEP);
  try { localStorage.setItem(KEY, JSON.stringify(st)); } catch (_) { /* private mode: the list lasts for this visit */ }
}
const sameFile = (p, f) => p.name === f.name && p.size === f.size && p.lastModified === f.lastModified && p.dir === dir;

function say(text) {
  const m = $('drop-msg');
  m.textContent = text;
  m.hidden = !text;
}

const worker = new Worker('/static/upload-worker.js');
worker.postMessage({ type: 'link', base });
const rows = new Map();
let next = 1;

function row(name, size) {
  const li = document.createElement('li');
  const n = document.createElement('span');
  n.className = 'up-name';
  n.textContent = name;
  const btns = document.createElement('span');
  const bar = document.createElement('div');
  bar.className = 'bar';
  bar.appendChild(document.createElement('span'));
  const meta = document.createElement('span');
  meta.className = 'up-meta';
  li.append(n, btns, bar, meta);
  li.dataset.name = name;
  $('drop-empty').hidden = true;
  $('drop-list').prepend(li);
  return { li, btns, bar, meta, name, size, sent: 0 };
}

function button(r, label, fn) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'small';
  b.textContent = label;
  b.setAttribute('aria-label', label + ' ' + r.name);
  b.onclick = fn;
  r.btns.appendChild(b);
}

function show(r, state, text) {
  r.li.dataset.state = state;
  r.meta.textContent = text;
  r.btns.textContent = '';
  const pct = state === 'done' ? 100 : r.size ? Math.min(100, r.sent / r.size * 100) : 0;
  r.bar.firstChild.style.width = pct + '%';
  if (state === 'running' || state === 'queued') button(r, 'Cancel', () => worker.postMessage({ type: 'cancel', id: r.id }));
  if (state === 'error') button(r, 'Retry', () => { say(''); show(r, 'queued', 'Waiting'); worker.postMessage({ type: 'retry', id: r.id }); });
}

function add(file) {
  const st = load();
  const p = st.pending.find(q => sameFile(q, file));
  const r = row(file.name, file.size);
  r.id = 'u' + next++;
  r.file = file;
  rows.set(r.id, r);
  show(r, 'queued', 'Waiting · ' + fmtBytes(file.size));
  worker.postMessage({ type: 'add', id: r.id, file, path: file.name, dir, resume: p ? p.uploadId : '' });
}

function settled() {
  if (!rw) return;
  // A read-write page lists the folder: once nothing is going on, the
  // listing is read again (the rows of this browser's uploads stay, kept).
  for (const r of rows.values()) if (!['done', 'error', 'cancelled'].includes(r.li.dataset.state)) return;
  if ([...rows.values()].some(r => r.li.dataset.state === 'done')) location.reload();
}

worker.onmessage = (ev) => {
  const m = ev.data;
  const r = rows.get(m.id);
  if (!r) return;
  const st = load();
  switch (m.type) {
    case 'state':
      show(r, m.state, m.state === 'running' ? 'Sending…' : m.state === 'queued' ? 'Waiting' : m.state);
      break;
    case 'session':
      st.pending = st.pending.filter(q => !sameFile(q, r.file));
      st.pending.push({ name: r.file.name, size: r.file.size, lastModified: r.file.lastModified, dir, uploadId: m.uploadId });
      save(st);
      break;
    case 'progress':
      r.sent = m.sent + m.skipped;
      r.bar.firstChild.style.width = (r.size ? Math.min(100, r.sent / r.size * 100) : 0) + '%';
      r.meta.textContent = 'Sent ' + fmtBytes(r.sent) + ' of ' + fmtBytes(r.size) + (m.resumed ? ' · resumed' : '');
      break;
    case 'done':
      st.pending = st.pending.filter(q => !sameFile(q, r.file));
      st.sent.push({ name: r.name, size: r.size, at: Date.now(), dir });
      save(st);
      show(r, 'done', 'Sent · ' + fmtBytes(r.size));
      settled();
      break;
    case 'error':
      show(r, 'error', m.message);
      if (m.code === 'quota_exceeded') say(m.message);
      settled();
      break;
    case 'cancelled':
      st.pending = st.pending.filter(q => !sameFile(q, r.file));
      save(st);
      show(r, 'cancelled', 'Cancelled');
      settled();
      break;
  }
};
worker.onerror = (e) => say('The upload engine failed: ' + (e.message || 'unknown error'));

// What this browser sent before (here, on this link) and left unfinished.
{
  const st = load();
  for (const s of st.sent.filter(s => (s.dir || '') === dir)) show(row(s.name, s.size), 'done', 'Sent · ' + fmtBytes(s.size) + ' · ' + new Date(s.at).toLocaleString());
  for (const p of st.pending.filter(p => p.dir === dir)) {
    const r = row(p.name, p.size);
    show(r, 'interrupted', 'Interrupted · choose the same file again to resume');
  }
}

function take(files) {
  say('');
  for (const f of files) add(f);
}

const pick = $('drop-pick');
pick.onchange = () => { take([...pick.files]); pick.value = ''; };
const zone = $('drop-zone');
zone.addEventListener('dragover', (e) => { e.preventDefault(); zone.classList.add('over'); });
zone.addEventListener('dragleave', () => zone.classList.remove('over'));
zone.addEventListener('drop', (e) => {
  e.preventDefault();
  zone.classList.remove('over');
  const files = [];
  let folders = 0;
  for (const it of e.dataTransfer.items || []) {
    const en = it.webkitGetAsEntry && it.webkitGetAsEntry();
    if (en && en.isDirectory) { folders++; continue; }
    const f = it.getAsFile();
    if (f) files.push(f);
  }
  take(files);
  if (folders) say('Folders cannot be sent here: open them and send the files inside.');
});

// A read-write folder: Rename and Delete on each row of the listing.
async function post(what, body) {
  const r = await fetch(base + '/api/' + what, {
    method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Netdisk-Web': '1' }, body: JSON.stringify(body),
  });
  if (r.ok) return true;
  let msg = 'HTTP ' + r.status;
  try { msg = (await r.json()).error || msg; } catch (_) { /* not JSON */ }
  say(msg.charAt(0).toUpperCase() + msg.slice(1) + '.');
  return false;
}

if (rw) {
  for (const tr of document.querySelectorAll('tr[data-path]')) {
    const cell = tr.querySelector('td.name');
    const acts = tr.querySelector('td.acts');
    const keep = [...cell.childNodes];
    const restore = () => { cell.replaceChildren(...keep); acts.hidden = false; };
    tr.querySelector('button.rename').onclick = () => {
      const f = document.createElement('form');
      f.className = 'rename';
      const inp = document.createElement('input');
      inp.value = tr.dataset.name;
      inp.setAttribute('aria-label', 'New name');
      const ok = document.createElement('button');
      ok.className = 'small'; ok.type = 'submit'; ok.textContent = 'Save';
      const no = document.createElement('button');
      no.className = 'small'; no.type = 'button'; no.textContent = 'Cancel';
      no.onclick = restore;
      f.append(inp, ok, no);
      f.onsubmit = async (e) => {
        e.preventDefault();
        if (inp.value === tr.dataset.name) { restore(); return; }
        if (await post('rename', { path: tr.dataset.path, name: inp.value })) location.reload();
      };
      acts.hidden = true;
      cell.replaceChildren(f);
      inp.focus();
      inp.select();
    };
    tr.querySelector('button.delete').onclick = () => {
      const q = document.createElement('span');
      q.textContent = 'Delete ' + tr.dataset.name + '? ';
      const yes = document.createElement('button');
      yes.className = 'small confirm'; yes.type = 'button'; yes.textContent = 'Delete';
      yes.onclick = async () => { if (await post('delete', { path: tr.dataset.path })) location.reload(); };
      const no = document.createElement('button');
      no.className = 'small'; no.type = 'button'; no.textContent = 'Keep';
      no.onclick = restore;
      acts.hidden = true;
      cell.replaceChildren(q, yes, no);
    };
  }
}

// Every handler is in place: the page's controls work from here on (a
// module runs after the page is shown, so a click before this is lost).
root.dataset.ready = '1';
