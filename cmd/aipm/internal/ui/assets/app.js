// The page of `aipm ui`. It reads the whole state once; after that the server's event
// stream sends each change — the rows of the tasks whose files changed, and the project,
// agents and attention list when they changed — and the page updates only the cards,
// columns and panes those touch. It never polls.
'use strict';

const token = new URLSearchParams(location.search).get('token') || '';
let S = null;                 // project, agents, attention, statuses, transitions, human
const tasks = new Map();      // id → row
const kids = new Map();       // parent id → Set of child ids
const byStatus = new Map();   // column → Set of ids ('invalid' for broken files)
const deps = new Map();       // id → Set of the ids that depend on it
let shortIDs = new Map();     // id → shortest unique prefix (at least 4 characters after tsk_)
let selTask = null;           // the task in the details pane
let editing = null;           // the task whose Edit form is open in the details pane
let creating = false;         // the details pane holds the New task form
const colFocus = new Map();   // column → the card Tab reaches in it (one per column)
let chatAgent = null;         // the agent in the chat pane
let diffCache = null;         // { key, reading, answer } of the diff in the details pane
const openDiffs = new Set();  // tasks whose diff is unfolded
const openLogs = new Set();   // runs whose log is shown
const folded = new Set(['done', 'cancelled']); // columns shown as their count only
const shown = new Map();      // column → how many cards it shows (more on request)
const pageSize = 200;
const filter = { q: '', assignee: '', status: '', priority: '', mine: false };
// What the page received, for `make bench` and the browser test: bytes of JSON read.
window.aipmStats = { bytes: 0, changes: 0, firstLoadBytes: 0 };

// h builds an element; text is always set as text, never parsed as HTML.
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat(Infinity)) {
    if (k === undefined || k === null || k === false) continue;
    el.append(k instanceof Node ? k : String(k));
  }
  return el;
}

async function api(path, body) {
  const opts = { headers: { 'X-Aipm-Token': token } };
  if (body !== undefined) {
    opts.method = 'POST';
    opts.headers['Content-Type'] = 'application/json';
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const text = await r.text();
  window.aipmStats.bytes += text.length;
  let out;
  try { out = JSON.parse(text); } catch { out = { error: 'bad_response', message: 'the server answered ' + r.status }; }
  if (!r.ok) { out.status = r.status; throw out; }
  return out;
}

let toastTimer;
function toast(text, error) {
  const t = document.getElementById('toast');
  t.textContent = shortText(text);
  t.className = error ? 'error' : '';
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, error ? 8000 : 3000);
}

function banner(text) {
  const b = document.getElementById('banner');
  b.textContent = text || '';
  b.hidden = !text;
}

// act runs a button's request and reports a refusal with its message and hint. The page
// updates from the change event the write causes, not from the answer.
async function act(what, path, body) {
  try {
    await api(path, body || {});
    toast(what);
    return true;
  } catch (e) {
    toast((e.message || e.error || String(e)) + (e.hint ? ' — ' + e.hint : ''), true);
    return false;
  }
}

// ---- the model -------------------------------------------------------------------------

function column(t) { return t.problem ? 'invalid' : t.status; }

// landText is a task's landing in a few words, as `aipm task list` gives it: "queued",
// "landed 1a2b3c4d5e", "check failed · needs you"; "" for a task without a branch.
function landText(l) {
  if (!l) return '';
  let s = l.state.replace('_', ' ');
  if (l.state === 'landed') s += l.commit ? ' ' + l.commit : ' (no changes)';
  if (l.needs_you) s += ' · needs you';
  return s;
}
function landBadge(l) {
  return l && h('span', { class: 'land land-' + l.state + (l.needs_you ? ' needs-you' : ''), title: 'where its code is' }, landText(l));
}
// landRow is a task file's landing as the board's rows carry it.
function landRow(l) {
  return l && { state: l.state, commit: (l.landed_commit || '').slice(0, 10), needs_you: !!l.needs_human };
}
// depMet: a dependency lets its dependents start once done and its code, if any, landed.
function depMet(d) { return d.status === 'done' && (!d.landing || d.landing.state === 'landed'); }
function depState(d) {
  return d.status.replace('_', ' ') + (d.status === 'done' && d.landing && d.landing.state !== 'landed' ? ', landing ' + d.landing.state.replace('_', ' ') : '');
}

function setIn(m, k, v) { if (!m.has(k)) m.set(k, new Set()); m.get(k).add(v); }
function delIn(m, k, v) { const s = m.get(k); if (s) { s.delete(v); if (!s.size) m.delete(k); } }

function put(t) {
  const old = tasks.get(t.id);
  if (old) drop(old);
  tasks.set(t.id, t);
  setIn(byStatus, column(t), t.id);
  if (t.parent_id) setIn(kids, t.parent_id, t.id);
  for (const d of t.dependencies || []) setIn(deps, d, t.id);
}

function drop(t) {
  tasks.delete(t.id);
  delIn(byStatus, column(t), t.id);
  if (t.parent_id) delIn(kids, t.parent_id, t.id);
  for (const d of t.dependencies || []) delIn(deps, d, t.id);
  pathKeys.clear();
}

// computeShortIDs abbreviates each id to what no other id starts with, as the command line
// does: sorted, an id's longest common prefix with any other is with a neighbour.
function computeShortIDs() {
  const ids = [...tasks.keys()].sort();
  const lcp = (a, b) => { let n = 0; while (n < a.length && n < b.length && a[n] === b[n]) n++; return n; };
  const out = new Map();
  ids.forEach((id, i) => {
    let n = 'tsk_'.length + 4;
    if (i > 0) n = Math.max(n, lcp(id, ids[i - 1]) + 1);
    if (i + 1 < ids.length) n = Math.max(n, lcp(id, ids[i + 1]) + 1);
    out.set(id, id.slice(0, n));
  });
  shortIDs = out;
}
function short(id) { return shortIDs.get(id) || id; }
// shortText writes the whole task ids in a text from the store (a refusal, a message) in
// their short form, as on cards.
function shortText(s) { return String(s).replace(/\btsk_[0-9a-z]{26}\b/g, id => short(id)); }
// resolveTask finds the task a link or a form names: its whole id or the one id it starts.
function resolveTask(v) {
  v = String(v).trim().toLowerCase();
  if (!v.startsWith('tsk_')) v = 'tsk_' + v;
  if (tasks.has(v)) return v;
  const m = [...tasks.keys()].filter(id => id.startsWith(v));
  return m.length === 1 ? m[0] : null;
}

