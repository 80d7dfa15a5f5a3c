// The web viewer of `compactor serve` (docs/viewer.md). Plain script, no
// build step: it reads the service API under /compactor/v1/ and renders the
// session list and one session's tree, context bar and details. The tree is
// rendered in a window: only the rows on screen (plus a margin) are in the
// document, so a session of 20,000 entries scrolls, collapses and expands
// as fast as a small one.
'use strict';

const API = '/compactor/v1';
const ROW_HEIGHT = 28;          // px; must match .tree [role=treeitem] in viewer.css
const OVERSCAN = 12;            // rows rendered above and below the screen
const RENDER_ALL_BELOW = 400;   // small trees are rendered whole

const $ = (id) => document.getElementById(id);
const fmt = new Intl.NumberFormat('en');

// --- API --------------------------------------------------------------------

class Unauthorized extends Error {}

async function api(path, options = {}) {
  const res = await fetch(API + path, {credentials: 'same-origin', ...options});
  if (res.status === 401) throw new Unauthorized('sign in first');
  const text = await res.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  if (!res.ok) {
    const msg = body && body.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${res.status}`;
    throw new Error(msg);
  }
  return body;
}

const enc = encodeURIComponent;

function say(text, isError = false) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', isError);
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function when(iso) {
  const d = new Date(iso);
  return isNaN(d) ? iso : d.toLocaleString();
}

// --- views and routing ------------------------------------------------------

function show(view) {
  for (const id of ['signin', 'list-view', 'session-view']) $(id).hidden = id !== view;
}

async function route() {
  const m = location.hash.match(/^#\/s\/([^/?]+)(?:\/e\/([^/?]+))?/);
  try {
    if (m) await openSession(decodeURIComponent(m[1]), m[2] ? decodeURIComponent(m[2]) : null);
    else await openList();
  } catch (e) {
    if (e instanceof Unauthorized) {
      show('signin');
      $('token').focus();
      say('This server needs its token.');
    } else {
      say(e.message, true);
    }
  }
}

async function signIn(ev) {
  ev.preventDefault();
  try {
    const res = await fetch(API + '/login', {
      method: 'POST', credentials: 'same-origin',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({token: $('token').value}),
    });
    if (!res.ok) throw new Error('wrong token');
    $('token').value = '';
    say('Signed in.');
    await route();
  } catch (e) {
    say(e.message, true);
  }
}

// --- the session list -------------------------------------------------------

let sessions = [];

async function openList() {
  document.title = 'Compactor sessions';
  const body = await api('/sessions');
  sessions = body.sessions;
  show('list-view');
  renderList();
  say(`${sessions.length} sessions`);
}

function renderList() {
  const q = $('search').value.trim().toLowerCase();
  const list = $('session-list');
  const shown = sessions.filter((s) => !q ||
      [s.id, s.name, s.firstPrompt].some((f) => f && f.toLowerCase().includes(q)));
  list.replaceChildren(...shown.map((s) => {
    const title = s.name || s.firstPrompt || '';
    // The link is named by the session id, then its name or first prompt.
    const link = el('a', {href: `#/s/${enc(s.id)}`, class: 'session-link'},
        el('span', {class: 'id', text: s.id}),
        title ? el('span', {class: 'title', text: ` ${title}`}) : null);
    return el('li', {},
        link,
        el('span', {class: 'facts'},
            el('span', {text: `${fmt.format(s.entries)} entries`}),
            el('span', {text: bytes(s.sizeBytes)}),
            el('time', {datetime: s.lastActivity, text: when(s.lastActivity)}),
            s.readOnly ? el('span', {class: 'badge', text: 'read-only'}) : null));
  }));
  $('list-count').textContent = `${shown.length} of ${sessions.length}`;
}

// --- one session ------------------------------------------------------------

// The loaded session: entries (from .../tree joined with .../outline),
// their children, and the rows of the tree as currently expanded.
const S = {
  id: null, info: null, entries: [], byId: new Map(), children: [], roots: [],
  collapsed: new Set(), rows: [], level: [], pos: [], size: [], focus: 0,
  chosen: null, marked: new Set(), rendered: [-1, -1],
};

