// The web viewer in Debian's chromium, driven by playwright-core
// (tests/viewer/run.sh starts the servers). Checks the accessibility
// contract of docs/viewer.md, keyboard and mouse navigation of the tree, a
// compaction's details, plan and compact from the page, windowed rendering
// of 20,000 entries (timed against a calibration measured in the same
// run), the sign-in off loopback, and saves screenshots at 1280x800 and
// 390x844. Prints one line per check; exits 1 on the first failure.
import {createRequire} from 'node:module';
import {readFileSync, mkdirSync} from 'node:fs';
import {join} from 'node:path';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].slice(2)] = process.argv[i + 1];
const require = createRequire(import.meta.url);
const {chromium} = require(args.playwright);
mkdirSync(args.out, {recursive: true});

const fixtureLines = readFileSync(args.fixture, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const fixtureId = fixtureLines[0].id;
const fixtureEntries = fixtureLines.slice(1);
const compactionEntry = fixtureEntries.find((e) => e.type === 'compaction');

let failures = 0;
function check(cond, what, detail = '') {
  if (cond) {
    console.log(`ok   ${what}`);
  } else {
    failures++;
    console.log(`FAIL ${what}${detail ? `: ${detail}` : ''}`);
    throw new Error(`check failed: ${what}`);
  }
}

async function apiJson(base, path) {
  const res = await fetch(`${base}/compactor/v1${path}`);
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

// The treeitem of an entry: its name starts with the entry's id.
const treeitem = (page, id) => page.getByRole('treeitem', {name: new RegExp(`^\\s*${id.slice(0, 8)}`)});
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const timeout = 30000;

// Every node of the accessibility tree with role button or link (and every
// field, the tree, its items and the meter) has a non-empty name (Chromium's
// own tree, through the DevTools protocol).
async function unnamedControls(page) {
  const cdp = await page.context().newCDPSession(page);
  const {nodes} = await cdp.send('Accessibility.getFullAXTree');
  await cdp.detach();
  const roles = new Set(['button', 'link', 'textbox', 'searchbox', 'spinbutton', 'tree', 'treeitem',
    'meter']);
  return nodes.filter((n) => !n.ignored && n.role && roles.has(n.role.value) &&
      !(n.name && String(n.name.value).trim())).map((n) => `${n.role.value}#${n.backendDOMNodeId}`);
}

async function checkNames(page, what) {
  const unnamed = await unnamedControls(page);
  check(unnamed.length === 0, what, `unnamed: ${unnamed.join(', ')}`);
}

// A CPU-bound workload in the page: the machine's speed right now.
async function calibrate(page) {
  return page.evaluate(() => {
    const t0 = performance.now();
    let x = 0;
    for (let round = 0; round < 5; round++) {
      const a = Array.from({length: 200000}, (_, i) => (i * 7919) % 100003);
      a.sort((p, q) => p - q);
      const d = document.createElement('div');
      for (let i = 0; i < 2000; i++) d.append(document.createElement('span'));
      x += a[1000] + d.childElementCount;
    }
    return {ms: performance.now() - t0, x};
  });
}

async function timed(fn) {
  const t0 = Date.now();
  await fn();
  return Date.now() - t0;
}

// Loads a session's page and waits until its tree is rendered (the title
// and the rows are set in one task).
async function openSession(page, id, wait = timeout) {
  await page.goto(`${args.url}/compactor/#/s/${id}`);
  await page.getByRole('heading', {name: `Session ${id}`}).waitFor({timeout: wait});
  await page.getByRole('treeitem').first().waitFor({timeout: wait});
}

async function activeEntry(page) {
  return page.evaluate(() => {
    const t = document.getElementById('tree');
    const id = t.getAttribute('aria-activedescendant');
    const row = id && document.getElementById(id);
    return row ? row.dataset.entry : null;
  });
}

async function main() {
  const browser = await chromium.launch({
    executablePath: args.chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    await desktop(browser);
    await narrow(browser);
    await signIn(browser);
  } finally {
    await browser.close();
  }
}

async function desktop(browser) {
  const context = await browser.newContext({viewport: {width: 1280, height: 800}});
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

  // Headers of the page and its assets.
  const res = await page.goto(`${args.url}/compactor/`);
  const h = res.headers();
  check(res.status() === 200 && h['content-type'].startsWith('text/html'), 'page served as text/html');
  check(/script-src 'self'/.test(h['content-security-policy'] || '') &&
        /default-src 'none'/.test(h['content-security-policy']), 'strict CSP on the page',
  h['content-security-policy']);
  const cal = await calibrate(page);
  // The reference: this workload on an idle 2-core machine takes ~250 ms.
  const factor = Math.max(1, cal.ms / 250);
  console.log(`calibration: ${Math.round(cal.ms)} ms (x${factor.toFixed(2)} the reference); ` +
              'time limits are scaled by this factor');

  // The session list: links named by the session id.
  const list = await apiJson(args.url, '/sessions');
  await page.getByRole('list').first().waitFor({timeout});
  for (const s of list.sessions) {
    const link = page.getByRole('link', {name: new RegExp(`^${esc(s.id)}`)});
    check(await link.count() === 1, `session ${s.id} is a link named by its id`);
  }
  await page.getByRole('searchbox', {name: /search/i}).fill('big-session');
  check(await page.locator('#session-list li').count() === 1, 'search narrows the list');
  await page.getByRole('searchbox', {name: /search/i}).fill('');
  await checkNames(page, 'list: every button, link and field has a name');
  await page.screenshot({path: join(args.out, 'list-1280x800.png'), fullPage: true});

  // The fixture session (read-only), by mouse from the list.
  await page.getByRole('link', {name: new RegExp(`^${esc(fixtureId)}`)}).click();
  const tree = page.getByRole('tree');
  await tree.waitFor({timeout});
  await page.getByRole('treeitem').first().waitFor({timeout});
  const apiTree = await apiJson(args.url, `/sessions/${fixtureId}/tree`);
  check(await page.getByRole('treeitem').count() === apiTree.entries.length,
      'one treeitem per entry of the small session', `${await page.getByRole('treeitem').count()}`);
  for (const e of apiTree.entries) {
    const n = await page.getByRole('treeitem', {name: new RegExp(`^\\s*${esc(e.id.slice(0, 8))}`)}).count();
    if (n !== 1) check(false, `treeitem named with ${e.id}`, `${n} matches`);
  }
  check(true, 'every treeitem is named with its entry id');
  const current = await page.locator('[role=treeitem][aria-current=true]').evaluateAll(
      (rows) => rows.map((r) => r.dataset.entry).sort());
  const active = apiTree.entries.filter((e) => e.active).map((e) => e.id).sort();
  check(JSON.stringify(current) === JSON.stringify(active), 'the active path is marked aria-current',
      `${current.length} marked, ${active.length} active`);
  const meter = page.getByRole('meter', {name: /context/i});
  check(await meter.count() === 1, 'the context bar is a meter named "context"');
  check(Number(await meter.getAttribute('aria-valuemax')) === 200000, 'the meter measures against the window');
  check(await page.getByRole('button', {name: /compact now/i}).isDisabled(),
      'compacting a read-only session is disabled');

  // Keyboard: Home, ArrowDown, End, Enter on a compaction.
  await tree.focus();
  await page.keyboard.press('Home');
  check(await activeEntry(page) === apiTree.entries.find((e) => e.parentId === null).id, 'Home goes to the root');
  await page.keyboard.press('ArrowDown');
  const second = await activeEntry(page);
  check(second && second !== apiTree.entries[0].id, 'ArrowDown moves down');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('End');
  const last = await page.locator('[role=treeitem]').last().getAttribute('data-entry');
  check(await activeEntry(page) === last, 'End goes to the last row');
  await page.keyboard.press('Home');
  for (let i = 0; i < 60 && await activeEntry(page) !== compactionEntry.id; i++) await page.keyboard.press('ArrowDown');
  check(await activeEntry(page) === compactionEntry.id, 'arrows reach the compaction');
  check(await page.locator(`[data-entry="${compactionEntry.id}"]`).getAttribute('aria-expanded') === 'true',
      'the compaction, a branch point, is expanded');
  const before = await page.getByRole('treeitem').count();
  await page.keyboard.press('ArrowLeft');
  const collapsed = await page.getByRole('treeitem').count();
  check(collapsed < before && await page.locator(`[data-entry="${compactionEntry.id}"]`)
      .getAttribute('aria-expanded') === 'false', 'ArrowLeft collapses a branch point', `${before} -> ${collapsed}`);
  await page.keyboard.press('Enter');
  check(await page.getByRole('treeitem').count() === before, 'Enter expands it again');
  const region = page.getByRole('region', {name: /Compaction/});
  await region.waitFor({timeout});
  const firstLine = compactionEntry.summary.split('\n').find((l) => l.trim() && !l.startsWith('#'));
  check((await region.textContent()).includes(firstLine), 'Enter on a compaction shows its details with the summary');
  check((await region.textContent()).includes(compactionEntry.tokensBefore.toLocaleString('en')),
      'the details show the tokens before');
  for (const f of compactionEntry.details.modifiedFiles)
    check((await region.textContent()).includes(f), `the details list the modified file ${f}`);
  await region.getByRole('button', {name: /summarized entries/}).click();
  const summarizedList = region.locator('ol.summarized li');
  check(await summarizedList.count() > 0, 'the summarized part is one click away',
      `${await summarizedList.count()} entries`);
  check(await page.locator('[role=treeitem].marked').count() > 0, 'the summarized entries are marked in the tree');

  // Mouse: collapse by the twisty, choose a branch summary by a click.
  await page.locator(`[data-entry="${compactionEntry.id}"] .twisty`).click();
  check(await page.getByRole('treeitem').count() === collapsed, 'a click on the twisty collapses');
  await page.locator(`[data-entry="${compactionEntry.id}"] .twisty`).click();
  const branch = fixtureEntries.find((e) => e.type === 'branch_summary');
  await treeitem(page, branch.id).click();
  await page.getByRole('region', {name: /Branch summary/}).waitFor({timeout});
  check(true, 'a click on a branch summary shows it');
  const labelled = apiTree.entries.find((e) => e.label);
  check(!labelled || (await treeitem(page, labelled.id).textContent())
      .includes(labelled.label), 'labels are shown in the tree');
  await checkNames(page, 'session: every button, link, field, tree item and the meter have names');
  await treeitem(page, compactionEntry.id).click();
  await region.waitFor({timeout});
  await page.screenshot({path: join(args.out, 'session-1280x800.png'), fullPage: true});

  // Plan and compact the writable copy.
  await openSession(page, args['writable-id']);
  const entriesBefore = await page.getByRole('treeitem').count();
  const meterBefore = await page.getByRole('meter', {name: /context/i}).getAttribute('aria-valuenow');
  await page.getByRole('spinbutton', {name: /keep recent tokens/i}).fill('1000');
  await page.getByRole('button', {name: /plan/i}).click();
  await page.getByRole('region', {name: /^Plan/}).waitFor({timeout});
  check((await page.getByRole('region', {name: /^Plan/}).textContent()).includes('Messages to summarize'),
      'Plan shows what would be summarized');
  await page.getByRole('button', {name: /compact now/i}).click();
  await page.getByRole('status').filter({hasText: /Compacted/}).waitFor({timeout});
  const after = await apiJson(args.url, `/sessions/${args['writable-id']}/tree`);
  const added = after.entries.filter((e) => e.type === 'compaction').pop();
  check(after.entries.length === entriesBefore + 1 && added && added.active,
      'the compaction was appended to the store');
  check(await page.getByRole('treeitem').count() === entriesBefore + 1, 'the tree shows the new entry');
  const newRegion = page.getByRole('region', {name: new RegExp(`Compaction ${added.id}`)});
  await newRegion.waitFor({timeout});
  const stored = await apiJson(args.url, `/sessions/${args['writable-id']}/entries/${added.id}`);
  check((await newRegion.textContent()).includes(stored.summary.split('\n').find((l) => l.trim() && !l.startsWith('#'))),
      'the new compaction\'s details show its summary');
  check(await page.locator(`[data-entry="${added.id}"]`).getAttribute('aria-current') === 'true',
      'the new compaction is on the active path');
  const meterAfter = await page.getByRole('meter', {name: /context/i}).getAttribute('aria-valuenow');
  check(Number(meterAfter) < Number(meterBefore), 'the context bar shrank', `${meterBefore} -> ${meterAfter}`);
  await page.screenshot({path: join(args.out, 'compacted-1280x800.png'), fullPage: true});

  // 20,000 entries: windowed, timed.
  const limits = {render: 10000 * factor, collapse: 2000 * factor, expand: 2000 * factor, key: 1000 * factor};
  const big = await apiJson(args.url, `/sessions/${args['big-id']}`);
  await page.goto('about:blank');
  const tRender = await timed(() => openSession(page, args['big-id'], limits.render + 5000));
  const rendered = await page.getByRole('treeitem').count();
  check(big.entries === 20000 && rendered > 0 && rendered < 200,
      'the 20,000-entry tree renders only the rows in view', `${rendered} rows in the document`);
  const bigTree = await apiJson(args.url, `/sessions/${args['big-id']}/tree`);
  check(await activeEntry(page) === bigTree.leafId &&
        await page.locator(`[data-entry="${bigTree.leafId}"]`).getAttribute('aria-current') === 'true',
  'the session opens on its leaf, scrolled into view and marked active');
  const setsize = await page.getByRole('treeitem').first().getAttribute('aria-setsize');
  check(Number(setsize) > 0, 'rows carry aria-setsize and aria-posinset');
  await tree.focus();
  await page.keyboard.press('Home');
  let tKey = 0;
  for (let i = 0; i < 12; i++) {
    const was = await activeEntry(page);
    tKey = Math.max(tKey, await timed(async () => {
      await page.keyboard.press('ArrowDown');
      await page.waitForFunction((w) => {
        const t = document.getElementById('tree');
        const row = document.getElementById(t.getAttribute('aria-activedescendant'));
        return row && row.dataset.entry !== w;
      }, was, {timeout: limits.key + 5000});
    }));
  }
  const bp = await page.locator('[role=treeitem][aria-expanded=true]').first();
  const bpId = await bp.getAttribute('data-entry');
  const totalRows = () => page.evaluate(() => document.getElementById('tree-sizer').offsetHeight / 28);
  const rowsBefore = await totalRows();
  const tCollapse = await timed(async () => {
    await bp.locator('.twisty').click();
    await page.waitForFunction((id) =>
      document.querySelector(`[data-entry="${id}"]`)?.getAttribute('aria-expanded') === 'false', bpId,
    {timeout: limits.collapse + 5000});
  });
  const rowsCollapsed = await totalRows();
  check(rowsCollapsed < rowsBefore / 2, 'collapsing the first branch point hides the rest',
      `${rowsBefore} -> ${rowsCollapsed} rows`);
  const t1 = Date.now();
  await page.locator(`[data-entry="${bpId}"] .twisty`).click();
  await page.waitForFunction((id) =>
    document.querySelector(`[data-entry="${id}"]`)?.getAttribute('aria-expanded') === 'true', bpId,
  {timeout: limits.expand + 5000});
  const tExpand = Date.now() - t1;
  check(await totalRows() === rowsBefore, 'expanding restores every row');
  await page.keyboard.press('End');
  await page.waitForFunction(() => {
    const t = document.getElementById('tree');
    return t.getAttribute('aria-activedescendant') && document.getElementById(t.getAttribute('aria-activedescendant'));
  });
  const lastRow = await page.evaluate(() => document.getElementById(
      document.getElementById('tree').getAttribute('aria-activedescendant')).dataset.row);
  check(Number(lastRow) === rowsBefore - 1, 'End reaches the last of 20,000 rows, rendered', lastRow);
  await page.screenshot({path: join(args.out, 'big-1280x800.png')});
  console.log(`timings (20,000 entries): first render ${tRender} ms, collapse ${tCollapse} ms, ` +
              `expand ${tExpand} ms, ArrowDown (worst of 12) ${tKey} ms; limits x${factor.toFixed(2)}: ` +
              `${Math.round(limits.render)} / ${Math.round(limits.collapse)} / ${Math.round(limits.expand)} / ` +
              `${Math.round(limits.key)} ms`);
  check(tRender <= limits.render, 'first render within its limit', `${tRender} ms`);
  check(tCollapse <= limits.collapse, 'collapse within its limit', `${tCollapse} ms`);
  check(tExpand <= limits.expand, 'expand within its limit', `${tExpand} ms`);
  check(tKey <= limits.key, 'ArrowDown within its limit', `${tKey} ms`);
  check(errors.length === 0, 'no script errors in the page', errors.join(' | '));
  await context.close();
}

async function narrow(browser) {
  const context = await browser.newContext({viewport: {width: 390, height: 844}, isMobile: true, hasTouch: true});
  const page = await context.newPage();
  await page.goto(`${args.url}/compactor/`);
  await page.getByRole('link', {name: new RegExp(`^${esc(fixtureId)}`)}).waitFor({timeout});
  const overflow = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  check(await overflow() <= 0, 'narrow list: no horizontal scrolling');
  await page.screenshot({path: join(args.out, 'list-390x844.png'), fullPage: true});
  await page.goto(`${args.url}/compactor/#/s/${fixtureId}/e/${compactionEntry.id}`);
  await page.getByRole('region', {name: /Compaction/}).waitFor({timeout});
  check(await overflow() <= 0, 'narrow session: no horizontal scrolling');
  await checkNames(page, 'narrow: every button and link has a name');
  await page.screenshot({path: join(args.out, 'session-390x844.png'), fullPage: true});
  await context.close();
}

async function signIn(browser) {
  const context = await browser.newContext({viewport: {width: 1280, height: 800}});
  const page = await context.newPage();
  const res = await page.goto(`${args['token-url']}/compactor/`);
  check(res.status() === 200, 'off loopback the page itself is served without the token');
  const form = page.getByRole('region', {name: /sign in/i});
  await form.waitFor({timeout});
  check(true, 'off loopback the viewer asks for the token');
  const api = await page.evaluate(async () => (await fetch('/compactor/v1/sessions')).status);
  check(api === 401, 'the API refuses a browser without the cookie');
  await page.getByLabel('Service token').fill('wrong-token');
  await page.getByRole('button', {name: 'Sign in'}).click();
  await page.getByRole('status').filter({hasText: /wrong token/}).waitFor({timeout});
  check(true, 'a wrong token is refused');
  await page.getByLabel('Service token').fill(args.token);
  await page.getByRole('button', {name: 'Sign in'}).click();
  await page.getByRole('link', {name: new RegExp(`^${esc(fixtureId)}`)}).waitFor({timeout});
  const cookie = (await context.cookies()).find((c) => c.name === 'compactor_token');
  check(cookie && cookie.httpOnly && cookie.sameSite === 'Strict', 'the token is kept in an HttpOnly, SameSite=Strict cookie');
  check(await page.evaluate(() => document.cookie.includes('compactor_token')) === false,
      'the page\'s script cannot read the cookie');
  await context.close();
}

main().then(() => {
  console.log(failures ? `${failures} failures` : 'viewer: all checks passed');
  process.exit(failures ? 1 : 0);
}, (e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