// pathKeys: the ids from the root down to a task; sorting by them lists a column depth
// first, parents before their sub-tasks, in creation order (ids sort so).
const pathKeys = new Map();
function pathKey(id) {
  let k = pathKeys.get(id);
  if (k) return k;
  const chain = [];
  const seen = new Set();
  for (let cur = tasks.get(id); cur && !seen.has(cur.id); cur = tasks.get(cur.parent_id)) {
    seen.add(cur.id);
    chain.unshift(cur.id);
  }
  k = chain;
  pathKeys.set(id, k);
  return k;
}
function byPath(a, b) {
  const x = pathKey(a), y = pathKey(b);
  for (let i = 0; i < x.length && i < y.length; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  return x.length - y.length;
}

// ---- reading and following -------------------------------------------------------------

// load reads the whole state; a change arriving meanwhile may predate what it reads, so
// it reads again once it is done.
let loading = false, loadAgain = false;
async function load() {
  if (loading) { loadAgain = true; return; }
  loading = true;
  try {
    do {
      loadAgain = false;
      await loadOnce();
    } while (loadAgain);
  } finally {
    loading = false;
  }
}

async function loadOnce() {
  const st = await api('/api/state');
  if (!window.aipmStats.firstLoadBytes) window.aipmStats.firstLoadBytes = window.aipmStats.bytes;
  S = st;
  tasks.clear(); kids.clear(); byStatus.clear(); deps.clear(); pathKeys.clear();
  for (const t of st.tasks) put(t);
  delete S.tasks;
  computeShortIDs();
  fillFilters();
  renderHeader(); renderAttention(); renderAgents();
  renderBoard(null);
  if (selTask) renderDetails(true);
  if (chatAgent) renderChat(true);
  document.body.dataset.loaded = String(Number(document.body.dataset.loaded || 0) + 1);
  if (document.body.dataset.loaded === '1') followHash();
}

// ---- links: #task=tsk_8001 opens a task's details, #chat=be1 an agent's chat ----------

function setHash(v) {
  const want = v ? '#' + v : '';
  if (location.hash !== want) history.replaceState(null, '', location.pathname + location.search + want);
}

function followHash() {
  const m = /^#(task|chat)=(.+)$/.exec(location.hash);
  if (!m || !S) return;
  const v = decodeURIComponent(m[2]);
  if (m[1] === 'task') {
    const id = resolveTask(v);
    if (!id) { toast('the link names task ' + v + ', which this project does not have (or more than one starts so)', true); return; }
    if (id !== selTask) selectTask(id);
  } else if (S.agents.some(a => a.id === v)) {
    if (v !== chatAgent) selectAgent(v);
  } else toast('the link names agent ' + v + ', who is not in this project', true);
}
window.addEventListener('hashchange', followHash);

function onChange(ev) {
  window.aipmStats.bytes += ev.data.length;
  const c = JSON.parse(ev.data);
  if (c.reset || !S || loading) { load().catch(failed); return; }
  const touched = new Set();
  const addTouched = t => { if (!t) return; touched.add(column(t)); };
  let idsChanged = false;
  for (const t of c.tasks || []) {
    const old = tasks.get(t.id);
    addTouched(old);
    if (!old) idsChanged = true;
    if (old && old.parent_id !== t.parent_id) pathKeys.clear();
    put(t);
    addTouched(t);
    // Cards that show this task: its sub-tasks (their "part of") and its dependents.
    for (const k of kids.get(t.id) || []) addTouched(tasks.get(k));
    for (const k of deps.get(t.id) || []) addTouched(tasks.get(k));
  }
  for (const id of c.removed || []) {
    const old = tasks.get(id);
    if (!old) continue;
    addTouched(old);
    drop(old);
    idsChanged = true;
  }
  if (idsChanged) {
    computeShortIDs(); touched.add('*');
    // A task selected before its row came (one just created) gets its short id in the URL.
    if (selTask && location.hash.startsWith('#task=')) setHash('task=' + short(selTask));
  }
  if (c.meta) {
    Object.assign(S, c.meta);
    renderHeader(); renderAttention(); renderAgents(); fillFilters();
    if (filter.mine) touched.add('*');
  }
  renderBoard(touched.has('*') ? null : touched);
  const paths = c.paths || [];
  if (selTask && paths.some(p => p === 'tasks/' + selTask + '.json' || p === 'events.jsonl' || p.startsWith('executions/'))) renderDetails();
  if (chatAgent && paths.some(p => p.startsWith('agents/' + chatAgent + '/') || p.startsWith('agents/' + S.human + '/') || p.startsWith('runtime/chat/'))) renderChat();
  window.aipmStats.changes++;
  document.body.dataset.changes = String(window.aipmStats.changes);
}

function failed(e) { toast('reading the project failed: ' + (e.message || e.error || e), true); }

let es;
function connect() {
  es = new EventSource('/events?token=' + encodeURIComponent(token));
  const live = document.getElementById('live');
  es.addEventListener('hello', () => {
    live.className = 'live on'; live.textContent = 'live'; banner('');
    load().catch(failed);
  });
  es.addEventListener('change', onChange);
  es.onerror = () => {
    live.className = 'live off'; live.textContent = 'reconnecting…';
    diagnose();
  };
}

// diagnose says why the stream broke: a server that is gone, or one that does not take
// this tab's token (started with another), and what to do.
async function diagnose() {
  try {
    const r = await fetch('/api/state', { headers: { 'X-Aipm-Token': token } });
    if (r.status === 403) {
      es.close();
      banner('This tab\'s link is no longer valid: this aipm ui was started with another token. ' +
        'Open the URL `aipm ui` printed when it started (the token is kept on this machine, outside the repository).');
      document.getElementById('live').textContent = 'stale link';
    }
  } catch {
    banner('aipm ui is not running at ' + location.host + '. Start it again there (aipm ui --addr ' + location.host +
      '); this tab reconnects by itself.');
  }
}

// ---- header, filters -------------------------------------------------------------------

function renderHeader() {
  const p = S.project;
  document.title = 'aipm — ' + p.name;
  document.getElementById('project-name').textContent = p.name;
  const st = document.getElementById('project-status');
  st.textContent = p.status;
  st.className = 'badge ' + p.status;
  document.getElementById('human').textContent = 'acting as ' + S.human;
  const b = document.getElementById('pause-resume');
  const paused = p.status === 'paused';
  b.textContent = paused ? 'Resume project' : 'Pause project';
  b.onclick = () => act(paused ? 'project resumed' : 'project paused', '/api/project/' + (paused ? 'active' : 'paused'));
}

function fillSelect(sel, first, values) {
  const want = JSON.stringify(values);
  if (sel.dataset.values === want) return;
  sel.dataset.values = want;
  const cur = sel.value;
  sel.replaceChildren(...first.map(([v, l]) => h('option', { value: v }, l)), ...values.map(v => h('option', { value: v }, v.replace('_', ' '))));
  sel.value = cur;
}

function fillFilters() {
  fillSelect(document.getElementById('f-assignee'), [['', 'Anyone'], ['-', 'Unassigned']], S.agents.map(a => a.id));
  fillSelect(document.getElementById('f-status'), [['', 'All statuses']], S.statuses);
  fillSelect(document.getElementById('f-priority'), [['', 'Any priority']], ['urgent', 'high', 'medium', 'low']);
}

// needsMe: the tasks waiting for the human (in the attention list) or assigned to them.
function needsMe() {
  const ids = new Set(S.attention_tasks || []);
  return t => ids.has(t.id) || t.assignee_id === S.human || !!t.problem || t.approval === 'pending_approval' || t.status === 'blocked';
}

function matcher() {
  const q = filter.q.trim().toLowerCase();
  const mine = filter.mine ? needsMe() : null;
  return t => {
    if (filter.assignee === '-' ? !!t.assignee_id : filter.assignee && t.assignee_id !== filter.assignee) return false;
    if (filter.priority && t.priority !== filter.priority) return false;
    if (mine && !mine(t)) return false;
    if (q && !t.title.toLowerCase().includes(q) && !t.id.includes(q.startsWith('tsk_') ? q : 'tsk_' + q) && !t.id.slice(4).includes(q)) return false;
    return true;
  };
}

let keyDown = ''; // "/" or "n", gone down outside a field
function setupToolbar() {
  const search = document.getElementById('search');
  search.addEventListener('input', () => { filter.q = search.value; shown.clear(); renderBoard(null); });
  for (const [id, key] of [['f-assignee', 'assignee'], ['f-status', 'status'], ['f-priority', 'priority']]) {
    document.getElementById(id).addEventListener('change', e => { filter[key] = e.target.value; shown.clear(); renderBoard(null); });
  }
  const mine = document.getElementById('f-mine');
  mine.addEventListener('click', () => {
    filter.mine = !filter.mine;
    mine.setAttribute('aria-pressed', String(filter.mine));
    renderBoard(null);
  });
  document.getElementById('board').addEventListener('focusin', e => {
    const c = e.target.closest && e.target.closest('.card');
    if (!c) return;
    const col = c.closest('.column');
    colFocus.set(col.dataset.status, c.dataset.taskId);
    for (const x of col.querySelectorAll('.card[tabindex="0"]')) if (x !== c) x.tabIndex = -1;
    c.tabIndex = 0;
  });
  document.getElementById('new-task').addEventListener('click', openNew);
  document.body.dataset.tab = 'board';
  for (const b of document.querySelectorAll('#tabs button')) b.addEventListener('click', () => setTab(b.dataset.tab));
  markTabs();
  const side = document.getElementById('toggle-side');
  const narrow = matchMedia('(max-width: 760px)');
  const setSide = on => { document.body.classList.toggle('side-hidden', !on); side.setAttribute('aria-pressed', String(on)); };
  setSide(!narrow.matches);
  side.addEventListener('click', () => setSide(document.body.classList.contains('side-hidden')));
  document.addEventListener('keydown', e => {
    // "/" and "n" act when the key comes up, once its character went by: it is never typed
    // into the search or the new task's title.
    const typing = /INPUT|TEXTAREA|SELECT/.test(document.activeElement.tagName);
    if ((e.key === '/' || e.key === 'n') && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) { e.preventDefault(); keyDown = e.key; }
    if (e.key === 'Escape') closeDrawer();
  });
  document.addEventListener('keyup', e => {
    if (e.key !== keyDown) return;
    keyDown = '';
    if (e.key === '/') search.focus(); else openNew();
  });
}

// ---- the board -------------------------------------------------------------------------

function columns() {
  const cols = S.statuses.slice();
  if ((byStatus.get('invalid') || new Set()).size) cols.push('invalid');
  return cols;
}

// renderBoard brings the columns up to date: all of them (only null) or those named.
// Columns, and cards whose content did not change, are kept as they are, so a scrolled
// column keeps its place and focus stays where it was.
function renderBoard(only) {
  const board = document.getElementById('board');
  const cols = columns().filter(c => !filter.status || c === filter.status);
  const els = cols.map(c => columnEl(c));
  if (els.length !== board.children.length || els.some((el, i) => board.children[i] !== el)) board.replaceChildren(...els);
  const match = matcher();
  for (const c of cols) if (!only || only.has(c)) fillColumn(c, match);
}

const colEls = new Map();
function columnEl(st) {
  let el = colEls.get(st);
  if (el) return el;
  const count = h('span', { class: 'n' });
  const fold = h('button', { class: 'fold', type: 'button', 'aria-expanded': 'true', title: 'fold or unfold this column',
    onclick: () => { folded.has(st) ? folded.delete(st) : folded.add(st); fillColumn(st, matcher()); } });
  const head = h('h2', {}, fold, h('span', { class: 'name' }, st.replace('_', ' ')), count);
  const list = h('div', { class: 'cards', role: 'list' });
  const more = h('button', { class: 'more', type: 'button', hidden: true,
    onclick: () => { shown.set(st, (shown.get(st) || pageSize) + pageSize); fillColumn(st, matcher()); } });
  el = h('div', { class: 'column st st-' + st, id: 'col-' + st, dataset: { status: st } }, head, list, more);
  el._parts = { count, fold, list, more };
  colEls.set(st, el);
  return el;
}

const cardCache = new Map(); // id → { key, el }

function fillColumn(st, match) {
  const el = columnEl(st);
  const { count, fold, list, more } = el._parts;
  const all = [...(byStatus.get(st) || [])];
  const ids = all.filter(id => match(tasks.get(id)));
  count.textContent = ids.length === all.length ? String(all.length) : ids.length + ' of ' + all.length;
  const isFolded = folded.has(st);
  el.classList.toggle('folded', isFolded);
  fold.setAttribute('aria-expanded', String(!isFolded));
  fold.textContent = isFolded ? '▸' : '▾';
  fold.setAttribute('aria-label', (isFolded ? 'unfold ' : 'fold ') + st.replace('_', ' '));
  if (isFolded) { list.replaceChildren(); more.hidden = true; return; }
  ids.sort(byPath);
  const limit = shown.get(st) || pageSize;
  const want = ids.slice(0, limit).map(id => cardFor(tasks.get(id)));
  more.hidden = ids.length <= limit;
  more.textContent = 'Show ' + Math.min(pageSize, ids.length - limit) + ' more of ' + (ids.length - limit);
  // Tab reaches one card per column (the last one focused there, else the first): the
  // arrows move between the cards, Tab to the next column.
  const keep = Math.max(0, want.findIndex(c => c.dataset.taskId === colFocus.get(st)));
  want.forEach((c, i) => { c.tabIndex = i === keep ? 0 : -1; });
  // Move only what is out of place.
  let cur = list.firstElementChild;
  for (const c of want) {
    if (cur === c) { cur = cur.nextElementSibling; continue; }
    list.insertBefore(c, cur);
  }
  while (cur) { const next = cur.nextElementSibling; cur.remove(); cur = next; }
}

function depth(t) { return pathKey(t.id).length - 1; }

function cardFor(t) {
  const parent = t.parent_id && tasks.get(t.parent_id);
  const dl = (t.dependencies || []).map(id => tasks.get(id) || { id, title: id, status: '?' });
  const key = JSON.stringify([t, short(t.id), depth(t), t.id === selTask, parent && [parent.title, parent.status],
    dl.map(d => [d.title, d.status, d.landing && d.landing.state])]);
  const c = cardCache.get(t.id);
  if (c && c.key === key) return c.el;
  const el = card(t, parent, dl);
  if (c && c.el.parentNode) c.el.replaceWith(el);
  cardCache.set(t.id, { key, el });
  return el;
}

function card(t, parent, dl) {
  const open = dl.filter(d => !depMet(d));
  return h('div', {
    class: 'card st-' + t.status + (t.id === selTask ? ' selected' : ''),
    style: '--depth:' + Math.min(depth(t), 6),
    dataset: { taskId: t.id }, tabindex: '0', role: 'listitem',
    'aria-label': short(t.id) + ' ' + t.title + ', ' + t.status.replace('_', ' ') + (t.landing ? ', code ' + landText(t.landing) : ''),
    onclick: () => selectTask(t.id),
    onkeydown: e => cardKey(e, t.id),
  },
  // The id is the task's link (#task=…), to copy; Tab passes it by, as it passes the card's
  // column by.
  h('div', { class: 'top' }, h('a', { class: 'tid', href: '#task=' + short(t.id), tabindex: '-1', title: 'a link to this task' }, short(t.id)),
    t.priority && t.priority !== 'medium' && h('span', { class: 'prio-' + t.priority }, t.priority)),
  h('div', { class: 'title' }, t.title),
  h('div', { class: 'meta' },
    h('span', {}, t.assignee_id ? '@' + t.assignee_id : 'unassigned'),
    t.approval === 'pending_approval' && h('span', { class: 'pending' }, 'awaits approval'),
    landBadge(t.landing)),
  parent && parent.status !== t.status && h('div', { class: 'hint' }, '↳ part of: ' + parent.title),
  dl.length > 0 && h('div', { class: 'hint' + (open.length ? ' dep-open' : '') },
    (open.length ? 'waits for: ' : 'after: ') + dl.map(d => d.title + ' (' + depState(d) + ')').join(', ')),
  t.blocked_reason && t.status === 'blocked' && h('div', { class: 'hint' }, 'blocked: ' + t.blocked_reason),
  t.problem && h('div', { class: 'hint problem' }, t.problem),
  t.conflict && h('div', { class: 'hint problem' }, 'conflict: ' + t.conflict));
}

// cardKey: Enter or Space opens a card; the arrows move between cards and columns.
function cardKey(e, id) {
  const cardEl = e.currentTarget;
  const go = el => { if (el) { e.preventDefault(); el.focus(); } };
  switch (e.key) {
    case 'Enter': case ' ': e.preventDefault(); selectTask(id); break;
    case 'ArrowDown': go(cardEl.nextElementSibling); break;
    case 'ArrowUp': go(cardEl.previousElementSibling); break;
    case 'ArrowRight': case 'ArrowLeft': {
      let col = cardEl.closest('.column');
      do col = e.key === 'ArrowRight' ? col.nextElementSibling : col.previousElementSibling;
      while (col && !col.querySelector('.card'));
      go(col && col.querySelector('.card'));
      break;
    }
  }
}

function selectTask(id) {
  const prev = selTask;
  if (prev !== id) editing = null;
  creating = false;
  selTask = id;
  setHash('task=' + short(id));
  const touched = new Set();
  for (const x of [prev, id]) { const t = tasks.get(x); if (t) touched.add(column(t)); }
  renderBoard(touched);
  renderDetails(true);
}

function selectAgent(id) {
  chatAgent = id;
  setHash('chat=' + id);
  renderAgents();
  renderChat(true);
}

function showDrawer() {
  const d = document.getElementById('drawer');
  d.hidden = document.getElementById('details').hidden && document.getElementById('chat').hidden;
}

function closeDrawer() {
  const id = selTask;
  closeDetails(); closeChat();
  // The card is redrawn without its selection: give the focus to the new one.
  const back = id && document.querySelector('.card[data-task-id="' + CSS.escape(id) + '"]');
  if (back) back.focus();
}

function closeDetails() {
  const prev = selTask;
  selTask = null; editing = null; creating = false;
  if (location.hash.startsWith('#task=')) setHash(chatAgent ? 'chat=' + chatAgent : '');
  const pane = document.getElementById('details');
  pane.hidden = true; pane.dataset.key = '';
  showDrawer();
  const t = tasks.get(prev);
  if (t) renderBoard(new Set([column(t)]));
}

function closeChat() {
  chatAgent = null;
  if (location.hash.startsWith('#chat=')) setHash(selTask ? 'task=' + short(selTask) : '');
  const pane = document.getElementById('chat');
  pane.hidden = true; pane.dataset.key = '';
  showDrawer();
  if (S) renderAgents();
}

// ---- side: attention, agents -----------------------------------------------------------

function renderAttention() {
  const ul = document.getElementById('attention');
  const n = S.attention_total || S.attention.length || '';
  document.getElementById('attention-count').textContent = n;
  document.getElementById('attention-badge').textContent = n;
  document.getElementById('tab-attention-count').textContent = n;
  if (S.attention.length === 0) {
    ul.replaceChildren(h('li', { class: 'empty', style: 'background:none' }, 'Nothing waits for you.'));
    return;
  }
  const messages = S.attention.filter(a => a.kind === 'message').length;
  const items = S.attention.map(a => {
    const go = () => { if (a.kind === 'message') selectAgent(a.agent_id); else if (a.task_id) selectTask(a.task_id); };
    return h('li', { class: 'k-' + a.kind, tabindex: '0', dataset: { kind: a.kind, taskId: a.task_id || '' }, onclick: go,
      onkeydown: e => { if (e.target === e.currentTarget && (e.key === 'Enter' || e.key === ' ')) { e.preventDefault(); go(); } } },
    h('span', { class: 'kind' }, a.kind.replace('_', ' ')), a.task_id && tasks.has(a.task_id) ? h('span', { class: 'tid' }, short(a.task_id) + ' ') : '', shortText(a.text),
    a.kind === 'approval' && h('div', { class: 'acts' },
      h('button', { class: 'primary approve', onclick: e => { e.stopPropagation(); act('approved', '/api/tasks/' + a.task_id + '/approve'); } }, 'Approve'),
      h('button', { class: 'danger reject', onclick: e => { e.stopPropagation(); reject(a.task_id); } }, 'Reject')),
    a.kind === 'landing' && landActs(a.task_id, a.machine));
  });
  if (S.attention_total > S.attention.length) {
    items.push(h('li', { class: 'more', style: 'background:none' }, '… and ' + (S.attention_total - S.attention.length) +
      ' more: the Needs me filter shows every task among them'));
  }
  if (messages > 0) {
    // As `aipm chat log` with no agent: every unread message counts as read.
    items.push(h('li', { class: 'mark-read', style: 'background:none' },
      h('button', { class: 'read-all', onclick: () => act('messages marked read', '/api/inbox/read') }, 'Mark ' + messages + ' message' + (messages > 1 ? 's' : '') + ' read')));
  }
  ul.replaceChildren(...items);
}

// landActs are the two ways out of a landing that waits for a person, as `aipm land
// retry|abandon`: the item goes once the queue's write reaches the page. A landing whose
// worktree is in another machine's clone (elsewhere) can be retried only there.
function landActs(id, elsewhere) {
  return h('div', { class: 'acts' },
    !elsewhere && h('button', { class: 'primary retry', title: 'one more attempt, from its branch as it is (aipm land retry)',
      onclick: e => { e.stopPropagation(); act('queued again', '/api/tasks/' + encodeURIComponent(id) + '/land/retry'); } }, 'Retry'),
    h('button', { class: 'danger abandon', title: 'its code never lands; its branch stays (aipm land abandon)',
      onclick: e => { e.stopPropagation(); abandon(id); } }, 'Abandon'));
}

function abandon(id) {
  if (!confirm('Give up the code of ' + short(id) + ' ' + taskTitle(id) + '? It never lands; its worktree is removed, its branch stays.')) return;
  act('abandoned', '/api/tasks/' + encodeURIComponent(id) + '/land/abandon');
}

function reject(id) {
  const reason = prompt('Why reject it? (the assignee and the requester are told)');
  if (reason === null) return;
  act('rejected', '/api/tasks/' + id + '/reject', { reason });
}

function taskTitle(id) {
  const t = tasks.get(id);
  return t ? t.title : id;
}

function renderAgents() {
  const ul = document.getElementById('agents');
  ul.replaceChildren(...S.agents.map(a => {
    const doing = a.sessions.map(s => h('div', { class: 'doing' },
      h('span', { class: 's' }, s.purpose + ' session'),
      s.purpose === 'task' ? (s.task_id ? short(s.task_id) + ' ' + taskTitle(s.task_id) : '') : '',
      s.waiting ? ' — waiting (' + s.waiting + ')' : (s.workflow ? ' — ' + s.workflow.replaceAll('_', ' ') : '')));
    return h('li', { class: a.id === chatAgent ? 'selected' : '', tabindex: '0', dataset: { agentId: a.id }, onclick: () => selectAgent(a.id),
      onkeydown: e => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); selectAgent(a.id); } } },
    h('div', { class: 'who' }, h('b', {}, a.name || a.id), a.name && a.name !== a.id && h('span', { class: 'role' }, a.id),
      h('span', { class: 'role' }, [a.hierarchy, a.role].filter(Boolean).join(' · ')),
      a.unread > 0 && h('span', { class: 'unread' }, a.unread),
      h('a', { class: 'permalink', href: '#chat=' + encodeURIComponent(a.id), title: 'a link to the chat with ' + a.id }, 'link')),
    a.type === 'human' ? h('div', { class: 'idle' }, 'human') :
      (doing.length ? doing : h('div', { class: 'idle' }, a.status === 'active' ? 'no live session' : a.status)));
  }));
}