async function openSession(id, entryId) {
  const t0 = performance.now();
  const [tree, outline, win, info] = await Promise.all([
    api(`/sessions/${enc(id)}/tree`),
    api(`/sessions/${enc(id)}/outline`),
    api(`/sessions/${enc(id)}/window`),
    api('/sessions').then((b) => b.sessions.find((s) => s.id === id) || null),
  ]);
  S.id = id;
  S.info = info;
  S.entries = tree.entries;
  for (let i = 0; i < S.entries.length; i++) {
    const o = outline.entries[i];
    S.entries[i].text = o && o.id === S.entries[i].id ? o.text : '';
    S.entries[i].timestamp = o ? o.timestamp : '';
  }
  buildTree();
  S.collapsed.clear();
  S.marked.clear();
  S.chosen = null;
  layout();
  show('session-view');
  const title = info && (info.name || info.firstPrompt);
  $('session-title').textContent = `Session ${id}`;
  $('session-sub').textContent = [title, `${fmt.format(S.entries.length)} entries`,
    info ? bytes(info.sizeBytes) : null, info ? `last activity ${when(info.lastActivity)}` : null,
    info && info.readOnly ? 'read-only (--sessions)' : null].filter(Boolean).join(' · ');
  document.title = `Session ${id}`;
  const ro = info && info.readOnly;
  $('compact-button').disabled = !!ro;
  $('compact-button').title = ro ? 'read-only session: served from --sessions' : '';
  renderMeter(win);
  const leaf = tree.leafId ? S.byId.get(tree.leafId) : undefined;
  S.focus = Math.max(0, S.rows.indexOf(leaf !== undefined ? leaf : S.rows[0]));
  $('tree').scrollTop = 0;
  renderRows(true);
  scrollToRow(S.focus);
  resetDetails();
  if (entryId && S.byId.has(entryId)) {
    reveal(S.byId.get(entryId));
    await choose(S.byId.get(entryId));
  }
  say(`Loaded ${fmt.format(S.entries.length)} entries in ${Math.round(performance.now() - t0)} ms`);
}

function buildTree() {
  S.byId = new Map(S.entries.map((e, i) => [e.id, i]));
  S.children = S.entries.map(() => []);
  S.roots = [];
  S.entries.forEach((e, i) => {
    const p = e.parentId === null ? undefined : S.byId.get(e.parentId);
    if (p === undefined || p === i) S.roots.push(i);
    else S.children[p].push(i);
  });
  // The active branch first, so the path the model sees reads top down.
  const activeFirst = (a, b) => (S.entries[b].active ? 1 : 0) - (S.entries[a].active ? 1 : 0);
  for (const c of S.children) if (c.length > 1) c.sort(activeFirst);
  S.roots.sort(activeFirst);
}

// A chain of single children stays on one level; where an entry has several
// children, each child starts a branch one level deeper, and that entry can
// be collapsed. `rows` are the entry indices shown, in order; level, pos and
// size are their aria-level, aria-posinset and aria-setsize.
function layout() {
  const rows = [], level = [], pos = [], size = [];
  // Iterative: a session is a chain thousands of entries deep.
  const stack = [];
  const pushChain = (start, lvl) => stack.push({start, lvl});
  for (let r = S.roots.length - 1; r >= 0; r--) pushChain(S.roots[r], 1);
  while (stack.length) {
    const {start, lvl} = stack.pop();
    const chain = [];
    let i = start;
    for (;;) {
      chain.push(i);
      const c = S.children[i];
      if (c.length !== 1) break;
      i = c[0];
    }
    const last = chain[chain.length - 1];
    chain.forEach((e, k) => {
      rows.push(e); level.push(lvl); pos.push(k + 1); size.push(chain.length);
    });
    const kids = S.children[last];
    if (kids.length > 1 && !S.collapsed.has(last)) {
      // Depth first: the branches of `last` follow it, the first on top.
      for (let k = kids.length - 1; k >= 0; k--) pushChain(kids[k], lvl + 1);
    }
  }
  S.rows = rows; S.level = level; S.pos = pos; S.size = size;
  S.rowOf = new Int32Array(S.entries.length).fill(-1);
  rows.forEach((e, r) => { S.rowOf[e] = r; });
  $('tree-sizer').style.height = `${rows.length * ROW_HEIGHT}px`;
}

