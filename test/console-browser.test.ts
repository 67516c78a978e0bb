import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { RuntimeEventBus } from "@geode/bus";
import { WEB_DIST } from "@geode/console";
import { ReceiptStore, RunStore } from "@geode/state";
import { REPO_ROOT, useFixture, waitFor } from "@geode/testing";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONSOLE_TOKEN, startConsolePlane } from "./console-support.js";
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

afterAll(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  if (!SHOTS && shotsDir) rmSync(shotsDir, { recursive: true, force: true });
});

/** A screenshot of the page as it is (a PNG, not empty). */
async function shot(name: string): Promise<void> {
  const file = path.join(shotsDir, `${name}.png`);
  const png = await page.screenshot({ path: file, fullPage: true });
  expect(png.length).toBeGreaterThan(1000);
}

async function open(hash: string): Promise<void> {
  await page.goto(`${plane().console.url}/#${hash}`);
}

describe("the operator console in a browser", { timeout: 90_000 }, () => {
  it("asks for the token once, then shows the console; the token is in no URL and no cookie", async () => {
    const urls: string[] = [];
    page.on("request", (r) => urls.push(r.url()));
    await open("approvals");
    await page.waitForSelector("form.login", WAIT);
    await shot("login");
    await page.fill("input[name=token]", "not-the-token");
    await page.fill("input[name=operator]", "ana");
    await page.click("form.login button[type=submit]");
    await page.waitForSelector("#status.bad", WAIT);
    expect(await page.isVisible("#nav")).toBe(false);
    await page.fill("input[name=token]", CONSOLE_TOKEN);
    await page.click("form.login button[type=submit]");
    await page.waitForSelector("#nav:not([hidden])", WAIT);
    expect(await page.textContent("#who")).toBe("ana");
    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: "geode_console", httpOnly: true, sameSite: "Strict" });
    expect(cookies[0]!.value).not.toContain(CONSOLE_TOKEN);
    expect(urls.some((u) => u.includes(CONSOLE_TOKEN))).toBe(false);
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
    await open("sessions");
    const row = page.locator(`tr[data-session="${corr.session_id}"]`);
    await row.waitFor(WAIT);
    expect(await row.locator(".pending-text").textContent()).toBe(
      "Draft reply <script>window.__xss = 3</script>",
    );
    await shot("sessions");
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

  it("shows handlers with heartbeat age and error rate, recorder lag, and admitted receipts", async () => {
    await open("handlers");
    const row = page.locator('tr[data-handler="PreToolUse.xss-guard"]');
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain("open");
    expect(await page.textContent("main")).toContain("recorder not running");
    await shot("handlers");
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
});
