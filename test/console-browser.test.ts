import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startAgentGateway } from "@geode/agent-gateway";
import { writeAuditKeyFile } from "@geode/audit";
import { ensureBucket, RuntimeEventBus } from "@geode/bus";
import { startConsole, WEB_DIST } from "@geode/console";
import { names as buildNames, type ConsoleLlm, type ConsoleMcpServers } from "@geode/contracts";
import { openProjectionDb } from "@geode/projection";
import {
  BudgetStore,
  LlmPriceStore,
  LlmProviderStore,
  PolicyStore,
  ReceiptStore,
  RunStore,
  WebhookStore,
} from "@geode/state";
import {
  cleanupNamespace,
  REPO_ROOT,
  spawnService,
  uniqueNamespace,
  useFixture,
  waitFor,
} from "@geode/testing";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanupDemo, runDemo } from "../packages/cli/src/demo/run-demo.js";
import { startChatCompletionsStandIn } from "./chat-completions-stand-in.js";
import { SHOTS_MANIFEST, webSourcesDigest } from "./console-shots.js";
import {
  CONSOLE_TOKEN,
  claudeCodeSession,
  PLANTED_SECRETS,
  RM_TARGET,
  registerDeadGuard,
  serveDiskGuard,
  serveRefusalGuards,
  startConsolePlane,
} from "./console-support.js";
import { addAgent, ccInput } from "./gateway-support.js";
import { KEY_ENV, PROVIDER_KEY } from "./llm-support.js";
import { keptLogger, putPack, putPolicy, startGuard } from "./policy-support.js";
import { candidate, rootTurn } from "./verify-support.js";

/** Debian's chromium (`.ci/run` installs it when missing). */
const CHROMIUM = "/usr/bin/chromium";
const FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];
/** `pnpm docs:console` sets this to docs/console: the screenshots of docs/console.md. */
const SHOTS = process.env["GEODE_CONSOLE_SCREENSHOTS"];
const WAIT = { timeout: 20_000 };

const { fixture: plane } = useFixture(startConsolePlane, (p) => p.stop());
let context: BrowserContext;
let page: Page;
let userDataDir: string;
let shotsDir: string;