function expandable(i) { return S.children[i].length > 1; }

// Renders the rows in view (all of them for a small tree).
function renderRows(force = false) {
  const tree = $('tree');
  let from = 0, to = S.rows.length;
  if (S.rows.length > RENDER_ALL_BELOW) {
    const top = Math.floor(tree.scrollTop / ROW_HEIGHT);
    const n = Math.ceil((tree.clientHeight || 600) / ROW_HEIGHT);
    from = Math.max(0, top - OVERSCAN);
    to = Math.min(S.rows.length, top + n + OVERSCAN);
  }
  if (!force && from === S.rendered[0] && to === S.rendered[1]) return updateFocus();
  S.rendered = [from, to];
  const frag = document.createDocumentFragment();
  frag.append($('tree-sizer'));
  for (let r = from; r < to; r++) frag.append(rowElement(r));
  tree.replaceChildren(frag);
  updateFocus();
}

function rowElement(r) {
  const i = S.rows[r];
  const e = S.entries[i];
  const kind = e.type === 'message' ? e.role : e.type;
  const row = el('div', {
    role: 'treeitem', id: `row-${r}`, class: `row t-${e.type}${e.active ? ' active' : ''}` +
        `${e.summarized ? ' summarized' : ''}${S.marked.has(i) ? ' marked' : ''}` +
        `${S.chosen === i ? ' chosen' : ''}`,
    'aria-level': S.level[r], 'aria-posinset': S.pos[r], 'aria-setsize': S.size[r],
    'aria-current': e.active ? 'true' : null,
    'aria-expanded': expandable(i) ? String(!S.collapsed.has(i)) : null,
    'data-entry': e.id, 'data-row': r,
  },
  el('span', {class: 'twisty', 'aria-hidden': 'true',
    text: expandable(i) ? (S.collapsed.has(i) ? '▸' : '▾') : ''}),
  el('span', {class: 'eid', text: e.id.slice(0, 8)}),
  el('span', {class: `kind k-${kind}`, text: ` ${kind}`}),
  e.label ? el('span', {class: 'label', text: ` [${e.label}]`}) : null,
  e.compaction && e.compaction.inEffect ? el('span', {class: 'badge', text: ' in effect'}) : null,
  el('span', {class: 'text', text: e.text ? ` ${e.text}` : ''}));
  row.style.transform = `translateY(${r * ROW_HEIGHT}px)`;
  row.style.paddingLeft = `${(S.level[r] - 1) * 16 + 4}px`;
  return row;
}

function updateFocus() {
  const tree = $('tree');
  const prev = tree.querySelector('.focused');
  if (prev) prev.classList.remove('focused');
  const row = $(`row-${S.focus}`);
  if (row) {
    row.classList.add('focused');
    tree.setAttribute('aria-activedescendant', row.id);
  } else {
    tree.removeAttribute('aria-activedescendant');
  }
}

function scrollToRow(r) {
  const tree = $('tree');
  const y = r * ROW_HEIGHT;
  if (y < tree.scrollTop) tree.scrollTop = y;
  else if (y + ROW_HEIGHT > tree.scrollTop + tree.clientHeight)
    tree.scrollTop = y + ROW_HEIGHT - tree.clientHeight;
  renderRows();
}

function moveFocus(r) {
  S.focus = Math.max(0, Math.min(S.rows.length - 1, r));
  scrollToRow(S.focus);
}

function toggle(i, open) {
  if (!expandable(i)) return false;
  const isOpen = !S.collapsed.has(i);
  if (open === isOpen) return false;
  const focused = S.rows[S.focus];
  if (isOpen) S.collapsed.add(i); else S.collapsed.delete(i);
  layout();
  // The focused entry keeps the focus; if it was hidden, the branch point takes it.
  S.focus = Math.max(0, S.rowOf[focused] >= 0 ? S.rowOf[focused] : S.rowOf[i]);
  renderRows(true);
  scrollToRow(S.focus);
  return true;
}

// The row of the entry that opened the branch row r is in (the branch
// point above), or -1.
function parentRow(r) {
  const lvl = S.level[r];
  for (let k = r - 1; k >= 0; k--) if (S.level[k] < lvl) return k;
  return -1;
}