// fmtTime shows a time in the browser's zone, with its offset.
function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  const pad = n => String(n).padStart(2, '0');
  const off = -d.getTimezoneOffset();
  const sign = off < 0 ? '-' : '+';
  return d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + ' ' + pad(d.getHours()) + ':' + pad(d.getMinutes()) +
    ':' + pad(d.getSeconds()) + ' ' + sign + pad(Math.floor(Math.abs(off) / 60)) + pad(Math.abs(off) % 60);
}

// ---- details and chat: beside or over the board, only when asked for -------------------

function paneHead(title, close, link) {
  return h('div', { class: 'pane-head' }, h('h2', { tabindex: '-1' }, title,
    link && h('a', { class: 'permalink', href: '#' + link, title: 'a link to this: copy it, or open it in another tab' }, 'link')),
    h('button', { class: 'close', type: 'button', 'aria-label': 'close ' + title, title: 'close (Esc)', onclick: close }, '×'));
}

function historyText(e) {
  if (e.changes && e.changes.length) {
    return ' ' + e.changes.map(c => c.field + ' ' + (c.field === 'description' || c.field === 'title' ? JSON.stringify(c.from.length > 60 ? c.from.slice(0, 59) + '…' : c.from) : c.from || '—') +
      ' → ' + (c.field === 'description' || c.field === 'title' ? JSON.stringify(c.to.length > 60 ? c.to.slice(0, 59) + '…' : c.to) : c.to || '—')).join('; ');
  }
  return (e.from || e.to) ? ' ' + (e.from || '—') + ' → ' + (e.to || '—') : '';
}