beforeAll(async () => {
  if (!existsSync(path.join(WEB_DIST, "index.html")))
    execFileSync("pnpm", ["--filter", "@geode/console", "build"], { cwd: REPO_ROOT, stdio: "ignore" });
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: apt-get install chromium (.ci/run does)`);
  userDataDir = mkdtempSync(path.join(os.tmpdir(), "geode-console-chromium-"));
  shotsDir = SHOTS
    ? path.resolve(REPO_ROOT, SHOTS)
    : mkdtempSync(path.join(os.tmpdir(), "geode-console-shots-"));
  mkdirSync(shotsDir, { recursive: true });
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 720 },
  });
  page = context.pages()[0] ?? (await context.newPage());
}, 60_000);

const taken: string[] = [];

afterAll(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  if (!SHOTS && shotsDir) rmSync(shotsDir, { recursive: true, force: true });
  // The manifest says which page the screenshots show (test/console-docs.test.ts checks it).
  if (SHOTS)
    writeFileSync(
      path.join(shotsDir, SHOTS_MANIFEST),
      `${JSON.stringify({ web_sources_sha256: webSourcesDigest(), shots: taken.sort() }, null, 2)}\n`,
    );
});

/** A screenshot of the page as it is (a PNG, not empty). */
async function shot(name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  const file = path.join(shotsDir, `${name}.png`);
  const png = await page.screenshot({ path: file, fullPage: options.fullPage ?? true });
  expect(png.length).toBeGreaterThan(1000);
  taken.push(name);
}

async function open(hash: string, base = plane().console.url): Promise<void> {
  await page.goto(`${base}/#${hash}`);
}

async function signIn(base: string): Promise<void> {
  await open("sessions", base);
  await page.getByLabel("Console token").fill(CONSOLE_TOKEN);
  await page.getByLabel("Your name").fill("ana");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForSelector("#nav:not([hidden])", WAIT);
}

/** USD as the page shows a sum: cents, or six decimals below a cent. */
const usdText = (x: number) => (x === 0 ? "$0" : x >= 0.01 ? `$${x.toFixed(2)}` : `$${x.toFixed(6)}`);

/** What the prompt said: the page never shows it. */
const PROMPT = "tidy the disk, the vault code is 4711";

const blockedId = `cc-${randomUUID()}`;
const activeId = `cc-${randomUUID()}`;

describe("the operator console in a browser", { timeout: 90_000 }, () => {
  it("asks for the token once, then shows the sessions; the token is in no URL and no cookie", async () => {
    const urls: string[] = [];
    page.on("request", (r) => urls.push(r.url()));
    await open("sessions");
    await page.waitForSelector("form.login", WAIT);
    // Labelled fields, the first empty one focused.
    expect(
      await page.evaluate(
        () => (globalThis as { document?: { activeElement?: { id: string } } }).document?.activeElement?.id,
      ),
    ).toBe("login-operator");
    await shot("login", { fullPage: false });
    await page.getByLabel("Console token").fill("not-the-token");
    await page.getByLabel("Your name").fill("ana");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForSelector("#login-error:text('that is not the console token')", WAIT);
    expect(await page.isVisible("#nav")).toBe(false);
    await page.getByLabel("Console token").fill(CONSOLE_TOKEN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForSelector("#nav:not([hidden])", WAIT);
    expect(await page.textContent("#who")).toBe("ana");
    expect(await page.textContent("main h2")).toBe("Sessions");
    expect(await page.getAttribute('#nav a[data-page="sessions"]', "aria-current")).toBe("page");
    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: "geode_console", httpOnly: true, sameSite: "Strict" });
    expect(cookies[0]!.value).not.toContain(CONSOLE_TOKEN);
    expect(urls.some((u) => u.includes(CONSOLE_TOKEN))).toBe(false);
  });

  it("the overview lists a Claude Code session through the gateway with its block, its charts draw the calls, and a filter narrows", async () => {
    await serveDiskGuard(plane());
    await serveRefusalGuards(plane());
    await claudeCodeSession(plane(), blockedId, { prompt: PROMPT, blocked: true, end: true, refusals: true });
    await claudeCodeSession(plane(), activeId, { prompt: PROMPT, blocked: false, end: false });
    await open("sessions");
    const blocked = page.locator(`tr[data-session="${blockedId}"]`);
    await waitFor(
      async () =>
        ((await blocked.count()) > 0 && (await blocked.textContent())?.includes("2 blocked")) ?? false,
      30_000,
    );
    const row = (await blocked.textContent()) ?? "";
    for (const text of ["laptop", "claude-code", "completed", "2 blocked", "⊘"]) expect(row).toContain(text);
    expect(await blocked.getAttribute("class")).toBe("bad-row");
    const active = page.locator(`tr[data-session="${activeId}"]`);
    expect(await active.textContent()).toContain("active");
    expect(await page.textContent("main")).not.toContain("vault code");
    // The charts: drawn by uPlot from the last hour's calls (now all projected), with their numbers as text.
    await page.reload();
    await page.locator("#chart-agents canvas").first().waitFor(WAIT);
    for (const id of ["chart-agents", "chart-hooks", "chart-latency"])
      expect(await page.locator(`#${id} canvas`).count(), id).toBeGreaterThan(0);
    // The disk guard's and the ship guard's blocks, and the etc guard's deny.
    expect(await page.textContent("#chart-agents .chart-summary")).toMatch(/laptop: \d+ calls, 3 blocked/);
    expect(await page.textContent("#chart-hooks .chart-summary")).toMatch(/PreToolUse: \d+ calls, 1 blocked/);
    expect(await page.textContent("#chart-recorder")).toMatch(/_EVENTS: \d+/);
    await shot("sessions");
    await page.getByLabel("Has blocks").check();
    await page.getByRole("button", { name: "Apply" }).click();
    const rows = () =>
      page.locator("tr[data-session]").evaluateAll((trs) => trs.map((tr) => tr.getAttribute("data-session")));
    await waitFor(async () => JSON.stringify(await rows()) === JSON.stringify([blockedId]), 20_000);
    expect(page.url()).toContain("has_blocks=true");
    await page.getByLabel("Session id").fill(activeId.slice(3, 15));
    await page.getByLabel("Has blocks").uncheck();
    await page.getByRole("button", { name: "Apply" }).click();
    await waitFor(async () => JSON.stringify(await rows()) === JSON.stringify([activeId]), 20_000);
  });

  it("a session's story shows the block as a block, who decided, ms times, raw events a click away and the way back", async () => {
    await open("sessions");
    await page.locator(`tr[data-session="${blockedId}"] a`).click();
    await page.locator("table.story").waitFor(WAIT);
    const rm = page.locator(`tr[data-call="${blockedId}-t2"]`);
    expect(await rm.getAttribute("class")).toBe("bad-row");
    const text = (await rm.textContent()) ?? "";
    for (const part of ["Tool call", "Bash · shell", "⊘", "blocked", "disk-guard", "not run"])
      expect(text).toContain(part);
    // Why, next to the verdict: the handler's reason, as text.
    expect(await rm.locator(".step-reason").textContent()).toBe("disk-guard: destructive command");
    // What it would have run: shortened, secrets masked, as text, the whole of it in the tooltip.
    const target = rm.locator("code.step-target");
    expect(await target.textContent()).toBe(RM_TARGET);
    expect(await target.getAttribute("title")).toBe(RM_TARGET);
    const write = page.locator(`tr[data-call="${blockedId}-t3"]`);
    expect(await write.getAttribute("class")).toBe("bad-row");
    for (const part of ["Write · file_write", "/etc/hosts", "denied", "etc-guard", "not run"])
      expect(await write.textContent()).toContain(part);
    expect(await write.locator(".step-reason").textContent()).toBe("etc-guard: no writes under /etc");
    const shipped = page.locator('tr[data-kind="prompt"]').nth(1);
    for (const part of ["blocked", "ship-guard"]) expect(await shipped.textContent()).toContain(part);
    expect(await shipped.locator(".step-reason").textContent()).toBe("shipping needs a release ticket");
    for (const secret of [...PLANTED_SECRETS, "under the mat"])
      expect(await page.textContent("main")).not.toContain(secret);
    const ls = (await page.locator(`tr[data-call="${blockedId}-t1"]`).textContent()) ?? "";
    expect(ls).toContain("Bash · shell");
    expect(ls).toContain("allowed");
    const prompt = (await page.locator('tr[data-kind="prompt"]').first().textContent()) ?? "";
    expect(prompt).toContain(`${[...PROMPT].length} characters`);
    expect(await page.textContent("main")).not.toContain("vault code");
    const times = await page.locator("table.story tbody tr td:first-child").allTextContents();
    for (const t of times) expect(t).toMatch(/^\+[\d,]+ ms$/);
    expect(await page.locator("#story-live").count()).toBe(0);
    await shot("story");
    await page.getByRole("link", { name: `Every event and record of run ${blockedId}` }).click();
    await page.waitForSelector("#timeline-state:text('live')", WAIT);
    await waitFor(
      async () => (await page.textContent("main"))?.includes("extension_invoked") ?? false,
      20_000,
    );
    await page.getByRole("link", { name: "← All sessions" }).click();
    await page.locator(`tr[data-session="${blockedId}"]`).waitFor(WAIT);
    // An active session's story says it is live.
    await open(`session/${activeId}`);
    await page.locator("#story-live").waitFor(WAIT);
  });

  it("an ungoverned call is red in the list and the story, counts read in words, and the Agents view shows the guarded hooks", async () => {
    // A result whose PreToolUse never reached the plane: one governance gap.
    const gapId = `cc-gap-${randomUUID()}`;
    const session = { session_id: gapId, prompt_id: `${gapId}-p1` };
    const ls = { tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: `${gapId}-t1` };
    await plane().claudeCode(ccInput("UserPromptSubmit", { prompt: "list it" }, session));
    await plane().claudeCode(ccInput("PostToolUse", { ...ls, tool_response: { stdout: "a" } }, session));
    await plane().claudeCode(ccInput("SessionEnd", { reason: "other" }, session));
    await open(`sessions?q=${encodeURIComponent(gapId)}`);
    const row = page.locator(`tr[data-session="${gapId}"]`);
    await waitFor(
      async () => ((await row.count()) > 0 ? await row.textContent() : "")?.includes("1 ungoverned") ?? false,
      20_000,
    );
    expect(await row.getAttribute("class")).toBe("bad-row");
    await row.locator("a").click();
    await page.locator("table.story").waitFor(WAIT);
    await waitFor(async () => ((await page.textContent("dl.facts")) ?? "").includes("ungoverned"), 20_000);
    expect(await page.textContent("dl.facts")).toContain(
      "1 prompt, 1 tool call, 0 blocked, 0 approved, 0 denied, 1 ungoverned call",
    );
    const call = page.locator(`tr[data-call="${gapId}-t1"]`);
    expect(await call.getAttribute("class")).toBe("bad-row");
    expect(await call.textContent()).toContain("ungoverned its PreToolUse never reached the plane");
    await open("agents");
    const agent = page.locator('tr[data-agent="laptop"]');
    await agent.waitFor(WAIT);
    for (const part of ["claude-code", "never checked", "PreToolUse"])
      expect(await agent.textContent()).toContain(part);
    await shot("agents", { fullPage: false });
  });

  it("an approval appears and is allowed from the page; the waiting tool call completes", async () => {
    await open("approvals");
    const call = plane().callTool(
      "deploy",
      { target: "staging", note: "<b>bold?</b>" },
      { session_id: "s-page", tool_call_id: "c-page" },
    );
    const row = page.locator("tr[data-approval]").filter({ hasText: "deploy" });
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain("mutation");
    expect(await row.textContent()).toContain('"note":"<b>bold?</b>"');
    // A runtime's call: no gateway agent, and no policy asked (an approval-requiring tool did).
    expect(await page.locator("th").allTextContents()).toEqual(
      expect.arrayContaining(["agent", "asked by policy"]),
    );
    expect(await row.locator('[data-field="agent"]').textContent()).toBe("-");
    expect(await row.locator('[data-field="policy"]').textContent()).toBe("-");
    await row.locator("input").fill("checked the diff");
    await shot("approvals");
    await row.getByRole("button", { name: "Allow" }).click();
    const reply = await call;
    expect(reply.status).toBe("completed");
    expect(plane().deploy.calls.at(-1)).toMatchObject({ target: "staging" });
    await page
      .locator("tr[data-approval]")
      .first()
      .waitFor({ state: "detached", ...WAIT });
  });

  it("an escalated answer is delivered from the page", async () => {
    const corr = rootTurn();
    const parked = await plane().verify.finalize({
      correlation: corr,
      candidate: candidate("Draft reply <script>window.__xss = 3</script>", {
        termination_reason: "max_rounds",
      }),
    });
    expect(parked.policy_action).toBe("escalate");
    await open("paused");
    const row = page.locator(`tr[data-session="${corr.session_id}"]`);
    await row.waitFor(WAIT);
    expect(await row.locator(".pending-text").textContent()).toBe(
      "Draft reply <script>window.__xss = 3</script>",
    );
    await shot("paused");
    await row.getByRole("button", { name: "Deliver" }).click();
    await row.waitFor({ state: "detached", ...WAIT });
    const left = await plane().api("/api/sessions?status=paused");
    expect(left.body.items).toEqual([]);
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
  });

  it("a run's live timeline grows while a session runs", async () => {
    const { nc, names } = plane().env;
    const runs = await RunStore.open({ nc, names });
    await runs.open("run-live");
    await open("runs");
    await page.locator('a[href="#run/run-live"]').waitFor(WAIT);
    await shot("runs");
    await page.click('a[href="#run/run-live"]');
    await page.waitForSelector("#timeline-state:text('live')", WAIT);
    const events = await RuntimeEventBus.create({ nc, names, source: "runtime" });
    const corr = { run_id: "run-live", session_id: "s-live", turn_id: "t-1" };
    await events.timeline("session.started", { model: "fake", provider: "test" }, corr);
    const counted = async () => Number(await page.textContent("#timeline-count"));
    await waitFor(async () => (await counted()) >= 1, 20_000);
    let before = await counted();
    for (let i = 0; i < 3; i++) {
      const reply = await plane().callTool("echo", { text: `step ${i}` }, { ...corr, tool_call_id: `c${i}` });
      expect(reply.status).toBe("completed");
      await waitFor(async () => (await counted()) > before, 20_000);
      before = await counted();
    }
    await events.timeline("session.ended", { reason: "done", status: "completed" }, corr);
    await waitFor(async () => (await page.textContent("main"))?.includes("session.ended") ?? false, 20_000);
    expect(await page.locator("table.timeline tbody tr").count()).toBe(await counted());
    await shot("timeline");
  });

  it("the Policies view: how to add a pack, then the set, a chart of decisions per policy and the block with a link to its story", async () => {
    await open("policies");
    await page.locator("#policies-empty").waitFor(WAIT);
    expect(await page.textContent("#policies-empty")).toContain("geode policy add --pack destructive-shell");
    expect(await page.getAttribute('#nav a[data-page="policies"]', "aria-current")).toBe("page");
    const { env } = plane();
    const guard = await startGuard(env, keptLogger([]));
    const sessionId = `cc-policy-${randomUUID()}`;
    try {
      await putPack(env, "destructive-shell");
      await guard.loaded(["destructive-shell"]);
      await waitFor(() =>
        plane()
          .tools.dispatcher.handlers()
          .some((h) => h.hook === "PreToolUse" && h.name === "policy"),
      );
      const session = { session_id: sessionId, prompt_id: `${sessionId}-p1` };
      await plane().claudeCode(ccInput("SessionStart", { source: "startup", model: "claude-test" }, session));
      const call = {
        tool_name: "Bash",
        tool_input: { command: "rm -fr node_modules" },
        tool_use_id: `${sessionId}-t1`,
      };
      expect(await plane().claudeCode(ccInput("PreToolUse", call, session))).toMatchObject({
        hookSpecificOutput: { permissionDecision: "deny" },
      });
      await waitFor(async () => {
        const r = await plane().api("/api/policies");
        return r.body.blocks?.some((b: { session_id: string }) => b.session_id === sessionId) ?? false;
      }, 30_000);
      // A set whose newer stored value the guard refuses: in force, marked with why.
      const kept = 'forbid (principal, action, resource) when { resource.kind == "web_fetch" };';
      await putPolicy(env, "browser-kept", kept);
      const kv = await ensureBucket(env.nc, env.names, "policies");
      const stored = JSON.parse((await kv.get("browser-kept"))?.string() ?? "") as Record<string, unknown>;
      await kv.put("browser-kept", JSON.stringify({ ...stored, text: "forbid (principal," }));
      await page.reload();
      const refused = page.locator('tr[data-policy-set="browser-kept"] .policy-state');
      await refused.waitFor(WAIT);
      expect(await refused.textContent()).toMatch(
        /^in force; newer value \(revision \d+\) refused: policy set browser-kept: 1:/,
      );
      const set = page.locator('tr[data-policy-set="destructive-shell"]');
      await set.waitFor(WAIT);
      const setText = (await set.textContent()) ?? "";
      for (const text of ["enforce", "rm-recursive-force", "by test"]) expect(setText).toContain(text);
      await page.locator("#chart-policies canvas").first().waitFor(WAIT);
      expect(await page.textContent("#chart-policies .chart-summary")).toContain(
        "destructive-shell.rm-recursive-force: 1 block",
      );
      const block = page.locator(`tr[data-block-session="${sessionId}"]`);
      const row = (await block.textContent()) ?? "";
      for (const text of [
        "laptop",
        "claude-code",
        "PreToolUse",
        "Bash",
        "blocked",
        "recursive forced deletion",
      ])
        expect(row).toContain(text);
      expect(await page.textContent("main")).not.toContain("node_modules");
      await shot("policies");
      await block.locator("a").click();
      await page.locator("table.story").waitFor(WAIT);
      expect(page.url()).toContain(`#session/${sessionId}`);
    } finally {
      await guard.guard.stop().catch(() => undefined);
      const policies = await PolicyStore.open({ nc: env.nc, names: env.names });
      await policies.remove("destructive-shell");
      await policies.remove("browser-kept");
      // A guard that fails closed blocks every call while the dispatcher still knows it: wait until it does not.
      await waitFor(() =>
        plane()
          .tools.dispatcher.handlers()
          .every((h) => h.name !== "policy"),
      );
    }
  });

  it("the MCP servers view: how to add one, then a real server with its tools, calls and blocks, a failing one's error as text; the story names server · tool", async () => {
    await open("mcp");
    await page.locator("#mcp-empty").waitFor(WAIT);
    expect(await page.textContent("#mcp-empty")).toContain("geode mcp add NAME -- COMMAND");
    expect(await page.getAttribute('#nav a[data-page="mcp"]', "aria-current")).toBe("page");
    const { env } = plane();
    const docs = mkdtempSync(path.join(os.tmpdir(), "geode-mcp-docs-"));
    writeFileSync(path.join(docs, "notes.txt"), "draft\n");
    // A stdio server that cannot start: its command (and so the bridge's error) holds markup.
    const broken = `/opt/nowhere/<img src=x onerror="window.__xss = 4">`;
    const kv = await ensureBucket(env.nc, env.names, "mcpServers");
    const put = (record: Record<string, unknown>) =>
      kv.put(
        String(record["name"]),
        JSON.stringify({ created_at: Date.now(), updated_by: "ana", ...record }),
      );
    await put({
      name: "fs",
      transport: "stdio",
      command: "mcp-server-filesystem",
      args: [docs],
      env: ["PATH"],
    });
    await put({ name: "legacy", transport: "stdio", command: broken });
    // The real mcp-bridge, as `geode up` runs it, starting the real filesystem server from npm.
    const bridge = spawnService("services/mcp-bridge/src/main.ts", {
      ...env.env,
      PATH: `${path.join(REPO_ROOT, "node_modules/.bin")}${path.delimiter}${process.env["PATH"] ?? ""}`,
      GEODE_MCP_RESTART_MIN_MS: "60000",
    });
    const guard = await plane().tools.hook("PreToolUse", { name: "mcp-guard", priority: 2 }, (e) =>
      e.payload["tool_name"] === "fs_move_file"
        ? { action: "block", reason: "files stay where they are" }
        : null,
    );
    const servers = async () => (await plane().api("/api/mcp/servers")).body as ConsoleMcpServers;
    try {
      await waitFor(async () => {
        const [fs, legacy] = (await servers()).items;
        return (
          fs?.state === "connected" &&
          fs.tools.some((t) => t.name === "fs_write_file") &&
          legacy?.state === "failed"
        );
      }, 60_000);
      const sessionId = `mcp-browser-${randomUUID()}`;
      const corr = (id: string) => ({ session_id: sessionId, turn_id: "t1", tool_call_id: id });
      const wrote = await plane().callTool(
        "fs_write_file",
        { path: path.join(docs, "notes.txt"), content: "final\n" },
        corr("w1"),
      );
      expect(wrote.status).toBe("completed");
      const moved = await plane().callTool(
        "fs_move_file",
        { source: path.join(docs, "notes.txt"), destination: path.join(docs, "old.txt") },
        corr("m1"),
      );
      expect(moved).toMatchObject({ status: "blocked", reason: "mcp-guard: files stay where they are" });
      await waitFor(async () => {
        const tools = (await servers()).items[0]?.tools ?? [];
        const calls = (n: string) => tools.find((t) => t.name === n);
        return calls("fs_write_file")?.calls === 1 && calls("fs_move_file")?.blocks === 1;
      }, 30_000);
      const [fs] = (await servers()).items;

      await page.reload();
      const fsRow = page.locator('tr[data-mcp-server="fs"]');
      await fsRow.waitFor(WAIT);
      expect(await fsRow.locator('[data-field="state"]').textContent()).toBe("● connected");
      const fsText = (await fsRow.textContent()) ?? "";
      for (const text of [
        "stdio",
        `mcp-server-filesystem ${docs}`,
        `${fs!.tools_count}`,
        "2 calls, 1 blocked",
      ])
        expect(fsText).toContain(text);
      expect(await fsRow.locator('[data-field="last-error"]').textContent()).toBe("-");
      // A failing server: a red row, its error as the bridge said it, markup shown as text.
      const legacyRow = page.locator('tr[data-mcp-server="legacy"]');
      expect(await legacyRow.getAttribute("class")).toBe("bad-row");
      expect(await legacyRow.locator('[data-field="state"]').textContent()).toBe("✖ failed");
      expect(await legacyRow.locator('[data-field="last-error"]').textContent()).toContain(broken);
      expect(await page.locator("main img").count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
      // The tools fold under their server: unfolded, each with its effect, calls and blocks.
      await page.getByText(`Tools of fs (${fs!.tools.length})`).click();
      const write = page.locator('tr[data-mcp-tool="fs_write_file"]');
      await write.waitFor(WAIT);
      expect(await write.textContent()).toContain("write_file");
      expect(await write.textContent()).toContain("mutation");
      expect(await write.locator('[data-field="calls"]').textContent()).toBe("1");
      expect(await write.locator('[data-field="blocks"]').textContent()).toBe("0");
      const move = page.locator('tr[data-mcp-tool="fs_move_file"]');
      expect(await move.locator('[data-field="calls"]').textContent()).toBe("1");
      expect(await move.locator('[data-field="blocks"]').textContent()).toBe("⊘ 1");
      const read = page.locator('tr[data-mcp-tool="fs_read_text_file"]');
      expect(await read.textContent()).toContain("read-only");
      // Unfolded stays unfolded across the view's refreshes (the next refresh draws a new element).
      const folded = 'details[data-mcp-tools="fs"]';
      await page.locator(folded).evaluate((d) => d.setAttribute("data-drawn-before", ""));
      await page.locator(`${folded}:not([data-drawn-before])`).waitFor(WAIT);
      expect(await page.locator(folded).getAttribute("open")).toBe("");
      await shot("mcp-servers");

      // The story: each MCP call as server · tool, with what it acted on, its verdict and who decided.
      await open(`session/${sessionId}`);
      const written = page.locator('tr[data-call="w1"]');
      await written.waitFor(WAIT);
      for (const part of [
        "Tool call",
        "fs · write_file",
        path.join(docs, "notes.txt"),
        "allowed",
        "completed",
      ])
        expect(await written.textContent()).toContain(part);
      expect(await written.textContent()).not.toContain("fs_write_file");
      const blocked = page.locator('tr[data-call="m1"]');
      expect(await blocked.getAttribute("class")).toBe("bad-row");
      for (const part of ["fs · move_file", "blocked", "mcp-guard", "not run"])
        expect(await blocked.textContent()).toContain(part);
      expect(await blocked.locator(".step-reason").textContent()).toBe(
        "mcp-guard: files stay where they are",
      );
      expect(await blocked.locator("code.step-target").textContent()).toBe(
        `${path.join(docs, "notes.txt")}, ${path.join(docs, "old.txt")}`,
      );
    } finally {
      await guard.close();
      await bridge.stop();
      await kv.delete("fs");
      await kv.delete("legacy");
      rmSync(docs, { recursive: true, force: true });
    }
  });

  it("the Model spend view: charts of spend by agent and group, a spent budget's bar, the refused call; the story shows each model call's tokens and cost", async () => {
    await open("llm");
    await page.locator("#llm-no-budgets").waitFor(WAIT);
    expect(await page.textContent("#llm-no-budgets")).toContain("geode budget set agent.NAME");
    expect(await page.getAttribute('#nav a[data-page="llm"]', "aria-current")).toBe("page");
    // A gateway replica holding the provider key fronts a Chat Completions stand-in playing OpenAI.
    const { env } = plane();
    const chat = await startChatCompletionsStandIn([]);
    const token = await addAgent(env, "builder");
    const agents = await ensureBucket(env.nc, env.names, "agents");
    const builder = JSON.parse(new TextDecoder().decode((await agents.get("builder"))!.value));
    await agents.put("builder", JSON.stringify({ ...builder, groups: ["devs"] }));
    const gateway = await startAgentGateway({
      nc: env.nc,
      names: env.names,
      providerKeys: { [KEY_ENV]: PROVIDER_KEY },
      config: { host: "127.0.0.1", port: 0 },
    });
    const conn = { nc: env.nc, names: env.names };
    try {
      await (await LlmPriceStore.open(conn)).put({ model: "gpt-5*", input: 2, output: 10 });
      await (await BudgetStore.open(conn)).put("agent.builder", {
        limit_tokens: 30,
        window: "1d",
        soft_percent: 80,
      });
      await (await BudgetStore.open(conn)).put("group.devs", {
        limit_usd: 5,
        window: "30d",
        soft_percent: 80,
      });
      // The provider last: once it is served, so are the price and budgets written before it.
      await new Promise((r) => setTimeout(r, 500));
      await (await LlmProviderStore.open(conn)).put({
        name: "chat",
        kind: "openai",
        base_url: `${chat.url}/v1`,
        key_env: KEY_ENV,
      });
      // The calls name no session: the gateway gives them one, `llm-builder-…`, which names the agent.
      const call = () =>
        fetch(`${gateway.url}/v1/llm/chat/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
          body: JSON.stringify({ model: "gpt-5-mini", messages: [{ role: "user", content: PROMPT }] }),
        });
      // The first call waits until the gateway serves the provider, prices and budgets just written;
      // 20 tokens each: the second crosses the 30 and completes, the third is refused.
      await waitFor(async () => (await call()).status === 200, 20_000);
      expect((await call()).status).toBe(200);
      await waitFor(async () => (await call()).status === 429, 20_000);
      await page.locator('tr[data-budget="agent.builder"]').waitFor(WAIT);
      await waitFor(
        async () => (await page.locator("#llm-refused tr[data-llm-refusal]").count()) > 0,
        30_000,
      );
      await page.reload();
      await page.locator("#chart-llm-agents canvas").first().waitFor(WAIT);
      expect(await page.locator("#chart-llm-groups canvas").count()).toBeGreaterThan(0);
      const calls = (await plane().api("/api/llm")).body as ConsoleLlm;
      const spent = calls.agents.find((a) => a.name === "builder")!;
      expect(spent.total_calls).toBe(2);
      expect(await page.textContent("#chart-llm-agents .chart-summary")).toContain(
        `builder: ${usdText(spent.total_usd)}, ${spent.total_tokens} tokens, ${spent.total_calls} calls`,
      );
      expect(await page.textContent("#chart-llm-groups .chart-summary")).toContain("devs: $");
      const agentBudget = page.locator('tr[data-budget="agent.builder"]');
      expect(await agentBudget.getAttribute("class")).toBe("bad-row");
      expect(await agentBudget.locator('[data-field="state"]').textContent()).toContain("spent");
      expect(await agentBudget.locator('[role="meter"]').getAttribute("aria-valuenow")).toBe("100");
      expect(await page.locator('tr[data-budget="group.devs"] [data-field="state"]').textContent()).toContain(
        "ok",
      );
      const session = calls.refused[0]!.session_id;
      expect(session).toMatch(/^llm-builder-/);
      const refused = page.locator(`#llm-refused tr[data-llm-refusal="${session}"]`);
      for (const part of [
        "builder",
        "gpt-5-mini · chat",
        "refused",
        "agent.builder",
        "of 30 tokens used",
        "(1d)",
      ])
        expect(await refused.textContent()).toContain(part);
      expect(await page.textContent("main")).not.toContain(PROMPT);
      expect(await page.textContent("main")).not.toContain(PROVIDER_KEY);
      await shot("llm-spend");
      // The session's story: its model calls, with model, tokens and cost, never the prompt.
      await page.locator(`#llm-sessions a[href="#session/${session}"]`).click();
      const row = page.locator('tr[data-kind="llm_call"]').first();
      await row.waitFor(WAIT);
      for (const part of ["Model call", "gpt-5-mini · chat", "12 in · 8 out · $0.000104", "allowed", "ended"])
        expect(await row.textContent()).toContain(part);
      expect(await page.textContent("main")).not.toContain(PROMPT);
    } finally {
      await gateway.stop();
      await chat.close();
      await (await BudgetStore.open(conn)).remove("agent.builder");
      await (await BudgetStore.open(conn)).remove("group.devs");
      await agents.delete("builder");
    }
  });

  it("a <script> in a handler's reason shows as text and never runs", async () => {
    const reason = `<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">`;
    await plane().tools.hook("PreToolUse", { name: "xss-guard", priority: 1 }, () => ({
      action: "block",
      reason,
    }));
    const { nc, names } = plane().env;
    await (await RunStore.open({ nc, names })).open("run-xss");
    const reply = await plane().callTool("echo", { text: "hi" }, { run_id: "run-xss", session_id: "s-xss" });
    expect(reply.status).toBe("blocked");
    await open("run/run-xss");
    await waitFor(
      async () => (await page.textContent("main"))?.includes("<script>window.__xss = 1</script>") ?? false,
      20_000,
    );
    expect(await page.locator("main script, main img").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
  });

  it("shows handlers with heartbeat age, webhook hosts and recorder lag; a dead one is removed after a confirmation", async () => {
    const { nc, names } = plane().env;
    const regs = await registerDeadGuard(plane().env, "dead-guard");
    const webhooks = await WebhookStore.open({ nc, names });
    await webhooks.add({
      hook: "SubagentStop",
      name: "audit-hook",
      url: "http://127.0.0.1:9/geode?token=never-shown",
      secret: `geode_whsec_${"x".repeat(40)}`,
      priority: 50,
      timeout_ms: 1000,
      schema_version: "geode.public-hook.v2",
      failure_mode: "open",
      lease_ms: 30_000,
      created_at: Date.now(),
    });
    await open("handlers");
    const dead = page.locator('tr[data-handler="PreToolUse.dead-guard"]');
    await dead.waitFor(WAIT);
    expect(await dead.textContent()).toContain("⚠");
    expect(await dead.textContent()).toContain("(lease expired)");
    const hook = page.locator('tr[data-handler="SubagentStop.audit-hook"]');
    await hook.waitFor(WAIT);
    expect(await hook.textContent()).toContain("webhook → 127.0.0.1:9");
    expect(await page.textContent("main")).not.toContain("never-shown");
    expect(await page.locator('tr[data-handler="PreToolUse.disk-guard"]').textContent()).toContain("open");
    expect(await page.locator('tr[data-handler="PreToolUse.disk-guard"] button').count()).toBe(0);
    expect(await page.textContent("main")).not.toContain("recorder not running");
    await dead.getByRole("button", { name: "remove dead-guard of PreToolUse" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor(WAIT);
    expect(await dialog.textContent()).toContain("fails closed");
    await shot("handlers", { fullPage: false });
    await dialog.getByRole("button", { name: "Cancel" }).click();
    expect((await regs.list("PreToolUse")).map((h) => h.name)).toContain("dead-guard");
    await dead.getByRole("button", { name: "remove dead-guard of PreToolUse" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
    await dead.waitFor({ state: "detached", ...WAIT });
    expect((await regs.list("PreToolUse")).map((h) => h.name)).not.toContain("dead-guard");
  });

  it("resolves an admitted receipt", async () => {
    const { nc, names } = plane().env;
    const receipts = await ReceiptStore.open({ nc, names });
    await receipts.admit(
      "s-mail.c-7",
      { tool_name: "mail.send", arguments_sha256: "x", correlation: {} },
      Date.now() - 1,
    );
    await open("receipts");
    const receipt = page.locator('tr[data-receipt="s-mail.c-7"]');
    await receipt.waitFor(WAIT);
    await receipt.locator("input").fill("mail never left the relay");
    await shot("receipts");
    await receipt.getByRole("button", { name: "Failed" }).click();
    await receipt.waitFor({ state: "detached", ...WAIT });
    expect((await receipts.get("s-mail.c-7"))?.receipt).toMatchObject({
      state: "failed",
      resolution: { by: "ana", reason: "mail never left the relay" },
    });
  });

  it("the demo's session: the overview lists it, its story shows the blocked tool, the approval and the verification", async () => {
    const { env } = plane();
    const ns = uniqueNamespace("demo");
    const result = await runDemo({
      natsUrl: env.natsUrl,
      databaseUrl: env.databaseUrl,
      namespace: ns,
      keep: true,
      env: { ...process.env, LOG_LEVEL: "warn", GEODE_METRICS_PORT: "0" },
    });
    const projection = await openProjectionDb({ ns, databaseUrl: env.databaseUrl, migrate: false });
    const demo = await startConsole({
      conn: { nc: env.nc, names: buildNames(ns) },
      token: CONSOLE_TOKEN,
      port: 0,
      projection: { db: projection.db, ns },
    });
    try {
      await signIn(demo.url);
      const row = page.locator(`tr[data-session="${result.session.sessionId}"]`);
      await row.waitFor(WAIT);
      for (const text of ["runtime", "completed", "1 blocked"])
        expect(await row.textContent()).toContain(text);
      await row.locator("a").click();
      await page.locator("table.story").waitFor(WAIT);
      const blocked = page.locator("table.story tr.bad-row").filter({ hasText: "blocked" });
      expect(await blocked.count()).toBe(1);
      expect(await blocked.textContent()).toContain("⊘");
      const story = (await page.textContent("table.story")) ?? "";
      for (const text of ["approved", "Verification", "revise", "accept", "Sub-agent"])
        expect(story).toContain(text);
      await shot("demo-story");
    } finally {
      await demo.close();
      await projection.close();
      await cleanupDemo(result);
      await cleanupNamespace(env.jsm, ns, env.databaseUrl);
    }
  }, 300_000);

  it("the latest checkpoint of each log, and a red banner on every view once a message is deleted from the stream", async () => {
    const { js, jsm, names } = plane().env;
    const keyDir = mkdtempSync(path.join(os.tmpdir(), "geode-console-audit-"));
    const keyFile = path.join(keyDir, "audit.key");
    writeAuditKeyFile(keyFile, "plane-notary");
    // Three events, the middle one deleted before any notary reads it.
    const seqs: number[] = [];
    for (let i = 0; i < 3; i++)
      seqs.push(
        (await js.publish(names.event("turn_completed"), JSON.stringify({ i }), { msgID: `audit-ui-${i}` }))
          .seq,
      );
    expect(await jsm.streams.deleteMessage(names.eventsStream, seqs[1]!)).toBe(true);
    // The demo's console signed in last (the cookie is per host, not per port).
    await signIn(plane().console.url);
    await open("handlers");
    await page.locator("main p:text('The notary is not answering.')").waitFor(WAIT);
    expect(await page.isVisible("#audit-banner")).toBe(false);
    const notary = spawnService("services/notary/src/main.ts", {
      ...plane().env.env,
      GEODE_AUDIT_KEY_FILE: keyFile,
      GEODE_AUDIT_CHECKPOINT_MS: "200",
      GEODE_METRICS_PORT: "0",
      LOG_LEVEL: "info",
    });
    try {
      await notary.waitForOutput(/notary started/);
      const banner = page.locator("#audit-banner");
      await banner.waitFor({ state: "visible", ...WAIT });
      expect(await banner.getAttribute("role")).toBe("alert");
      expect(await banner.textContent()).toContain(
        `Audit log events: 1 stream message is gone (deleted), latest sequences ${seqs[1]}..${seqs[1]}.`,
      );
      const row = page.locator('tr[data-audit-log="events"]');
      await waitFor(async () => (await row.textContent())?.includes("plane-notary") ?? false, 20_000);
      const text = (await row.textContent()) ?? "";
      expect(text).toContain(`geode/${names.ns}/events`);
      expect(text).toContain(`1 (latest ${seqs[1]}..${seqs[1]})`);
      expect(await row.getAttribute("class")).toBe("bad-row");
      expect(await page.textContent("main")).toContain("Notary active");
      await shot("audit");
      // The banner stays on every view: the record is not whole.
      await open("sessions");
      await page.locator("main h2:text('Sessions')").waitFor(WAIT);
      await banner.waitFor({ state: "visible", ...WAIT });
      expect(await banner.textContent()).toContain("gone (deleted)");
    } finally {
      await notary.stop("SIGTERM");
      rmSync(keyDir, { recursive: true, force: true });
    }
  });
});