function onTreeKey(ev) {
  if (!S.rows.length) return;
  const r = S.focus, i = S.rows[r];
  let handled = true;
  switch (ev.key) {
    case 'ArrowDown': moveFocus(r + 1); break;
    case 'ArrowUp': moveFocus(r - 1); break;
    case 'Home': moveFocus(0); break;
    case 'End': moveFocus(S.rows.length - 1); break;
    case 'PageDown': moveFocus(r + Math.floor($('tree').clientHeight / ROW_HEIGHT)); break;
    case 'PageUp': moveFocus(r - Math.floor($('tree').clientHeight / ROW_HEIGHT)); break;
    case 'ArrowRight':
      if (!toggle(i, true) && expandable(i)) moveFocus(r + 1);
      break;
    case 'ArrowLeft':
      if (!toggle(i, false)) { const p = parentRow(r); if (p >= 0) moveFocus(p); }
      break;
    case 'Enter':
    case ' ':
      if (expandable(i)) toggle(i, S.collapsed.has(i));
      safeChoose(i);
      break;
    default: handled = false;
  }
  if (handled) ev.preventDefault();
}

function onTreeClick(ev) {
  const row = ev.target.closest('[role=treeitem]');
  if (!row) return;
  const r = Number(row.dataset.row), i = S.rows[r];
  S.focus = r;
  $('tree').focus({preventScroll: true});
  if (ev.target.classList.contains('twisty')) toggle(i, S.collapsed.has(i));
  else safeChoose(i);
  updateFocus();
}

function setAll(open) {
  S.collapsed.clear();
  if (!open) S.entries.forEach((e, i) => { if (expandable(i)) S.collapsed.add(i); });
  const i = S.rows[S.focus];
  layout();
  S.focus = Math.max(0, S.rowOf[i]);
  if (S.rowOf[i] < 0) S.focus = 0;
  renderRows(true);
  scrollToRow(S.focus);
}

// Makes entry i shown: its collapsed ancestors expanded.
function reveal(i) {
  let changed = false;
  for (let p = parentOf(i); p !== undefined; p = parentOf(p)) {
    if (S.collapsed.delete(p)) changed = true;
  }
  if (changed) layout();
  S.focus = S.rowOf[i];
  renderRows(true);
  scrollToRow(S.focus);
}

function parentOf(i) {
  const p = S.entries[i].parentId;
  const k = p === null ? undefined : S.byId.get(p);
  return k === i ? undefined : k;
}

// --- the context bar --------------------------------------------------------

function renderMeter(w) {
  const total = w.totalTokens;
  const max = w.contextWindow || Math.max(total, 1);
  const meter = $('meter');
  meter.setAttribute('aria-valuemax', String(max));
  meter.setAttribute('aria-valuenow', String(Math.min(total, max)));
  const pct = (n) => `${Math.min(100, (100 * n) / max)}%`;
  const text = `Model context: ${fmt.format(total)} of ` +
      (w.contextWindow ? `${fmt.format(w.contextWindow)} tokens` : 'an unknown window') +
      ` (summary ${fmt.format(w.summaryTokens)}, kept ${fmt.format(w.keptTokens)},` +
      ` new ${fmt.format(w.newTokens)})`;
  meter.setAttribute('aria-label', text);
  meter.setAttribute('aria-valuetext', text);
  const segs = meter.querySelectorAll('.seg');
  segs[0].style.width = pct(w.summaryTokens);
  segs[1].style.width = pct(w.keptTokens);
  segs[2].style.width = pct(w.newTokens);
  $('leg-summary').textContent = `summary ${fmt.format(w.summaryTokens)}`;
  $('leg-kept').textContent = `kept ${fmt.format(w.keptTokens)}`;
  $('leg-new').textContent = `new ${fmt.format(w.newTokens)}`;
  $('leg-window').textContent = w.contextWindow
    ? `of ${fmt.format(w.contextWindow)} tokens (${w.model || 'model unknown'})`
    : `tokens; window unknown${w.model ? ` for ${w.model}` : ''}`;
}

// --- details ----------------------------------------------------------------

function resetDetails() {
  $('details-title').textContent = 'Details';
  $('details-body').replaceChildren(el('p', {class: 'muted', text: 'Choose an entry of the tree.'}));
}