async function renderDetails(force) {
  const pane = document.getElementById('details');
  if (!selTask) return;
  const id = selTask;
  let d;
  try {
    d = await api('/api/tasks/' + encodeURIComponent(id));
  } catch (e) {
    if (id !== selTask) return;
    pane.replaceChildren(paneHead('Task', closeDetails), h('p', { class: 'empty' }, 'Task ' + id + ': ' + (e.message || e.error)));
    pane.hidden = false; showDrawer();
    return;
  }
  if (id !== selTask) return;
  // The Edit form keeps what is typed in it: the pane is drawn again once it is saved
  // or cancelled.
  if (editing === id && !force && pane.querySelector('form.edit')) return;
  const key = JSON.stringify([d, [...openLogs], short(d.id), editing === id]);
  if (!force && pane.dataset.key === key) return;
  pane.dataset.key = key;
  // Keep what the human typed or chose across redraws.
  const oldReason = pane.querySelector('input[name=reason]');
  const typed = oldReason && oldReason.dataset.task === d.id ? oldReason.value : '';
  const hadFocus = oldReason && document.activeElement === oldReason;
  const ref = id => h('a', { class: 'ref', href: '#', onclick: e => { e.preventDefault(); selectTask(id); } }, short(id) + ' ' + taskTitle(id));
  // The moves the table lists, each allowed or refused by the store's rules now; a
  // refused one is shown with its reason, not offered.
  const allMoves = d.moves || [];
  const moves = allMoves.filter(m => m.ok).map(m => m.status);
  const refused = allMoves.filter(m => !m.ok);
  const statusSel = h('select', { name: 'status', 'aria-label': 'new status', disabled: moves.length === 0 },
    h('option', { value: '' }, moves.length ? 'Move to…' : allMoves.length ? 'no move allowed now' : 'finished'),
    allMoves.map(m => h('option', { value: m.status, disabled: !m.ok }, m.status.replace('_', ' ') + (m.ok ? '' : ' (not now)'))));
  const reason = h('input', { name: 'reason', placeholder: 'reason (for blocked, cancelled)', size: 22, 'aria-label': 'reason', dataset: { task: d.id } });
  reason.value = typed;
  const assignSel = h('select', { name: 'assignee', 'aria-label': 'assignee' }, h('option', { value: '' }, '— unassigned —'),
    S.agents.filter(a => a.type === 'ai').map(a => h('option', { value: a.id, selected: a.id === d.assignee_id }, a.id)));
  const kb = n => (n / 1024).toFixed(1) + ' KB';
  const runs = d.runs.map(r => {
    const li = h('li', {}, h('span', { class: 't' }, fmtTime(r.started_at)), r.agent_id + ' ', h('b', {}, r.status),
      r.completed_at ? ' in ' + r.duration_seconds.toFixed(1) + 's' : ' (running)',
      r.exit_code !== null && r.exit_code !== undefined ? ', exit code ' + r.exit_code : '',
      r.tool_calls ? ', ' + r.tool_calls + ' tool calls (' + kb(r.request_bytes) + ' requests, ' + kb(r.result_bytes) + ' results)' : '',
      r.summary ? ' — ' + r.summary : '', ' ',
      h('a', { class: 'ref', href: '#', onclick: e => { e.preventDefault(); openLogs.has(r.id) ? openLogs.delete(r.id) : openLogs.add(r.id); renderDetails(true); } },
        openLogs.has(r.id) ? 'hide log' : 'log'));
    if (openLogs.has(r.id)) {
      const pre = h('pre', { class: 'log' }, 'reading…');
      li.append(pre);
      api('/api/runs/' + r.id + '/log').then(l => {
        pre.textContent = (l.truncated ? '… (last ' + l.lines.length + ' of ' + l.total_lines + ' lines)\n' : '') +
          (l.lines.length ? l.lines.join('\n') : '(no output captured)');
      }).catch(e => { pre.textContent = e.message || e.error; });
    }
    return li;
  });
  const dependents = [...(deps.get(d.id) || [])].sort();
  const scroll = pane.scrollTop;
  // Through h's rules: a part that is absent (false, null, "") is left out, not shown.
  pane.replaceChildren(...h('div', {},
    paneHead('Task ' + short(d.id), closeDetails, 'task=' + short(d.id)),
    h('h3', {}, d.title),
    h('dl', { class: 'facts' },
      h('dt', {}, 'id'), h('dd', { class: 'mono' }, d.id),
      h('dt', {}, 'status'), h('dd', {}, h('span', { class: 'pill st-' + d.status }, d.status),
        d.approval !== 'approved' ? ' ' + d.approval.replace('_', ' ') : '', d.landing && ' ', landBadge(landRow(d.landing))),
      h('dt', {}, 'priority'), h('dd', {}, d.priority),
      h('dt', {}, 'assignee'), h('dd', {}, d.assignee_id || '—'),
      d.parent_id && [h('dt', {}, 'part of'), h('dd', {}, ref(d.parent_id))],
      d.dependencies && d.dependencies.length > 0 && [h('dt', {}, 'after'), h('dd', {}, d.dependencies.map((id, i) => [i ? ', ' : '', ref(id), ' (' + (tasks.has(id) ? depState(tasks.get(id)) : '?') + ')']))],
      dependents.length > 0 && [h('dt', {}, 'needed by'), h('dd', {}, dependents.map((id, i) => [i ? ', ' : '', ref(id), ' (' + depState(tasks.get(id)) + ')']))],
      d.rework_of && [h('dt', {}, 'rework of'), h('dd', {}, ref(d.rework_of))],
      d.blocked_reason && [h('dt', {}, 'blocked'), h('dd', {}, d.blocked_reason)],
      d.requester_id && [h('dt', {}, 'requested by'), h('dd', {}, d.requester_id)],
      d.completion_summary && [h('dt', {}, 'result'), h('dd', {}, d.completion_result + ': ' + d.completion_summary)]),
    d.description && h('div', { class: 'desc' }, d.description),
    h('div', { class: 'actions' },
      statusSel, reason,
      h('button', { class: 'primary set-status', disabled: moves.length === 0, onclick: async () => {
        if (!statusSel.value) { toast('choose the status to move to', true); return; }
        if (await act('status changed', '/api/tasks/' + d.id + '/status', { status: statusSel.value, reason: reason.value })) reason.value = '';
      } }, 'Set status'),
      assignSel,
      h('button', { class: 'assign', onclick: () => act('assigned', '/api/tasks/' + d.id + '/assign', { assignee: assignSel.value }) }, 'Assign'),
      d.approval === 'pending_approval' && [
        h('button', { class: 'primary approve', onclick: () => act('approved', '/api/tasks/' + d.id + '/approve') }, 'Approve'),
        h('button', { class: 'danger reject', onclick: () => reject(d.id) }, 'Reject')],
      !['done', 'cancelled'].includes(d.status) && h('button', { class: 'edit', title: 'edit its title, description, priority and dependencies (aipm task edit)',
        onclick: () => { editing = d.id; renderDetails(true); } }, 'Edit')),
    refused.length > 0 && h('ul', { class: 'refused', 'aria-label': 'moves not allowed now' }, refused.map(m => h('li', { dataset: { status: m.status } },
      h('b', {}, m.status.replace('_', ' ')), ': ' + shortText(m.reason) + (m.hint ? ' — ' + shortText(m.hint) : '')))),
    editing === d.id && editForm(d),
    d.landing && codeSection(d, ref),
    h('h2', {}, 'Runs'),
    d.failed_starts.length > 0 && h('ul', { class: 'runs failed-starts' }, d.failed_starts.map(sp => h('li', {},
      'start of ' + sp.agent_id + ' failed: ' + sp.outcome + (sp.exit_code !== null ? ' (exit code ' + sp.exit_code + ')' : '') + '; log ' + sp.log_path))),
    runs.length ? h('ul', { class: 'runs' }, runs) : !d.failed_starts.length && h('p', { class: 'empty' }, 'No runs yet.'),
    h('h2', {}, 'History'),
    d.history_total > d.history.length && h('p', { class: 'empty' }, 'The last ' + d.history.length + ' of ' + d.history_total + ' changes (`aipm task show ' + d.id + ' --json` has them all).'),
    h('ul', { class: 'history' }, d.history.slice().reverse().map(e => h('li', {},
      h('span', { class: 't' }, fmtTime(e.at)), e.actor + (e.machine ? ' on ' + e.machine : '') + ' via ' + e.via + ': ' + e.change, shortText(historyText(e)),
      e.reason ? ' (' + shortText(e.reason) + ')' : '')))).childNodes);
  pane.scrollTop = scroll;
  if (hadFocus) reason.focus();
  const wasHidden = pane.hidden;
  pane.hidden = false;
  showDrawer();
  // The focus goes to the pane's heading (not a button a key still down could press).
  if (force && wasHidden) pane.querySelector('.pane-head h2').focus();
}

