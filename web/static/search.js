// The search box: a name search of the whole drive (GET /api/v1/search)
// whose hits replace the folder listing until the search is cleared (Esc,
// the field's ✕, or an empty field). Hits are newest first, each with its
// folder; "More results" fetches the next page by its cursor.
import { api, go, open, icon, typeOf, fmtBytes, fmtDate, toast, state } from './app.js';

const $ = (id) => document.getElementById(id);
const PAGE = 50;
const DEBOUNCE_MS = 250;

// seq numbers the searches: an answer to an older one (typing overtook it)
// is dropped, so the list always shows the query in the field.
let seq = 0;
let timer = 0;
let cursor = '';
let query = '';

const parent = (p) => p.slice(0, p.lastIndexOf('/')) || '/';

export function searching() { return !$('search-results').hidden; }

// run starts a search of q (more: the next page of the current one).
async function run(q, more) {
  const my = ++seq;
  const glob = /[*?]/.test(q); // as `netdisk find`: a wildcard makes it a glob
  let url = '/api/v1/search?q=' + encodeURIComponent(q) + '&limit=' + PAGE + (glob ? '&glob=1' : '');
  if (more) url += '&cursor=' + encodeURIComponent(cursor);
  show(true);
  $('search-status').textContent = more ? '' : 'Searching…';
  $('search-more').disabled = true;
  let r;
  try {
    r = await api('GET', url);
  } catch (e) {
    if (my !== seq) return;
    $('search-status').textContent = '';
    if (e.status !== 401) toast(e.message, true);
    return;
  }
  if (my !== seq) return;
  query = q;
  cursor = r.next || '';
  const list = $('search-list');
  if (!more) list.textContent = '';
  for (const n of r.hits || []) list.appendChild(row(n));
  const count = list.children.length;
  $('search-status').textContent = count === 0 ? `Nothing named like “${q}”.`
    : `${count}${cursor ? '+' : ''} result${count === 1 && !cursor ? '' : 's'} for “${q}”`;
  $('search-more').hidden = !cursor;
  $('search-more').disabled = false;
}

// row is one hit: icon and name (opens it: a folder's listing, a file's
// preview or download), its folder (opens that folder), size and date.
function row(n) {
  const li = document.createElement('li');
  li.className = 'hit';
  li.dataset.path = n.path;
  li.appendChild(icon(typeOf(n.name, n.isDir)));
  const txt = document.createElement('div');
  txt.className = 'hit-text';
  const a = document.createElement('a');
  a.className = 'hit-name';
  a.href = n.isDir ? '#' + encodeURIComponent(n.path) : '#';
  a.textContent = n.name;
  a.title = n.path;
  a.onclick = (e) => { e.preventDefault(); if (n.isDir) close(n.path); else open(n); };
  const dir = document.createElement('a');
  dir.className = 'hit-dir';
  const folder = parent(n.path);
  dir.href = '#' + encodeURIComponent(folder);
  dir.textContent = folder === '/' ? 'My drive' : 'My drive' + folder.replaceAll('/', ' › ');
  dir.title = 'Open ' + folder;
  dir.onclick = (e) => { e.preventDefault(); close(folder); };
  txt.append(a, dir);
  const meta = document.createElement('span');
  meta.className = 'hit-meta';
  meta.textContent = (n.isDir ? '' : fmtBytes(n.size) + ' · ') + fmtDate(n.mtime);
  li.append(txt, meta);
  return li;
}

function show(on) {
  $('search-results').hidden = !on;
  document.querySelector('.table-wrap').hidden = on;
  if (on) {
    // The listing's selection is out of sight: keys like Delete must not
    // act on it.
    state.selected.clear();
    $('selbar').hidden = true;
  }
}

// close ends the search and shows the folder dest (by default the one the
// search started from, as it was).
function close(dest) {
  reset();
  go(dest || state.cwd);
}

function reset() {
  seq++;
  clearTimeout(timer);
  $('search-q').value = '';
  $('search-list').textContent = '';
  cursor = '';
  query = '';
  show(false);
}

function wire() {
  const field = $('search-q');
  field.addEventListener('input', () => {
    clearTimeout(timer);
    const q = field.value.trim();
    if (!q) { if (searching()) close(); return; }
    timer = setTimeout(() => run(q, false), DEBOUNCE_MS);
  });
  $('search').addEventListener('submit', (e) => {
    e.preventDefault();
    clearTimeout(timer);
    const q = field.value.trim();
    if (q && q !== query) run(q, false);
  });
  field.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.preventDefault(); e.stopPropagation(); close(); field.blur(); }
  });
  $('search-more').onclick = () => run(query, true);
  $('search-close').onclick = () => close();
  // A folder chosen in the path bar ends the search too.
  $('crumbs').addEventListener('click', () => { if (searching()) reset(); }, true);
  // "/" focuses the field, as in most web apps with a search box.
  document.addEventListener('keydown', (e) => {
    if (e.key !== '/' || !state.user || document.querySelector('dialog[open]')) return;
    const tag = (e.target.tagName || '').toLowerCase();
    if (tag === 'input' || tag === 'textarea') return;
    e.preventDefault();
    field.focus();
  });
}

wire();
