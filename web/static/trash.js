// The Trash view: what the user deleted (GET /api/v1/trash), newest first,
// a page at a time, each item with where it was, when it went and its size;
// Restore puts it back (under a "(restored)" name when its path is taken,
// which the view says), Delete forever and Empty trash ask first. The view
// takes the place of the folder listing until "My drive" is chosen again.
import { api, go, icon, typeOf, fmtBytes, fmtDate, toast, state, dialog, refreshQuota } from './app.js';

const $ = (id) => document.getElementById(id);
const PAGE = 50;

// seq numbers the loads: an answer to an older one (the view was left or
// reloaded meanwhile) is dropped, so pages never mix.
let seq = 0;
let next = 0; // the API's before for the next page; 0: no more

const parent = (p) => p.slice(0, p.lastIndexOf('/')) || '/';
const base = (p) => p.slice(p.lastIndexOf('/') + 1);
// where names a folder as the path bar and search results do.
const where = (dir) => (dir === '/' ? 'My drive' : 'My drive' + dir.replaceAll('/', ' › '));

export function inTrash() { return !$('trash-view').hidden; }

export function openTrash() {
  // The listing's selection is out of sight: keys and buttons must not act on it.
  state.selected.clear();
  $('app').classList.add('trash-on');
  $('trash-view').hidden = false;
  $('btn-trash').setAttribute('aria-pressed', 'true');
  status('');
  load(false);
  $('trash-title').focus();
}

export function closeTrash() {
  if (!inTrash()) return;
  seq++;
  $('app').classList.remove('trash-on');
  $('trash-view').hidden = true;
  $('btn-trash').setAttribute('aria-pressed', 'false');
  $('trash-list').textContent = '';
}

async function load(more) {
  const my = ++seq;
  let url = '/api/v1/trash?limit=' + PAGE;
  if (more) url += '&before=' + next;
  $('trash-more').disabled = true;
  let r;
  try {
    r = await api('GET', url);
  } catch (e) {
    if (my !== seq) return;
    if (e.status !== 401) toast(e.message, true);
    return;
  }
  if (my !== seq) return;
  next = r.next || 0;
  const list = $('trash-list');
  if (!more) list.textContent = '';
  for (const it of r.items || []) list.appendChild(row(it));
  $('trash-more').hidden = !next;
  $('trash-more').disabled = false;
  shown();
}

// shown updates what depends on the rows shown: the empty state, the
// Empty button, and a page emptied by restores while more wait.
function shown() {
  const n = $('trash-list').children.length;
  $('trash-none').hidden = n > 0 || !!next;
  $('trash-empty').disabled = n === 0 && !next;
  if (n === 0 && next) load(false);
}

function status(msg, folder) {
  const s = $('trash-status');
  s.textContent = msg;
  if (folder !== undefined) {
    const a = document.createElement('a');
    a.href = '#' + encodeURIComponent(folder);
    a.textContent = 'Open ' + where(folder);
    a.onclick = (e) => { e.preventDefault(); closeTrash(); go(folder); };
    s.append(' ', a);
  }
}