// codeSection is where a task's code is: its branch, its landing, what went wrong, the way
// out when it waits for a person, and what it changes (git's summary, and the patch on
// request). The diff is read again only when the landing changed, or on Refresh.
function codeSection(d, ref) {
  const l = d.landing;
  const box = h('div', { class: 'changes' }, h('p', { class: 'empty' }, 'reading what it changes…'));
  const key = JSON.stringify([d.id, l]);
  const show = answer => {
    box.replaceChildren(...changesView(d.id, answer, () => { diffCache = null; renderDetails(true); }));
  };
  // One read per landing, however often the pane redraws meanwhile; once read, drawn at
  // once, so that the pane keeps its height and its scroll across redraws.
  if (!diffCache || diffCache.key !== key) {
    const c = diffCache = { key, answer: null,
      reading: api('/api/tasks/' + encodeURIComponent(d.id) + '/diff').catch(e => ({ error: e.message || e.error || String(e) })) };
    c.reading.then(a => { c.answer = a; });
  }
  if (diffCache.answer) show(diffCache.answer);
  else diffCache.reading.then(show);
  return [
    h('h2', {}, 'Code'),
    h('dl', { class: 'facts code' },
      h('dt', {}, 'landing'), h('dd', {}, landBadge(landRow(l))),
      h('dt', {}, 'branch'), h('dd', { class: 'mono' }, l.branch + ' from ' + l.target + ' at ' + (l.base || '').slice(0, 10)),
      l.landed_commit && [h('dt', {}, 'landed'), h('dd', { class: 'mono' }, l.landed_commit + ' on ' + l.target + (l.landed_at ? ' at ' + fmtTime(l.landed_at) : ''))],
      l.attempts > 0 && [h('dt', {}, 'failed attempts'), h('dd', {}, String(l.attempts))],
      l.rework_task_id && [h('dt', {}, 'rework'), h('dd', {}, ref(l.rework_task_id))]),
    l.detail && h('pre', { class: 'log land-detail' }, l.detail),
    l.needs_human && h('div', { class: 'actions needs-you' }, h('span', {}, 'Its code did not land: '),
      landActs(d.id, ((S.attention || []).find(a => a.kind === 'landing' && a.task_id === d.id) || {}).machine)),
    box];
}

