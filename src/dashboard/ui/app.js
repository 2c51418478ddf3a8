// The cronoq dashboard's page (docs/guide/dashboard.md). Plain JavaScript,
// no dependencies. Every value from the API reaches the page as text
// (textContent, text nodes), never as markup.
'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const SVG = 'http://www.w3.org/2000/svg';
  const HISTORY = 90;                 // points per chart (3 minutes at 2 s)
  const REFRESH_MS = 2000;
  const RETRYABLE = ['failed', 'dead_lettered', 'cancelled'];
  const CLASSES = ['critical', 'high', 'normal', 'low'];
  const TERMINAL = RETRYABLE.concat(['succeeded', 'skipped', 'missed']);
  const state = { readOnly: true, cursors: [null], nextCursor: null, history: {}, detailId: null, tick: 0 };

  // An element; strings among `kids` become text nodes.
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    return e;
  }
  const say = (text) => { $('message').textContent = text; };
  const time = (iso) => (iso ? new Date(iso).toLocaleString() : '–');
  const fmt = (n, digits) => (n === null || n === undefined ? '–' : Number(n).toFixed(digits || 0));

  async function api(path, options) {
    const response = await fetch(path, Object.assign({ credentials: 'same-origin', headers: { Accept: 'application/json' } }, options));
    if (response.status === 401) { location.reload(); throw new Error('signed out'); }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.error || response.status + ' ' + response.statusText);
    return body;
  }
  async function act(path, done) {
    try { const r = await api(path, { method: 'POST' }); say(done(r)); } catch (e) { say(e.message); }
    refresh();
  }
  function button(label, onclick) {
    return el('button', { type: 'button', onclick }, label);
  }

  // ---- pools ------------------------------------------------------------------
  function remember(pool, now) {
    const h = state.history[pool.name] || (state.history[pool.name] = { wait: [], rate: [], last: null });
    const started = pool.totals ? pool.totals.attempts_started : 0;
    const rate = h.last ? Math.max(0, (started - h.last.started) / ((now - h.last.at) / 1000 || 1)) : 0;
    h.last = { started, at: now };
    h.wait.push(pool.wait_ms ? pool.wait_ms.p99 : 0);
    h.rate.push(rate);
    if (h.wait.length > HISTORY) { h.wait.shift(); h.rate.shift(); }
    return h;
  }
  function chart(points, label, unit) {
    const w = 300, h = 46, max = Math.max(1e-9, ...points);
    const s = svg('svg', { class: 'chart', viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: 'none', role: 'img',
                           'aria-label': `${label}: ${fmt(points[points.length - 1], 1)} ${unit}` });
    const step = w / (HISTORY - 1), offset = (HISTORY - points.length) * step;
    s.append(svg('polyline', { points: points.map((v, i) => `${(offset + i * step).toFixed(1)},${(h - 4 - (v / max) * (h - 14)).toFixed(1)}`).join(' ') }));
    const t = svg('text', { x: 3, y: 10 });
    t.textContent = `${label} ${fmt(points[points.length - 1], 1)} ${unit} (max ${fmt(max, 1)})`;
    s.append(t);
    return s;
  }
  function renderPools(pools) {
    const now = Date.now(), box = $('pools');
    box.replaceChildren();
    const select = $('pool'), chosen = select.value;
    select.replaceChildren(el('option', { value: '' }, 'any'), ...pools.map((p) => el('option', {}, p.name)));
    select.value = chosen;
    for (const p of pools) {
      const h = remember(p, now);
      const pending = CLASSES.filter((c) => p.pending && c in p.pending).map((c) => `${c} ${p.pending[c]}`).join(', ');
      const head = el('h3', {}, el('span', {}, p.name, p.paused ? el('span', { class: 'badge' }, ' paused') : null));
      if (!state.readOnly) {
        head.append(p.paused
          ? button('Resume', () => act(`/api/pools/${encodeURIComponent(p.name)}/resume`, () => `pool ${p.name} resumed`))
          : button('Pause', () => act(`/api/pools/${encodeURIComponent(p.name)}/pause`, () => `pool ${p.name} paused`)));
      }
      const figures = [['capacity', p.capacity], ['busy', p.busy], ['pending', pending], ['blocked', p.blocked],
        ['scheduled', p.scheduled], ['retrying', p.retrying], ['paused', p.paused ? 'yes' : 'no'],
        ['wait p99', `${fmt(p.wait_ms && p.wait_ms.p99, 1)} ms`], ['dead letters (window)', p.dead_lettered]];
      if (p.remote_workers !== null && p.remote_workers !== undefined) figures.push(['remote workers', p.remote_workers]);
      const dl = el('dl', {});
      for (const [k, v] of figures) dl.append(el('dt', {}, k), el('dd', {}, v));
      box.append(el('article', { class: 'card' + (p.paused ? ' paused' : ''), 'data-pool': p.name }, head, dl,
        chart(h.wait, 'wait p99', 'ms'), chart(h.rate, 'throughput', 'attempts/s')));
    }
    box.dataset.state = 'ready';
    const remote = pools.filter((p) => p.remote_workers !== null && p.remote_workers !== undefined);
    $('workers').replaceChildren(remote.length
      ? el('dl', { class: 'figures' }, ...remote.flatMap((p) => [el('dt', {}, p.name), el('dd', {}, `${p.remote_workers} connected, ${p.capacity} slots`)]))
      : el('p', { class: 'muted' }, 'No remote pool.'));
  }
  function renderStore(store) {
    const dl = $('store');
    if (!store) { dl.replaceChildren(el('dd', { class: 'muted' }, 'No store: the scheduler keeps its state in memory.')); return; }
    const rows = [['leading', store.leading ? 'yes' : 'no'], ['epoch', store.epoch], ['commits', store.commits],
      ['failed commits', store.failed_commits], ['changes committed', store.changes_committed],
      ['mean batch', fmt(store.mean_batch_size, 1)], ['commit p50 / p99',
        store.commit_latency_ms ? `${fmt(store.commit_latency_ms.p50, 2)} / ${fmt(store.commit_latency_ms.p99, 2)} ms` : '–'],
      ['uncommitted changes', store.pending_changes]];
    dl.replaceChildren(...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  }
  function renderRecurring(list) {
    const body = $('recurring').tBodies[0];
    body.replaceChildren(...list.map((r) => el('tr', {}, el('td', {}, r.name), el('td', {}, el('code', {}, r.cron)),
      el('td', {}, r.tz), el('td', {}, r.pool), el('td', {}, r.next.map(time).join(' · ')), el('td', {}, time(r.last_fired)))));
    if (!list.length) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'No recurring schedule.')));
  }

  // ---- tasks ------------------------------------------------------------------
  function filters() {
    const q = new URLSearchParams();
    if ($('status').value) q.set('status', $('status').value);
    if ($('pool').value) q.set('pool', $('pool').value);
    const text = $('search').value.trim(), by = $('search-by').value;
    if (text && by !== 'id') q.set(by, text);
    return q;
  }
  function taskActions(t, where) {
    if (state.readOnly) return null;
    const span = el('span', { class: 'actions' });
    if (RETRYABLE.includes(t.status)) {
      span.append(button('Retry', () => act(`/api/tasks/${t.id}/retry`, (r) => {
        if (where === 'detail') state.detailId = r.retried_as;
        return `task ${t.id} retried as task ${r.retried_as}`;
      })));
    }
    if (!TERMINAL.includes(t.status)) span.append(button('Cancel', () => act(`/api/tasks/${t.id}/cancel`, () => `task ${t.id} cancelled`)));
    return span;
  }
  function taskRow(t) {
    return el('tr', { 'data-task': t.id, 'data-status': t.status, class: t.id === state.detailId ? 'selected' : '' },
      el('td', {}, el('button', { type: 'button', class: 'task-link', onclick: () => showDetail(t.id) }, String(t.id))),
      el('td', { class: 'status-' + t.status }, t.status), el('td', {}, t.pool), el('td', {}, t.kind),
      el('td', {}, t.key || ''), el('td', {}, t.fair_key || ''), el('td', {}, t.attempt === null ? '–' : t.attempt),
      el('td', {}, time(t.updated_at)), el('td', { class: 'error' }, t.last_error), el('td', {}, taskActions(t, 'row')));
  }
  async function loadTasks() {
    const body = $('tasks').tBodies[0], text = $('search').value.trim();
    if (text && $('search-by').value === 'id') {
      try {
        const t = await api(`/api/tasks/${encodeURIComponent(text)}`);
        body.replaceChildren(taskRow(t));
      } catch (e) { body.replaceChildren(el('tr', {}, el('td', { colspan: 10, class: 'muted' }, e.message))); }
      state.nextCursor = null;
    } else {
      const q = filters(), cursor = state.cursors[state.cursors.length - 1];
      if (cursor) q.set('cursor', cursor);
      q.set('limit', '50');
      const page = await api('/api/tasks?' + q.toString());
      state.nextCursor = page.next_cursor;
      body.replaceChildren(...page.tasks.map(taskRow));
      if (!page.tasks.length) body.append(el('tr', {}, el('td', { colspan: 10, class: 'muted' }, 'No task matches.')));
    }
    $('next').disabled = !state.nextCursor;
    $('first').disabled = state.cursors.length === 1;
    $('page-info').textContent = `page ${state.cursors.length}`;
    $('tasks').dataset.state = 'ready';
  }
  async function showDetail(id) {
    state.detailId = id;
    await loadDetail();
    $('detail-section').hidden = false;
  }
  async function loadDetail() {
    if (state.detailId === null) return;
    let t;
    try { t = await api(`/api/tasks/${state.detailId}`); } catch (e) { $('detail').replaceChildren(el('p', {}, e.message)); return; }
    const deps = t.depends_on.length
      ? el('ul', {}, ...t.depends_on.map((d) => el('li', {}, `${d.id !== null ? 'task ' + d.id : 'key ' + d.key} (on ${d.when})`)))
      : el('span', { class: 'muted' }, 'none');
    const rows = [['id', t.id], ['status', el('span', { class: 'status-' + t.status, id: 'detail-status' }, t.status)],
      ['pool', t.pool], ['kind', t.kind], ['key', t.key || '–'], ['fair key', t.fair_key || '–'], ['priority', t.priority],
      ['attempts', t.attempt === null ? '–' : t.attempt], ['submitted', time(t.submitted_at)], ['updated', time(t.updated_at)],
      ['last error', t.last_error || '–'], ['depends on', deps]];
    const dl = el('dl', { class: 'figures' }, ...rows.flatMap(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
    $('detail-title').textContent = `Task ${t.id}`;
    $('detail').replaceChildren(dl, taskActions(t, 'detail') || '',
      el('h3', {}, `Payload (${t.payload_bytes} bytes)`), el('pre', { id: 'payload' }, t.payload_preview),
      el('h3', {}, t.output_bytes === null ? 'Output: none' : `Output (${t.output_bytes} bytes)`),
      t.output_preview === null ? '' : el('pre', { id: 'output' }, t.output_preview));
    $('detail').dataset.task = t.id;
    $('detail').dataset.status = t.status;
  }

  // ---- refresh ------------------------------------------------------------------
  async function refresh() {
    try {
      const [pools, store] = await Promise.all([api('/api/pools'), api('/api/store')]);
      renderPools(pools.pools);
      renderStore(store.store);
      if (state.tick++ % 5 === 0) renderRecurring((await api('/api/recurring')).recurring);
      await loadTasks();
      await loadDetail();
      $('refreshed').textContent = 'updated ' + new Date().toLocaleTimeString();
    } catch (e) { say(e.message); }
  }
  async function start() {
    const config = await api('/api/config');
    state.readOnly = config.read_only;
    $('mode').hidden = !state.readOnly;
    $('bulk-retry').hidden = state.readOnly;
    $('filters').addEventListener('submit', (e) => { e.preventDefault(); state.cursors = [null]; refresh(); });
    $('status').addEventListener('change', () => { state.cursors = [null]; refresh(); });
    $('pool').addEventListener('change', () => { state.cursors = [null]; refresh(); });
    $('next').addEventListener('click', () => { if (state.nextCursor) { state.cursors.push(state.nextCursor); loadTasks(); } });
    $('first').addEventListener('click', () => { state.cursors = [null]; loadTasks(); });
    $('bulk-retry').addEventListener('click', () => {
      const q = filters();
      q.delete('status');
      act('/api/dead_letters/retry?' + q.toString(), (r) => `${r.retried} dead letters retried` + (r.next_cursor ? ' (more remain)' : ''));
    });
    await refresh();
    setInterval(refresh, REFRESH_MS);
  }
  document.addEventListener('DOMContentLoaded', () => { start().catch((e) => say(e.message)); });
})();