// row is one item: icon, name, the folder it was in, size and deletion
// time, Restore and Delete forever. Every name goes in as text.
function row(it) {
  const li = document.createElement('li');
  li.className = 'trash-item';
  li.dataset.id = it.id;
  li.dataset.path = it.path;
  li.appendChild(icon(typeOf(it.name, it.isDir)));
  const txt = document.createElement('div');
  txt.className = 'trash-text';
  const name = document.createElement('span');
  name.className = 'trash-name';
  name.textContent = it.name;
  name.title = it.path;
  const from = document.createElement('span');
  from.className = 'trash-from';
  from.textContent = 'From ' + where(parent(it.path));
  const meta = document.createElement('span');
  meta.className = 'trash-meta';
  const when = document.createElement('time');
  when.dateTime = it.deleted;
  when.textContent = 'Deleted ' + fmtDate(it.deleted);
  meta.append(fmtBytes(it.size) + ' · ', when);
  txt.append(name, from, meta);
  const btns = document.createElement('div');
  btns.className = 'trash-btns';
  const restore = button('Restore', 'i-restore', 'trash-restore', 'Restore ' + it.name);
  restore.onclick = () => doRestore(it, li, restore);
  const del = button('Delete forever', 'i-trash', 'trash-delete btn-danger', 'Delete ' + it.name + ' forever');
  del.onclick = () => dialog({ title: `Delete “${it.name}” forever?`, ok: 'Delete forever', danger: true,
    body: (it.isDir ? 'The folder and everything in it' : 'The file') + ' cannot be restored after this.',
    onOk: async () => {
      await api('DELETE', '/api/v1/trash/' + it.id);
      gone(li);
      toast('Deleted forever');
    } });
  btns.append(restore, del);
  li.append(txt, btns);
  return li;
}

function button(label, sym, cls, aria) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = 'btn btn-sm ' + cls;
  b.setAttribute('aria-label', aria);
  b.title = label;
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('class', 'i');
  svg.setAttribute('aria-hidden', 'true');
  const use = document.createElementNS('http://www.w3.org/2000/svg', 'use');
  use.setAttribute('href', '#' + sym);
  svg.appendChild(use);
  const span = document.createElement('span');
  span.textContent = label;
  b.append(svg, span);
  return b;
}

// gone removes an item's row and keeps the keyboard in the list: focus
// moves to the next row's first button (or the previous one's).
function gone(li) {
  const to = li.nextElementSibling || li.previousElementSibling;
  li.remove();
  if (to) to.querySelector('button').focus();
  shown();
}

async function doRestore(it, li, btn) {
  btn.disabled = true;
  try {
    const r = await api('POST', '/api/v1/trash/restore', { id: it.id });
    const dir = parent(r.path);
    if (r.renamed) {
      status(`“${it.name}” is back as “${base(r.path)}” in ${where(dir)}: “${base(r.original)}” was taken.`, dir);
    } else {
      status(`“${it.name}” is back in ${where(dir)}.`, dir);
    }
    toast(r.renamed ? `Restored as “${base(r.path)}”` : 'Restored');
    gone(li);
    refreshQuota(); // restored files count in the quota again
  } catch (e) {
    btn.disabled = false;
    if (e.status === 404) { gone(li); toast('That item is no longer in the trash.', true); return; }
    if (e.status !== 401) toast(e.message, true);
  }
}

function emptyTrash() {
  dialog({ title: 'Empty the trash?', ok: 'Empty trash', danger: true,
    body: 'Everything in the trash is deleted forever: it cannot be restored after this.',
    onOk: async () => {
      const r = await api('DELETE', '/api/v1/trash');
      next = 0;
      $('trash-list').textContent = '';
      shown();
      status('');
      toast(r.deleted === 1 ? '1 item deleted forever' : `${r.deleted} items deleted forever`);
    } });
}

function wire() {
  $('btn-trash').onclick = () => (inTrash() ? back() : openTrash());
  $('trash-back').onclick = back;
  $('trash-more').onclick = () => load(true);
  $('trash-empty').onclick = emptyTrash;
  // Links to the trash elsewhere (the delete dialog's) carry data-open-trash.
  document.addEventListener('click', (e) => {
    const a = e.target.closest && e.target.closest('[data-open-trash]');
    if (!a) return;
    e.preventDefault();
    const dlg = a.closest('dialog');
    if (dlg) dlg.close();
    openTrash();
  });
  // A folder chosen by the address (back, a link) leaves the trash.
  window.addEventListener('hashchange', closeTrash);
  document.addEventListener('netdisk:signedout', closeTrash);
}

// back leaves the trash for the folder the user was in, read again: a
// restore may have brought something back into it.
function back() {
  closeTrash();
  go(state.cwd);
  $('btn-trash').focus();
}

wire();