function changesView(id, a, refresh) {
  const again = h('a', { class: 'ref refresh', href: '#', onclick: e => { e.preventDefault(); refresh(); } }, 'refresh');
  if (a.error) return [h('p', { class: 'empty' }, 'What it changes: ' + a.error + ' '), again];
  if (!a.stat && !a.diff) return [h('p', { class: 'empty' }, 'No changes. ', again)];
  const pre = h('pre', { class: 'diff' });
  const fill = () => {
    if (pre.childNodes.length) return;
    // Each line is text in a span of its kind; nothing of the patch is parsed as HTML.
    pre.append(...a.diff.split('\n').map(line => h('span', { class: line.startsWith('+') && !line.startsWith('+++') ? 'add'
      : line.startsWith('-') && !line.startsWith('---') ? 'del' : line.startsWith('@@') ? 'hunk' : line.startsWith('diff ') ? 'file' : '' }, line + '\n')));
  };
  const open = openDiffs.has(id);
  if (open) fill();
  const kb = n => (n / 1024).toFixed(1) + ' KB';
  return [
    h('p', { class: 'changed' }, 'Changed files ', again),
    h('pre', { class: 'stat' }, a.stat),
    a.diff && h('details', { class: 'diff', open: open, ontoggle: e => {
      if (e.currentTarget.open) { openDiffs.add(id); fill(); } else openDiffs.delete(id);
    } }, h('summary', {}, 'Diff (' + kb(a.bytes) + ')'),
    a.truncated && h('p', { class: 'cut' }, 'The diff is ' + kb(a.bytes) + '; this shows its first ' + kb(a.diff.length) + '. Git shows it all (aipm task show gives the branch).'),
    pre)];
}

