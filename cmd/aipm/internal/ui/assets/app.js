// The page of `aipm ui`: it reads the state from the server and redraws whenever the
// server's event stream says something under .ai-pm/ changed. It never polls.
'use strict';

const token = new URLSearchParams(location.search).get('token') || '';
let S = null;           // the last state read
let selTask = null;     // id of the task in the details pane
let chatAgent = null;   // id of the agent in the chat pane
const openLogs = new Set(); // runs whose log is shown

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
  const out = await r.json().catch(() => ({ error: 'bad_response', message: 'the server answered ' + r.status }));
  if (!r.ok) throw out;
  return out;
}

let toastTimer;
function toast(text, error) {
  const t = document.getElementById('toast');
  t.textContent = text;
  t.className = error ? 'error' : '';
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, error ? 8000 : 3000);
}

// act runs a button's request and reports a refusal with its message and hint. The page
// redraws from the change event the write causes, not from the answer.
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

// refresh re-reads the state and the open panes; calls while one runs merge into one more.
let running = false, again = false;
async function refresh() {
  if (running) { again = true; return; }
  running = true;
  try {
    do {
      again = false;
      try {
        const next = await api('/api/state');
        // Redraw only what changed, so that a change elsewhere under .ai-pm/ (an agent's
        // session touched, say) does not replace what the human is about to click.
        if (JSON.stringify(next) !== JSON.stringify(S)) {
          S = next;
          renderHeader(); renderBoard(); renderAttention(); renderAgents();
        }
        await renderDetails();
        await renderChat();
        document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
      } catch (e) {
        toast('reading the project failed: ' + (e.message || e), true);
      }
    } while (again);
  } finally {
    running = false;
  }
}

function connect() {
  const es = new EventSource('/events?token=' + encodeURIComponent(token));
  const live = document.getElementById('live');
  es.addEventListener('hello', () => { live.className = 'live on'; live.textContent = 'live'; refresh(); });
  es.addEventListener('change', () => refresh());
  es.onerror = () => { live.className = 'live off'; live.textContent = 'reconnecting…'; };
}

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

// treeOrder lists tasks depth first (parents before their sub-tasks), with each one's depth.
function treeOrder(tasks) {
  const byID = new Map(tasks.map(t => [t.id, t]));
  const kids = new Map();
  const roots = [];
  for (const t of tasks) {
    if (t.parent_id && byID.has(t.parent_id)) {
      if (!kids.has(t.parent_id)) kids.set(t.parent_id, []);
      kids.get(t.parent_id).push(t);
    } else roots.push(t);
  }
  const out = [];
  const walk = (t, d) => { out.push([t, d]); for (const c of kids.get(t.id) || []) walk(c, d + 1); };
  roots.forEach(t => walk(t, 0));
  return out;
}

function taskTitle(id) {
  const t = S.tasks.find(x => x.id === id);
  return t ? t.title : id;
}

function renderBoard() {
  const board = document.getElementById('board');
  const byID = new Map(S.tasks.map(t => [t.id, t]));
  const order = treeOrder(S.tasks);
  const statuses = S.statuses.slice();
  if (S.tasks.some(t => t.problem)) statuses.push('invalid');
  const cols = statuses.map(st => {
    const items = order.filter(([t]) => st === 'invalid' ? !!t.problem : t.status === st && !t.problem);
    return h('div', { class: 'column st st-' + st, id: 'col-' + st, dataset: { status: st } },
      h('h2', {}, st.replace('_', ' '), h('span', { class: 'n' }, items.length)),
      items.map(([t, d]) => card(t, d, byID)));
  });
  board.replaceChildren(...cols);
}