function setDetails(title, ...children) {
  $('details-title').textContent = title;
  $('details-body').replaceChildren(...children);
}

function facts(pairs) {
  const dl = el('dl', {class: 'facts-list'});
  for (const [k, v] of pairs) if (v !== null && v !== undefined) dl.append(el('dt', {text: k}), el('dd', {}, v));
  return dl;
}

function fileList(files) {
  if (!files || !files.length) return el('span', {class: 'muted', text: 'none'});
  return el('ul', {class: 'files'}, ...files.map((f) => el('li', {}, el('code', {text: f}))));
}

function entryButton(i) {
  const e = S.entries[i];
  return el('button', {type: 'button', class: 'link', onclick: () => reveal(i),
    text: `${e.id.slice(0, 8)} ${e.type === 'message' ? e.role : e.type} ${e.text || ''}`.slice(0, 120)});
}

async function choose(i) {
  const prev = S.chosen;
  S.chosen = i;
  for (const r of [prev, i]) {
    if (r === null || r === undefined || S.rowOf[r] < 0) continue;
    const row = $(`row-${S.rowOf[r]}`);
    if (row) row.classList.toggle('chosen', r === i);
  }
  const e = S.entries[i];
  history.replaceState(null, '', `#/s/${enc(S.id)}/e/${enc(e.id)}`);
  const raw = await api(`/sessions/${enc(S.id)}/entries/${enc(e.id)}`);
  if (S.chosen !== i) return;
  if (e.type === 'compaction') return showCompaction(i, raw);
  if (e.type === 'branch_summary') {
    return setDetails(`Branch summary ${e.id}`,
        facts([['From', raw.fromId || '—'], ['Time', when(raw.timestamp)]]),
        el('h3', {text: 'Summary'}), el('pre', {class: 'summary', text: raw.summary || ''}));
  }
  setDetails(`Entry ${e.id} (${e.type === 'message' ? e.role : e.type})`,
      facts([['Time', when(raw.timestamp)], ['Parent', raw.parentId || '—'],
        ['On the active path', e.active ? 'yes' : 'no'], ['Label', e.label || null]]),
      el('pre', {class: 'json', text: JSON.stringify(raw, null, 2)}));
}

// The entries the compaction at i replaced: its path back to the previous
// compaction's first kept entry (or the root), up to its own first kept entry.
function summarizedBy(i, raw) {
  const path = [];
  for (let p = parentOf(i); p !== undefined; p = parentOf(p)) path.push(p);
  path.reverse();
  let start = 0;
  for (let k = path.length - 1; k >= 0; k--) {
    const e = S.entries[path[k]];
    if (e.type === 'compaction') {
      const kept = path.findIndex((x) => S.entries[x].id === e.compaction.firstKeptEntryId);
      start = kept >= 0 ? kept : k + 1;
      break;
    }
  }
  const cut = path.findIndex((x) => S.entries[x].id === raw.firstKeptEntryId);
  const end = cut >= 0 ? cut : path.length;
  return path.slice(start, end).filter((x) => S.entries[x].type !== 'compaction');
}

async function showCompaction(i, raw) {
  const e = S.entries[i];
  const details = raw.details || {};
  let after = null;
  try {
    const w = await api(`/sessions/${enc(S.id)}/window?leaf=${enc(e.id)}`);
    after = w.totalTokens;
  } catch (err) { after = null; }
  if (S.chosen !== i) return;
  const summarized = summarizedBy(i, raw);
  const list = el('ol', {class: 'summarized', hidden: true});
  const showButton = el('button', {type: 'button', 'aria-expanded': 'false',
    text: `Show the ${summarized.length} summarized entries`});
  showButton.addEventListener('click', () => {
    const open = list.hidden;
    list.hidden = !open;
    showButton.setAttribute('aria-expanded', String(open));
    if (open && !list.childElementCount) list.append(...summarized.map((k) => el('li', {}, entryButton(k))));
    S.marked = open ? new Set(summarized) : new Set();
    renderRows(true);
  });
  const cut = S.byId.get(raw.firstKeptEntryId);
  // Compactor's entries name their strategy in "method"; pi's own entries
  // carry none and are pi's summary compaction.
  const strategy = raw.method || details.strategy ||
      (raw.fromHook ? 'extension hook' : 'summary (pi)');
  setDetails(`Compaction ${e.id}`,
      facts([
        ['Strategy', strategy],
        ['Tokens before', raw.tokensBefore !== undefined ? fmt.format(raw.tokensBefore) : '—'],
        ['Tokens after', after !== null ? `${fmt.format(after)} (estimated context at this entry)` : '—'],
        ['Cut point', cut !== undefined ? entryButton(cut) : (raw.firstKeptEntryId || '—')],
        ['In effect', e.compaction && e.compaction.inEffect ? 'yes' : 'no'],
        ['Time', when(raw.timestamp)],
        ['Files read', fileList(details.readFiles)],
        ['Files modified', fileList(details.modifiedFiles)],
      ]),
      el('h3', {text: 'Summary'}),
      el('pre', {class: 'summary', text: raw.summary || ''}),
      el('h3', {text: 'What it summarized'}),
      showButton, list);
}