async function renderChat(force) {
  const pane = document.getElementById('chat');
  if (!chatAgent) return;
  const who = chatAgent;
  const agent = S.agents.find(a => a.id === who);
  let c;
  try {
    c = await api('/api/chat/' + encodeURIComponent(who));
  } catch (e) {
    if (who !== chatAgent) return;
    pane.replaceChildren(paneHead('Chat', closeChat), h('p', { class: 'empty' }, 'Chat with ' + who + ': ' + (e.message || e.error)));
    pane.hidden = false; showDrawer();
    return;
  }
  if (who !== chatAgent) return;
  const key = JSON.stringify([c, agent]);
  if (!force && pane.dataset.key === key) return;
  pane.dataset.key = key;
  // Keep what the human is typing across redraws.
  const old = pane.querySelector('textarea');
  const draft = old && old.dataset.agent === who ? old.value : '';
  const focused = old && document.activeElement === old;
  const text = h('textarea', { name: 'message', 'aria-label': 'message to ' + who, dataset: { agent: who }, placeholder: 'Message ' + who + ' (Enter sends, Shift+Enter for a new line)' });
  text.value = draft;
  const send = async e => {
    e.preventDefault();
    const content = text.value.trim();
    if (!content) return;
    if (await act('sent to ' + who, '/api/chat/' + encodeURIComponent(who) + '/send', { content })) text.value = '';
  };
  text.addEventListener('keydown', e => { if (e.key === 'Enter' && !e.shiftKey) send(e); });
  const msgs = h('div', { id: 'messages' }, c.messages.length ? c.messages.map(m => h('div', {
    class: 'msg' + (m.senderId === c.human ? ' mine' : ''), dataset: { messageId: m.id },
  }, h('span', { class: 'at' }, m.senderId + ' · ' + fmtTime(m.createdAt) + (m.relatedTaskId ? ' · ' + short(m.relatedTaskId) + ' ' + taskTitle(m.relatedTaskId) : '')), m.content))
    : h('p', { class: 'empty' }, 'No messages yet.'));
  const head = paneHead('Chat with ' + who, closeChat, 'chat=' + who);
  if (agent && agent.type === 'ai') {
    head.insertBefore(agent.chat_open
      ? h('button', { class: 'close-chat', title: 'its chat session is told to exit', onclick: () => act('chat closed', '/api/chat/' + who + '/close') }, 'Close chat')
      : h('button', { class: 'open-chat', title: 'gives it chat work: aipm run starts its chat session', onclick: () => act('chat opened', '/api/chat/' + who + '/open') }, 'Open chat'),
    head.lastChild);
  }
  pane.replaceChildren(head, msgs,
    h('form', { onsubmit: send }, text, h('button', { class: 'primary send', type: 'submit' }, 'Send')));
  msgs.scrollTop = msgs.scrollHeight;
  pane.hidden = false;
  showDrawer();
  if (focused || force) text.focus();
  if (agent && agent.unread > 0) {
    api('/api/chat/' + encodeURIComponent(who) + '/read', {}).catch(() => {});
  }
}

// ---- New task and Edit: aipm task add and aipm task edit ------------------------------

function field(text, el) { return h('label', { class: 'field' }, h('span', {}, text), el); }
function idList(v) { return v.split(/[\s,]+/).filter(Boolean); }
function prioSelect(cur) {
  return h('select', { name: 'priority', 'aria-label': 'priority' }, ['low', 'medium', 'high', 'urgent'].map(p => h('option', { value: p, selected: p === cur }, p)));
}

// editForm changes a task's title, description, priority and dependencies: what changed
// goes to the store in one write (EditTask), which refuses what aipm task edit refuses.
function editForm(d) {
  const title = h('input', { name: 'title', 'aria-label': 'title', required: true, maxlength: 200 });
  title.value = d.title;
  const desc = h('textarea', { name: 'description', 'aria-label': 'description', rows: 4 });
  desc.value = d.description || '';
  const prio = prioSelect(d.priority);
  const depsIn = h('input', { name: 'dependencies', 'aria-label': 'depends on', placeholder: 'task ids: tsk_8001 tsk_8002' });
  const cur = (d.dependencies || []).map(short).join(' ');
  depsIn.value = cur;
  const done = () => { editing = null; renderDetails(true); };
  const form = h('form', { class: 'edit task-form', 'aria-label': 'edit task ' + short(d.id), onsubmit: async e => {
    e.preventDefault();
    const body = {};
    if (title.value !== d.title) body.title = title.value;
    if (desc.value !== (d.description || '')) body.description = desc.value;
    if (prio.value !== d.priority) body.priority = prio.value;
    if (idList(depsIn.value).join(' ') !== cur) body.dependencies = idList(depsIn.value);
    if (!Object.keys(body).length) { done(); return; }
    if (await act('saved ' + short(d.id), '/api/tasks/' + encodeURIComponent(d.id) + '/edit', body)) done();
  } },
  field('Title', title), field('Description', desc), field('Priority', prio), field('Depends on', depsIn),
  h('div', { class: 'form-acts' }, h('button', { class: 'primary save', type: 'submit' }, 'Save'),
    h('button', { class: 'cancel', type: 'button', onclick: done }, 'Cancel')));
  setTimeout(() => { if (document.activeElement === document.body || !document.activeElement) title.focus(); }, 0);
  return form;
}