function card(t, depth, byID) {
  const parent = t.parent_id && byID.get(t.parent_id);
  const deps = (t.dependencies || []).map(id => byID.get(id) || { id, title: id, status: '?' });
  const open = deps.filter(d => d.status !== 'done');
  return h('div', {
    class: 'card st-' + t.status + (t.id === selTask ? ' selected' : ''),
    style: 'margin-left:' + Math.min(depth, 6) * 14 + 'px',
    dataset: { taskId: t.id }, onclick: () => selectTask(t.id),
  },
  h('div', { class: 'title' }, t.title),
  h('div', { class: 'meta' },
    h('span', {}, t.assignee_id ? '@' + t.assignee_id : 'unassigned'),
    h('span', { class: 'prio-' + t.priority }, t.priority),
    t.approval === 'pending_approval' && h('span', { class: 'pending' }, 'awaits approval')),
  parent && parent.status !== t.status && h('div', { class: 'hint' }, '↳ part of: ' + parent.title),
  deps.length > 0 && h('div', { class: 'hint' + (open.length ? ' dep-open' : '') },
    (open.length ? 'waits for: ' : 'after: ') + deps.map(d => d.title + ' (' + d.status.replace('_', ' ') + ')').join(', ')),
  t.blocked_reason && t.status === 'blocked' && h('div', { class: 'hint' }, 'blocked: ' + t.blocked_reason),
  t.problem && h('div', { class: 'hint problem' }, t.problem));
}

function selectTask(id) {
  selTask = id;
  renderBoard();
  renderDetails(true);
}

function selectAgent(id) {
  chatAgent = id;
  renderAgents();
  renderChat(true);
}

function renderAttention() {
  const ul = document.getElementById('attention');
  document.getElementById('attention-count').textContent = S.attention.length || '';
  if (S.attention.length === 0) {
    ul.replaceChildren(h('li', { class: 'empty', style: 'background:none' }, 'Nothing waits for you.'));
    return;
  }
  const messages = S.attention.filter(a => a.kind === 'message').length;
  const items = S.attention.map(a => {
    const go = () => { if (a.kind === 'message') selectAgent(a.agent_id); else if (a.task_id) selectTask(a.task_id); };
    return h('li', { class: 'k-' + a.kind, dataset: { kind: a.kind, taskId: a.task_id || '' }, onclick: go },
      h('span', { class: 'kind' }, a.kind.replace('_', ' ')), a.text,
      a.kind === 'approval' && h('div', { class: 'acts' },
        h('button', { class: 'primary approve', onclick: e => { e.stopPropagation(); act('approved', '/api/tasks/' + a.task_id + '/approve'); } }, 'Approve'),
        h('button', { class: 'danger reject', onclick: e => { e.stopPropagation(); reject(a.task_id); } }, 'Reject')));
  });
  if (messages > 0) {
    // As `aipm chat log` with no agent: every unread message counts as read.
    items.push(h('li', { class: 'mark-read', style: 'background:none' },
      h('button', { class: 'read-all', onclick: () => act('messages marked read', '/api/inbox/read') }, 'Mark ' + messages + ' message' + (messages > 1 ? 's' : '') + ' read')));
  }
  ul.replaceChildren(...items);
}

function reject(id) {
  const reason = prompt('Why reject it? (the assignee and the requester are told)');
  if (reason === null) return;
  act('rejected', '/api/tasks/' + id + '/reject', { reason });
}

function renderAgents() {
  const ul = document.getElementById('agents');
  ul.replaceChildren(...S.agents.map(a => {
    const doing = a.sessions.map(s => h('div', { class: 'doing' },
      h('span', { class: 's' }, s.purpose + ' session'),
      s.purpose === 'task' ? (s.task_id ? taskTitle(s.task_id) : '') : '',
      s.waiting ? ' — waiting (' + s.waiting + ')' : (s.workflow ? ' — ' + s.workflow.replaceAll('_', ' ') : '')));
    return h('li', { class: a.id === chatAgent ? 'selected' : '', dataset: { agentId: a.id }, onclick: () => selectAgent(a.id) },
      h('div', { class: 'who' }, h('b', {}, a.name || a.id), a.name && a.name !== a.id && h('span', { class: 'role' }, a.id),
        h('span', { class: 'role' }, [a.hierarchy, a.role].filter(Boolean).join(' · ')),
        a.unread > 0 && h('span', { class: 'unread' }, a.unread)),
      a.type === 'human' ? h('div', { class: 'idle' }, 'human') :
        (doing.length ? doing : h('div', { class: 'idle' }, a.status === 'active' ? 'no live session' : a.status)));
  }));
}

