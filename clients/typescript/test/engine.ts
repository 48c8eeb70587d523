/**
 * A live local engine for the tests: `memory-engine dev` on a free port with a MEMORY_ENGINE_HOME of its
 * own (its embedded PostgreSQL, or `$MEMORY_ENGINE_TEST_DATABASE_URL` when the Python suite hands over a
 * fresh database), the admin key read from what it prints on its first start.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** clients/typescript (this file runs from build/test/). */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const REPO_ROOT = resolve(PACKAGE_DIR, "..", "..");
const STARTUP_MS = 240_000;

export interface RunningEngine {
  baseUrl: string;
  adminKey: string;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => ok(port));
    });
  });
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((ok) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      ok();
      return;
    }
    const kill = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("exit", () => {
      clearTimeout(kill);
      ok();
    });
    child.kill("SIGTERM");
  });
}

/** Starts `python -m memory_engine.cli dev` (`$MEMORY_ENGINE_PYTHON`, default the repository's .venv). */
export async function startEngine(): Promise<RunningEngine> {
  const python = process.env["MEMORY_ENGINE_PYTHON"] || join(REPO_ROOT, ".venv", "bin", "python");
  const home = mkdtempSync(join(tmpdir(), "me-ts-"));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, MEMORY_ENGINE_HOME: home };
  delete env["DATABASE_URL"];
  if (process.env["MEMORY_ENGINE_TEST_DATABASE_URL"]) {
    env["DATABASE_URL"] = process.env["MEMORY_ENGINE_TEST_DATABASE_URL"];
  }
  const child = spawn(python, ["-m", "memory_engine.cli", "dev", "--port", String(port), "--workers", "0"],
    { env, stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  child.stderr?.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const stop = async (): Promise<void> => {
    await stopProcess(child);
    rmSync(home, { recursive: true, force: true });
  };
  try {
    const { baseUrl, adminKey } = await new Promise<{ baseUrl: string; adminKey: string }>((ok, fail) => {
      let adminKey = "";
      const timer = setTimeout(() => fail(new Error(`the engine did not start within ${STARTUP_MS} ms`)), STARTUP_MS);
      const lines = createInterface({ input: child.stdout! });
      lines.on("line", (line) => {
        output.push(line);
        if (line.trim().startsWith("me_")) {
          adminKey = line.trim();
        }
        const ready = /ready at (http:\/\/\S+)/.exec(line);
        if (ready?.[1]) {
          clearTimeout(timer);
          lines.removeAllListeners("line");
          child.stdout?.resume();
          if (adminKey) {
            ok({ baseUrl: ready[1], adminKey });
          } else {
            fail(new Error("the engine printed no admin key (not a fresh home or database?)"));
          }
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        fail(new Error(`the engine exited with ${code}`));
      });
      child.once("error", fail);
    });
    return { baseUrl, adminKey, stop };
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n${output.join("\n").slice(-4000)}`);
  }
}