// openNew shows the New task form in the details pane (key n): aipm task add, as the
// acting human. Once created, the pane shows the new task.
function openNew() {
  if (!S) return;
  const prev = tasks.get(selTask);
  selTask = null; editing = null; creating = true;
  if (location.hash.startsWith('#task=')) setHash(chatAgent ? 'chat=' + chatAgent : '');
  const pane = document.getElementById('details');
  pane.dataset.key = '';
  const title = h('input', { name: 'title', 'aria-label': 'title', required: true, maxlength: 200, placeholder: 'What to do, in a few words' });
  const desc = h('textarea', { name: 'description', 'aria-label': 'description', rows: 4, placeholder: 'Details (optional)' });
  const prio = prioSelect('medium');
  const status = h('select', { name: 'status', 'aria-label': 'status' }, ['backlog', 'todo'].map(s => h('option', { value: s }, s)));
  const assignee = h('select', { name: 'assignee', 'aria-label': 'assignee' }, h('option', { value: '' }, '— unassigned —'),
    S.agents.filter(a => a.status === 'active').map(a => h('option', { value: a.id }, a.id)));
  const parent = h('input', { name: 'parent', 'aria-label': 'part of', placeholder: 'parent task id (optional)' });
  const depsIn = h('input', { name: 'dependencies', 'aria-label': 'depends on', placeholder: 'task ids: tsk_8001 tsk_8002' });
  const form = h('form', { class: 'new task-form', 'aria-label': 'new task', onsubmit: async e => {
    e.preventDefault();
    const body = { title: title.value, description: desc.value, priority: prio.value, status: status.value,
      assignee: assignee.value, parent: parent.value.trim(), dependencies: idList(depsIn.value) };
    try {
      const t = await api('/api/tasks', body);
      toast('created ' + t.title);
      if (creating) selectTask(t.id);
    } catch (err) {
      toast((err.message || err.error || String(err)) + (err.hint ? ' — ' + err.hint : ''), true);
    }
  } },
  field('Title', title), field('Description', desc), field('Priority', prio), field('Status', status), field('Assignee', assignee),
  field('Part of', parent), field('Depends on', depsIn),
  h('div', { class: 'form-acts' }, h('button', { class: 'primary create', type: 'submit' }, 'Create task'),
    h('button', { class: 'cancel', type: 'button', onclick: closeDetails }, 'Cancel')));
  pane.replaceChildren(paneHead('New task', closeDetails), form);
  pane.hidden = false;
  showDrawer();
  if (prev) renderBoard(new Set([column(prev)]));
  title.focus();
}

// ---- sections on a phone: the board, Needs you, the agents and the chat, one tap each --

function setTab(tab) {
  if (tab === 'chat') {
    const who = chatAgent || (S && (S.agents.find(a => a.type === 'ai') || S.agents[0] || {}).id);
    if (!who) { tab = 'agents'; } else { document.body.dataset.tab = 'chat'; markTabs(); selectAgent(who); return; }
  }
  if (!document.getElementById('drawer').hidden) closeDrawer();
  document.body.dataset.tab = tab;
  markTabs();
  window.scrollTo(0, 0);
}
function markTabs() {
  for (const b of document.querySelectorAll('#tabs button')) b.setAttribute('aria-current', String(b.dataset.tab === document.body.dataset.tab));
}

// ---- drag and drop between columns ----------------------------------------------------
//
// A card dragged with the mouse (or a pen) shows which columns take it, by the store's
// rules for this task now (its moves), and the reason on those that do not; dropped on
// one that does, it is the status change of the Move to… menu.

let drag = null, dragClick = false;
function colAt(x, y) {
  const el = document.elementFromPoint(x, y);
  return el && el.closest('#board .column');
}
function setupDrag() {
  const board = document.getElementById('board');
  board.addEventListener('pointerdown', e => {
    if (e.button !== 0 || e.pointerType === 'touch') return;
    const c = e.target.closest('.card');
    if (!c || e.target.closest('button, a, input, select')) return;
    drag = { id: c.dataset.taskId, el: c, x: e.clientX, y: e.clientY, on: false };
  });
  document.addEventListener('pointermove', e => {
    if (!drag) return;
    if (!(e.buttons & 1)) { const d = drag; drag = null; if (d.on) endDrag(d); return; } // released outside the page
    if (!drag.on) {
      if (Math.hypot(e.clientX - drag.x, e.clientY - drag.y) < 6) return;
      startDrag();
    }
    drag.ghost.style.transform = 'translate(' + (e.clientX - drag.x) + 'px, ' + (e.clientY - drag.y) + 'px)';
    const col = colAt(e.clientX, e.clientY);
    for (const el of document.querySelectorAll('#board .column.drop-here')) if (el !== col) el.classList.remove('drop-here');
    if (col) col.classList.add('drop-here');
  });
  document.addEventListener('pointerup', e => {
    const d = drag;
    drag = null;
    if (!d || !d.on) return;
    dragClick = true; // the click that ends a drag opens nothing
    setTimeout(() => { dragClick = false; }, 0);
    endDrag(d);
    dropOn(d, colAt(e.clientX, e.clientY));
  });
  document.addEventListener('keydown', e => { if (e.key === 'Escape' && drag) { const d = drag; drag = null; if (d.on) endDrag(d); } }, true);
  board.addEventListener('click', e => { if (dragClick) { e.stopPropagation(); e.preventDefault(); dragClick = false; } }, true);
}
function startDrag() {
  const d = drag;
  d.on = true;
  const r = d.el.getBoundingClientRect();
  d.ghost = d.el.cloneNode(true);
  d.ghost.classList.add('ghost');
  Object.assign(d.ghost.style, { left: r.left + 'px', top: r.top + 'px', width: r.width + 'px' });
  document.body.append(d.ghost);
  d.el.classList.add('dragged');
  document.body.classList.add('dragging');
  const from = column(tasks.get(d.id) || { status: '' });
  d.moves = api('/api/tasks/' + encodeURIComponent(d.id) + '/moves').catch(e => { toast(e.message || e.error, true); return []; });
  d.moves.then(ms => {
    if (drag !== d) return;
    for (const col of document.querySelectorAll('#board .column')) {
      const st = col.dataset.status;
      if (st === from) continue;
      const m = ms.find(m => m.status === st);
      col.classList.add(m && m.ok ? 'drop-ok' : 'drop-no');
      col.dataset.dropWhy = m ? (m.ok ? '' : shortText(m.reason)) : 'a ' + from.replace('_', ' ') + ' task cannot move to ' + st.replace('_', ' ');
    }
    document.body.dataset.dragReady = d.id;
  });
}
function endDrag(d) {
  if (d.ghost) d.ghost.remove();
  d.el.classList.remove('dragged');
  document.body.classList.remove('dragging');
  delete document.body.dataset.dragReady;
  for (const col of document.querySelectorAll('#board .column')) {
    col.classList.remove('drop-ok', 'drop-no', 'drop-here');
    delete col.dataset.dropWhy;
  }
}
async function dropOn(d, col) {
  const t = tasks.get(d.id);
  if (!col || !t || col.dataset.status === column(t)) return;
  const to = col.dataset.status;
  const ms = await d.moves;
  const m = ms.find(m => m.status === to);
  if (!m) { toast('a ' + t.status.replace('_', ' ') + ' task cannot move to ' + to.replace('_', ' '), true); return; }
  if (!m.ok) { toast(m.reason + (m.hint ? ' — ' + m.hint : ''), true); return; }
  let reason = '';
  if (to === 'blocked' || to === 'cancelled') {
    reason = prompt((to === 'blocked' ? 'Why is ' : 'Why cancel ') + short(d.id) + ' ' + t.title + '?');
    if (reason === null) return;
  }
  act(short(d.id) + ' moved to ' + to.replace('_', ' '), '/api/tasks/' + encodeURIComponent(d.id) + '/status', { status: to, reason });
}

setupToolbar();
setupDrag();
connect();