function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  return d.toISOString().replace('T', ' ').slice(0, 19);
}

async function renderDetails(force) {
  const pane = document.getElementById('details');
  if (!selTask) return;
  let d;
  try {
    d = await api('/api/tasks/' + encodeURIComponent(selTask));
  } catch (e) {
    pane.replaceChildren(h('p', { class: 'empty' }, 'Task ' + selTask + ': ' + (e.message || e.error)));
    return;
  }
  const key = JSON.stringify([d, [...openLogs], S.tasks.length]);
  if (!force && pane.dataset.key === key) return;
  pane.dataset.key = key;
  const ref = id => h('a', { class: 'ref', onclick: () => selectTask(id) }, taskTitle(id));
  const statusSel = h('select', { name: 'status' }, S.statuses.map(s => h('option', { value: s, selected: s === d.status }, s)));
  const reason = h('input', { name: 'reason', placeholder: 'reason (for blocked, cancelled)', size: 22 });
  const assignSel = h('select', { name: 'assignee' }, h('option', { value: '' }, '— unassigned —'),
    S.agents.filter(a => a.type === 'ai').map(a => h('option', { value: a.id, selected: a.id === d.assignee_id }, a.id)));
  const runs = d.runs.map(r => {
    const li = h('li', {}, h('span', { class: 't' }, fmtTime(r.started_at)), r.agent_id + ' ', h('b', {}, r.status),
      r.completed_at ? ' in ' + r.duration_seconds.toFixed(1) + 's' : ' (running)',
      r.exit_code !== null && r.exit_code !== undefined ? ', exit code ' + r.exit_code : '',
      r.summary ? ' — ' + r.summary : '', ' ',
      h('a', { class: 'ref', onclick: () => { openLogs.has(r.id) ? openLogs.delete(r.id) : openLogs.add(r.id); renderDetails(true); } },
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
  pane.replaceChildren(
    h('h3', {}, d.title),
    h('dl', { class: 'facts' },
      h('dt', {}, 'id'), h('dd', {}, d.id),
      h('dt', {}, 'status'), h('dd', {}, h('span', { class: 'pill st-' + d.status }, d.status),
        d.approval !== 'approved' ? ' ' + d.approval.replace('_', ' ') : ''),
      h('dt', {}, 'priority'), h('dd', {}, d.priority),
      h('dt', {}, 'assignee'), h('dd', {}, d.assignee_id || '—'),
      d.parent_id && [h('dt', {}, 'part of'), h('dd', {}, ref(d.parent_id))],
      d.dependencies && d.dependencies.length > 0 && [h('dt', {}, 'after'), h('dd', {}, d.dependencies.map((id, i) => [i ? ', ' : '', ref(id)]))],
      d.blocked_reason && [h('dt', {}, 'blocked'), h('dd', {}, d.blocked_reason)],
      d.requester_id && [h('dt', {}, 'requested by'), h('dd', {}, d.requester_id)],
      d.completion_summary && [h('dt', {}, 'result'), h('dd', {}, d.completion_result + ': ' + d.completion_summary)]),
    d.description && h('div', { class: 'desc' }, d.description),
    h('div', { class: 'actions' },
      statusSel, reason,
      h('button', { class: 'primary set-status', onclick: () => act('status changed', '/api/tasks/' + d.id + '/status', { status: statusSel.value, reason: reason.value }) }, 'Set status'),
      assignSel,
      h('button', { class: 'assign', onclick: () => act('assigned', '/api/tasks/' + d.id + '/assign', { assignee: assignSel.value }) }, 'Assign'),
      d.approval === 'pending_approval' && [
        h('button', { class: 'primary approve', onclick: () => act('approved', '/api/tasks/' + d.id + '/approve') }, 'Approve'),
        h('button', { class: 'danger reject', onclick: () => reject(d.id) }, 'Reject')]),
    h('h2', {}, 'Runs'),
    d.failed_starts.length > 0 && h('ul', { class: 'runs failed-starts' }, d.failed_starts.map(sp => h('li', {},
      'start of ' + sp.agent_id + ' failed: ' + sp.outcome + (sp.exit_code !== null ? ' (exit code ' + sp.exit_code + ')' : '') + '; log ' + sp.log_path))),
    runs.length ? h('ul', { class: 'runs' }, runs) : !d.failed_starts.length && h('p', { class: 'empty' }, 'No runs yet.'),
    h('h2', {}, 'History'),
    h('ul', { class: 'history' }, d.history.slice().reverse().map(e => h('li', {},
      h('span', { class: 't' }, fmtTime(e.at)), e.actor + ' via ' + e.via + ': ' + e.change,
      (e.from || e.to) ? ' ' + (e.from || '—') + ' → ' + (e.to || '—') : '',
      e.reason ? ' (' + e.reason + ')' : ''))));
}

async function renderChat(force) {
  const pane = document.getElementById('chat');
  if (!chatAgent) return;
  const agent = S.agents.find(a => a.id === chatAgent);
  let c;
  try {
    c = await api('/api/chat/' + encodeURIComponent(chatAgent));
  } catch (e) {
    pane.replaceChildren(h('p', { class: 'empty' }, 'Chat with ' + chatAgent + ': ' + (e.message || e.error)));
    return;
  }
  const key = JSON.stringify([c, agent]);
  if (!force && pane.dataset.key === key) return;
  pane.dataset.key = key;
  // Keep what the human is typing across redraws.
  const old = pane.querySelector('textarea');
  const draft = old ? old.value : '';
  const focused = old && document.activeElement === old;
  const text = h('textarea', { name: 'message', placeholder: 'Message ' + chatAgent + ' (Enter sends, Shift+Enter for a new line)' });
  text.value = draft;
  const send = async e => {
    e.preventDefault();
    const content = text.value.trim();
    if (!content) return;
    if (await act('sent to ' + chatAgent, '/api/chat/' + encodeURIComponent(chatAgent) + '/send', { content })) text.value = '';
  };
  text.addEventListener('keydown', e => { if (e.key === 'Enter' && !e.shiftKey) send(e); });
  const msgs = h('div', { id: 'messages' }, c.messages.length ? c.messages.map(m => h('div', {
    class: 'msg' + (m.senderId === c.human ? ' mine' : ''), dataset: { messageId: m.id },
  }, h('span', { class: 'at' }, m.senderId + ' · ' + fmtTime(m.createdAt) + (m.relatedTaskId ? ' · ' + taskTitle(m.relatedTaskId) : '')), m.content))
    : h('p', { class: 'empty' }, 'No messages yet.'));
  const head = h('div', { class: 'head' }, h('h2', { style: 'margin:0' }, 'Chat with ' + chatAgent), h('span', { class: 'spacer' }));
  if (agent && agent.type === 'ai') {
    head.append(agent.chat_open
      ? h('button', { class: 'close-chat', title: 'its chat session is told to exit', onclick: () => act('chat closed', '/api/chat/' + chatAgent + '/close') }, 'Close chat')
      : h('button', { class: 'open-chat', title: 'gives it chat work: aipm run starts its chat session', onclick: () => act('chat opened', '/api/chat/' + chatAgent + '/open') }, 'Open chat'));
  }
  pane.replaceChildren(head, msgs,
    h('form', { onsubmit: send }, text, h('button', { class: 'primary send', type: 'submit' }, 'Send')));
  msgs.scrollTop = msgs.scrollHeight;
  if (focused) text.focus();
  if (agent && agent.unread > 0) {
    api('/api/chat/' + encodeURIComponent(chatAgent) + '/read', {}).catch(() => {});
  }
}

connect();
