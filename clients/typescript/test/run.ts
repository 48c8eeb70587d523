/**
 * `npm test`: starts one live engine for the whole run (unless `$MEMORY_ENGINE_TEST_URL` and
 * `$MEMORY_ENGINE_TEST_KEY` name a running one), then `node --test` on every compiled test file with
 * the engine's URL and admin key in the environment, then stops the engine.
 */
import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { PACKAGE_DIR, startEngine, type RunningEngine } from "./engine.js";

const here = dirname(fileURLToPath(import.meta.url));
// `npm test -- build/test/live.test.js` runs the files named; `npm test` every test file
const named = process.argv.slice(2).filter((arg) => arg.endsWith(".js"));
const options = process.argv.slice(2).filter((arg) => !arg.endsWith(".js"));
const files = named.length ? named
  : readdirSync(here).filter((name) => name.endsWith(".test.js")).sort().map((name) => join(here, name));

let engine: RunningEngine | null = null;
const env = { ...process.env };
if (!env["MEMORY_ENGINE_TEST_URL"] || !env["MEMORY_ENGINE_TEST_KEY"]) {
  engine = await startEngine();
  env["MEMORY_ENGINE_TEST_URL"] = engine.baseUrl;
  env["MEMORY_ENGINE_TEST_KEY"] = engine.adminKey;
  console.log(`engine ready at ${engine.baseUrl}`);
}
let code = 1;
try {
  code = await new Promise<number>((ok) => {
    const child = spawn(process.execPath, ["--test", ...options, ...files],
      { env, cwd: PACKAGE_DIR, stdio: "inherit" });
    child.once("exit", (status) => ok(status ?? 1));
  });
} finally {
  await engine?.stop();
}
process.exit(code);
