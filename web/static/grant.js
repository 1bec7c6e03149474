// The Login Flow v2 grant screen, opened by a Nextcloud-protocol client at
// /index.php/login/v2/flow/TOKEN: sign in if needed, then grant the named
// device an app password. The device name comes from the client (its
// User-Agent): it is only ever set as text, never as markup.

const $ = (id) => document.getElementById(id);
const token = decodeURIComponent(location.pathname.split('/').pop());
const flowURL = '/web/loginflow/' + encodeURIComponent(token);
let csrf = '';

function show(id) {
  for (const s of ['signin-form', 'grant', 'grant-done', 'grant-gone']) $(s).hidden = s !== id;
}

async function load() {
  const sess = await fetch('/web/session', { credentials: 'same-origin', headers: { 'X-Netdisk-Web': '1' } });
  if (sess.status === 401) {
    show('signin-form');
    // The desktop client may name the user it expects (?user=NAME).
    const user = new URLSearchParams(location.search).get('user');
    if (user) $('signin-name').value = user;
    $(user ? 'signin-pass' : 'signin-name').focus();
    return;
  }
  if (!sess.ok) {
    $('signin-error').textContent = 'The server cannot answer now: reload later.';
    show('signin-form');
    return;
  }
  const s = await sess.json();
  csrf = s.csrf;
  const r = await fetch(flowURL, { credentials: 'same-origin', headers: { 'X-Netdisk-Web': '1' } });
  if (r.status === 404) {
    show('grant-gone');
    return;
  }
  if (!r.ok) {
    $('grant-error').textContent = 'The server cannot answer now: reload later.';
  } else {
    $('grant-device').textContent = (await r.json()).device;
  }
  $('grant-user').textContent = s.name;
  show('grant');
}

async function signin(ev) {
  ev.preventDefault();
  $('signin-error').textContent = '';
  const r = await fetch('/web/login', { method: 'POST', credentials: 'same-origin',
    headers: { 'Content-Type': 'application/json', 'X-Netdisk-Web': '1' },
    body: JSON.stringify({ name: $('signin-name').value.trim(), password: $('signin-pass').value }) });
  $('signin-pass').value = '';
  if (!r.ok) {
    const wait = r.headers.get('Retry-After');
    $('signin-error').textContent = r.status === 429 ? `Too many failed attempts: try again in ${wait || 'a few'} seconds.`
      : r.status === 401 ? 'Wrong user name or password.' : ((await r.json().catch(() => ({}))).error || 'Sign-in failed.');
    return;
  }
  await load();
}

async function grant() {
  $('grant-submit').disabled = true;
  $('grant-error').textContent = '';
  const r = await fetch(flowURL + '/grant', { method: 'POST', credentials: 'same-origin',
    headers: { 'X-CSRF-Token': csrf, 'X-Netdisk-Web': '1' } });
  $('grant-submit').disabled = false;
  if (r.status === 204) show('grant-done');
  else if (r.status === 404) show('grant-gone');
  else $('grant-error').textContent = (await r.json().catch(() => ({}))).error || 'Granting failed.';
}

$('signin-form').addEventListener('submit', signin);
$('grant-submit').addEventListener('click', grant);
load().catch(() => { $('signin-error').textContent = 'Cannot reach the server.'; show('signin-form'); });