// --- plan and compact -------------------------------------------------------

function keepParam() {
  const v = $('keep').value.trim();
  return v ? {keepRecentTokens: Number(v)} : {};
}

async function plan() {
  const q = new URLSearchParams(keepParam()).toString();
  const p = await api(`/sessions/${enc(S.id)}/plan${q ? `?${q}` : ''}`);
  const est = p.estimatedTokens;
  if (!p.preparation) {
    setDetails('Plan', facts([['Estimated tokens', fmt.format(est.contextEstimate)]]),
        el('p', {text: 'Nothing to summarize: the kept part already holds the whole path.'}));
    say('Plan: nothing to summarize');
    return;
  }
  const pr = p.preparation;
  const cut = S.byId.get(pr.firstKeptEntryId);
  setDetails('Plan', facts([
    ['Estimated tokens', fmt.format(est.contextEstimate)],
    ['Tokens before', fmt.format(pr.tokensBefore)],
    ['Messages to summarize', fmt.format(pr.messagesToSummarize)],
    ['Cut point', cut !== undefined ? entryButton(cut) : pr.firstKeptEntryId],
    ['Split turn', pr.isSplitTurn ? 'yes' : 'no'],
    ['Files read', fileList(pr.readFiles)],
    ['Files modified', fileList(pr.modifiedFiles)],
  ]));
  say(`Plan: ${pr.messagesToSummarize} messages to summarize, cut at ${pr.firstKeptEntryId}`);
}

async function compact() {
  const button = $('compact-button');
  button.disabled = true;
  say('Compacting…');
  try {
    const r = await api(`/sessions/${enc(S.id)}/compact`, {
      method: 'POST', headers: {'content-type': 'application/json'},
      body: JSON.stringify(keepParam()),
    });
    if (!r.compacted) {
      say(`Not compacted: ${r.skippedReason || 'nothing to do'}`);
      return;
    }
    await openSession(S.id, r.entryId);
    say(`Compacted with ${r.strategy}: ${fmt.format(r.tokensBefore)} → ${fmt.format(r.tokensAfter)} tokens` +
        (r.entryId ? `, entry ${r.entryId}` : ''));
  } finally {
    button.disabled = !!(S.info && S.info.readOnly);
  }
}

function guarded(fn) {
  return async (...args) => {
    try { await fn(...args); } catch (e) {
      if (e instanceof Unauthorized) { show('signin'); say('This server needs its token.'); }
      else say(e.message, true);
    }
  };
}

const safeChoose = guarded(choose);

// --- start ------------------------------------------------------------------

document.addEventListener('DOMContentLoaded', () => {
  $('signin-form').addEventListener('submit', signIn);
  $('search').addEventListener('input', renderList);
  const tree = $('tree');
  let pending = false;
  tree.addEventListener('scroll', () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; renderRows(); });
  });
  tree.addEventListener('keydown', onTreeKey);
  tree.addEventListener('click', onTreeClick);
  tree.addEventListener('focus', updateFocus);
  $('plan-button').addEventListener('click', guarded(plan));
  $('compact-button').addEventListener('click', guarded(compact));
  $('expand-all').addEventListener('click', () => setAll(true));
  $('collapse-all').addEventListener('click', () => setAll(false));
  window.addEventListener('resize', () => renderRows(true));
  window.addEventListener('hashchange', route);
  route();
});
